package options

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
)

// Exit codes of every verb (smoke attach adds its own, 3 to 7); docs/cli.md
// has the table. They, ExitError, the usage errors and Options, Check and
// Add are package base's, which links nothing heavy (imagectl-probe uses it).
const (
	ExitFailure = base.ExitFailure // the verb ran and failed
	ExitUsage   = base.ExitUsage   // the command line is wrong: nothing was done
	// ExitInterrupted is the exit code of a run ended by SIGINT or SIGTERM
	// (128 + SIGINT, as a shell reports it).
	ExitInterrupted = base.ExitInterrupted
)

// ExitError carries a specific exit code.
type ExitError = base.ExitError

// UsageError marks err as a usage error (exit 2); nil stays nil and an
// error that already carries an exit code keeps it.
func UsageError(err error) error { return base.UsageError(err) }

// Usagef is a usage error built like fmt.Errorf.
func Usagef(format string, a ...any) error { return base.Usagef(format, a...) }

// Options is a group of flags that several verbs share, in the manner of
// cosign's cmd/cosign/cli/options: a verb embeds the struct instead of
// declaring the flags again, so every verb spells and documents them alike.
type Options = base.Options

// Check is a group with no flags of its own: a verb's check of the
// combinations across its groups, run with their Validate.
type Check = base.Check

// Add registers each group's flags on cmd and validates them (exit 2 on
// error) before cmd runs.
func Add(cmd *cobra.Command, opts ...Options) { base.Add(cmd, opts...) }

// Flag annotations read by PrepareFlags.
const (
	AnnotationEnv      = base.AnnotationEnv      // environment variables, first the documented one
	AnnotationRequired = base.AnnotationRequired // the flag must be given
)

// BindEnv is the one environment fallback of the CLI: flag name of fs
// takes the value of the environment variable env when the flag is not
// given and env is set and not empty. The value is parsed as the flag
// would parse it.
func BindEnv(fs *pflag.FlagSet, name, env string) { base.BindEnv(fs, name, env) }

// MarkRequired marks flags of cmd as required: missing, the verb exits 2
// before doing anything.
func MarkRequired(cmd *cobra.Command, names ...string) { base.MarkRequired(cmd, names...) }

// PrepareFlags runs once the flags of cmd are parsed, before any check of
// the verb: it refuses --matrix and --catalog on a verb that does not read
// them (ReadsFiles), applies the environment fallbacks of flags not given, and
// refuses missing required flags (base.PrepareFlags).
func PrepareFlags(cmd *cobra.Command) error {
	if err := checkFileFlags(cmd); err != nil {
		return err
	}
	return base.PrepareFlags(cmd)
}
