// Package app is the imagectl command line: cobra commands that turn flags into
// calls of the library packages (matrix, resolve, extensions, build, sign,
// verify, smoke, release) and nothing else. Run is the only entry point; errors
// are printed once, by Run.
//
// Flags that several verbs share are option groups (options.go: registry,
// key, keyless identity, output, BuildKit, image, upstreams, definition),
// each with AddFlags and Validate, registered with addOptions. usage.go holds
// the rules every verb follows: usage errors (unknown flag, bad value, wrong
// arguments, missing required flag, invalid combination) exit 2 and failures
// exit 1, an interrupted run exits 130; bindEnv is the one environment
// fallback of a flag. Every flag has one name and one meaning across verbs
// (flagnames_test.go holds the table).
package app
