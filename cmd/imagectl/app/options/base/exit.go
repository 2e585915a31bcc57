package base

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes of every verb (smoke attach adds its own, 3 to 7); docs/cli.md
// has the table.
const (
	ExitFailure = 1 // the verb ran and failed
	ExitUsage   = 2 // the command line is wrong: nothing was done
	// ExitInterrupted is the exit code of a run ended by SIGINT or SIGTERM
	// (128 + SIGINT, as a shell reports it).
	ExitInterrupted = 130
)

// ExitError carries a specific exit code.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// UsageError marks err as a usage error (exit 2); nil stays nil and an
// error that already carries an exit code keeps it.
func UsageError(err error) error {
	if err == nil {
		return nil
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	return &ExitError{ExitUsage, err}
}

// Usagef is a usage error built like fmt.Errorf.
func Usagef(format string, a ...any) error {
	return &ExitError{ExitUsage, fmt.Errorf(format, a...)}
}

// Options is a group of flags that several verbs share, in the manner of
// cosign's cmd/cosign/cli/options: a verb embeds the struct instead of
// declaring the flags again, so every verb spells and documents them alike.
type Options interface {
	// AddFlags registers the group's flags.
	AddFlags(fs *pflag.FlagSet)
	// Validate checks the values and combinations within the group; it runs
	// after the flags (and their environment fallbacks) are set and before
	// the verb does anything. Its error is a usage error.
	Validate() error
}

// Check is a group with no flags of its own: a verb's check of the
// combinations across its groups, run with their Validate.
type Check func() error

func (Check) AddFlags(*pflag.FlagSet) {}
func (c Check) Validate() error       { return c() }

// Add registers each group's flags on cmd and validates them (exit 2 on
// error) before cmd runs.
func Add(cmd *cobra.Command, opts ...Options) {
	for _, o := range opts {
		o.AddFlags(cmd.Flags())
	}
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		for _, o := range opts {
			if err := o.Validate(); err != nil {
				return UsageError(err)
			}
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

// Flag annotations read by PrepareFlags.
const (
	AnnotationEnv      = "imagectl/env"      // environment variables, first the documented one
	AnnotationRequired = "imagectl/required" // the flag must be given
)

// BindEnv is the one environment fallback of the CLI: flag name of fs
// takes the value of the environment variable env when the flag is not
// given and env is set and not empty. The value is parsed as the flag
// would parse it.
func BindEnv(fs *pflag.FlagSet, name, env string) {
	f := fs.Lookup(name)
	if f == nil {
		panic(fmt.Sprintf("BindEnv: %s has no flag --%s", fs.Name(), name))
	}
	f.Usage += " (env " + env + ")"
	_ = fs.SetAnnotation(name, AnnotationEnv, []string{env})
}

// MarkRequired marks flags of cmd as required: missing, the verb exits 2
// before doing anything.
func MarkRequired(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		f := cmd.Flags().Lookup(n)
		if f == nil {
			panic(fmt.Sprintf("MarkRequired: %s has no flag --%s", cmd.CommandPath(), n))
		}
		if !strings.Contains(f.Usage, "(required)") {
			f.Usage += " (required)"
		}
		_ = cmd.Flags().SetAnnotation(n, AnnotationRequired, []string{"true"})
	}
}

// PrepareFlags runs once the flags of cmd are parsed, before any check of
// the verb: it applies the environment fallbacks of flags not given
// (BindEnv) and refuses missing required flags (MarkRequired).
func PrepareFlags(cmd *cobra.Command) error {
	fl := cmd.Flags()
	given := map[string]bool{}
	fl.Visit(func(f *pflag.Flag) { given[f.Name] = true })
	var errs []error
	var missing []string
	fl.VisitAll(func(f *pflag.Flag) {
		if given[f.Name] {
			return
		}
		for _, env := range f.Annotations[AnnotationEnv] {
			v := os.Getenv(env)
			if v == "" {
				continue
			}
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q (for --%s): %w", env, v, f.Name, err))
			}
			given[f.Name] = true
			break
		}
		if !given[f.Name] && len(f.Annotations[AnnotationRequired]) > 0 {
			missing = append(missing, f.Name)
		}
	})
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("required flag(s) %q not set", strings.Join(missing, `", "`)))
	}
	return UsageError(errors.Join(errs...))
}
