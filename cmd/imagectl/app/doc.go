// Package app is the imagectl command line: Run (what main calls) builds
// the root command, runs it and turns its error into the exit code; errors
// are printed once, by Run. The verbs turn flags into calls of the library
// packages (matrix, resolve, extensions, build, sign, verify, smoke,
// release, inject) and nothing else.
//
// Layout, as cosign's cmd/cosign/cli/{options,<verb>} and kind's
// pkg/cmd/kind/<verb>:
//
//	app/            Run, the root command (root.go) and the rules every verb
//	                follows (usage.go: usage errors exit 2, unknown
//	                subcommands, the environment section of the help)
//	app/options/    what the verbs share: the flag groups (each a struct
//	                with AddFlags(*pflag.FlagSet) and Validate, registered
//	                with options.Add), the Globals (--matrix, --catalog,
//	                --verbose, stdout, stderr), the one constructor of the
//	                gallery clients, exit codes and ExitError, BindEnv (the one
//	                environment fallback of a flag), warnings, deadlines and
//	                the link-time Version; the part of it that links
//	                nothing heavy is app/options/base (re-exported by
//	                options), which imagectl-probe links instead
//	app/<verb>/     one package per verb group: version, matrix, extensions,
//	                build, sign, verify, smoke, release (plan and release),
//	                inject
//
// Verb packages import options (or options/base), their own subpackages
// and the libraries, never each other (smoke/attach, the command of smoke
// attach, is smoke's, and imagectl-probe's). Adding a verb: create
// app/<verb> with
//
//	func New(g *options.Globals) *cobra.Command
//
// (flags from option groups where one fits, options.Add to register and
// validate them, options.ExitError for a specific exit code) and add one
// line, <verb>.New(g), to the AddCommand list in root.go. Every flag has one
// name and one meaning across verbs (flagnames_test.go holds the table);
// usage_test.go checks that every verb exits 2 on usage errors.
package app
