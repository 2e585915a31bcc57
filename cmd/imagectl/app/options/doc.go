// Package options holds what the verbs of imagectl share, in the manner of
// cosign's cmd/cosign/cli/options: the flag groups (registry, key, keyless
// identity, output, BuildKit, image, upstreams, definition, repository,
// extensions, smoke image), each a struct with AddFlags(*pflag.FlagSet) and
// Validate() error registered on a command with Add; the Globals every
// verb's New takes (--matrix, --catalog, --verbose, stdout and stderr, the
// matrix and catalog they name); the one constructor of the gallery clients
// (UpstreamOptions.ExtensionSources); and the plumbing of the command line:
// exit codes and ExitError, usage errors (exit 2), BindEnv (the one
// environment fallback of a flag) and PrepareFlags, MarkRequired, the
// warnings writer, AddCommandTimeout, and the version set at link time.
//
// The plumbing among these, which links nothing but cobra and the standard
// library (exit codes, usage errors, Options and Add, -o/--output, the
// streams and --verbose, AddCommandTimeout, the version), is package
// options/base, re-exported here; Globals embeds its Streams. A command
// that must link little (smoke attach, for imagectl-probe) takes base's
// Streams instead of the Globals.
package options
