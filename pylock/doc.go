// Package pylock is the locked Python closure of a set: the complete
// closure of Python distributions that pip's own resolver chose for one
// set's top-level requirements (ray[<extras>]==Ray, debugpy==Debugpy) for
// one CPython minor version on one OCI platform, each pinned to one wheel
// by sha256. Each fact about that lock has one home here:
//
//   - the lock and what it locks (Lock, Key and Key.Requirements, Keys of
//     resolved sets), why a closure could not be locked (Blocked,
//     BlockedError), and the request a Locker resolves (Request; the locker
//     that runs pip is upstream/pip);
//   - the order of a closure (SortClosure: by PEP 503 normalized name);
//   - how two sets' closures differ (Diff, for release's plan) and how one
//     set's closure differs by platform (Summary, for resolve's
//     explanation);
//   - pip's hash-mismatch report (HashMismatches) and the one-line error a
//     build makes of it (HashMismatchError).
//
// A locked wheel is imagespec.PythonDist, the type the image's lock label
// carries, so the closure the catalog records is the closure the build
// installs without conversion. The catalog records the locks
// (catalog.Catalog.PythonLocks, validated with the rest of catalog.json, and
// catalog.LockPython fills them); resolve copies them into the set.
//
// It imports imagespec and the standard library only, so every package that
// reads or writes a lock may import it.
package pylock
