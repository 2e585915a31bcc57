// Package pip locks the complete closure of Python requirements with pip's
// own resolver, never a hand-written one: for one target platform and
// CPython version it runs, on the build platform,
//
//	python3 -m pip --isolated install --dry-run --report FILE --ignore-installed
//	    --target TMP --only-binary=:all: --implementation cp
//	    --python-version 3.12 --platform manylinux_2_39_aarch64 ... --platform manylinux_2_17_aarch64
//	    --platform manylinux2014_aarch64 --index-url INDEX  'ray[default]==2.46.0' 'debugpy==1.8.14'
//
// with the platform tags the build uses (imagespec.ManylinuxTags, every
// manylinux tag of the base's glibc: pip matches --platform literally), and
// reads name, version, wheel URL and sha256 of every
// distribution from the installation report (pip >= 22.2). --target is what
// pip 23.0 (Debian bookworm's python3-pip) needs before it accepts platform
// flags; with --dry-run nothing is written there, and no environment is
// touched (so an externally managed Python is fine).
//
// A closure with no installable wheel on the platform ("No matching
// distribution found for X") is a pylock.BlockedError naming X; network
// failures are plain errors. What a lock is (pylock.Lock, pylock.Request)
// is package pylock's.
//
// Limitation (pip issue 11198): pip evaluates environment markers
// (python_version, platform_machine) of dependencies against the interpreter
// it runs on, not against --python-version/--platform. Run refresh with a
// python3 whose minor version is the target's when a dependency has such
// markers.
package pip
