// Package app is the imagectl command line: cobra commands that turn flags into
// calls of the library packages (matrix, resolve, extensions, build, sign,
// verify, smoke, release) and nothing else. Run is the only entry point; errors
// are printed once, by Run.
package app
