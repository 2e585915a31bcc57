// Package base is the part of the command line's plumbing that links
// nothing but cobra, pflag, the standard library and the ground helpers of
// internal/: exit codes and ExitError, usage errors and the rules that make
// every command exit 2 on one (EnforceUsage), the flag group interface and
// Add, -o/--output, the streams and --verbose every command shares
// (Streams: stdout, stderr, the logger, the warnings writer), the command
// time limit (AddCommandTimeout), the link-time Version, and Execute, which
// runs a command tree and turns its error into the exit code.
//
// Package options re-exports all of it for the verbs of imagectl; a binary
// that must stay small imports base instead of options (which links
// BuildKit, cosign, syft and the registries through its flag groups):
// imagectl-probe, the smoke attach probe copied into the code-server
// sidecar, links base, cmd/imagectl/app/smoke/attach and smoke/probe only.
package base
