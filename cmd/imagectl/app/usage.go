package app

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes of every verb (smoke attach adds its own, 3 to 7); docs/cli.md
// has the table.
const (
	exitFailure = 1 // the verb ran and failed
	exitUsage   = 2 // the command line is wrong: nothing was done
	// ExitInterrupted is the exit code of a run ended by SIGINT or SIGTERM
	// (128 + SIGINT, as a shell reports it).
	ExitInterrupted = 130
)

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as a usage error (exit 2); nil stays nil and an
// error that already carries an exit code keeps it.
func usageError(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{exitUsage, err}
}

// usagef is a usage error built like fmt.Errorf.
func usagef(format string, a ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, a...)}
}

// options is a group of flags that several verbs share, in the manner of
// cosign's cmd/cosign/cli/options: a verb embeds the struct instead of
// declaring the flags again, so every verb spells and documents them alike.
type options interface {
	// AddFlags registers the group's flags on cmd.
	AddFlags(cmd *cobra.Command)
	// Validate checks the values and combinations within the group; it runs
	// after the flags (and their environment fallbacks) are set and before
	// the verb does anything. Its error is a usage error.
	Validate() error
}

// check is a group with no flags of its own: a verb's check of the
// combinations across its groups, run with their Validate.
type check func() error

func (check) AddFlags(*cobra.Command) {}
func (c check) Validate() error       { return c() }

// addOptions registers each group's flags on cmd and validates them (exit
// 2 on error) before cmd runs.
func addOptions(cmd *cobra.Command, opts ...options) {
	for _, o := range opts {
		o.AddFlags(cmd)
	}
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		for _, o := range opts {
			if err := o.Validate(); err != nil {
				return usageError(err)
			}
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

// Flag annotations read by prepareFlags.
const (
	annotationEnv      = "imagectl/env"      // environment variables, first the documented one
	annotationRequired = "imagectl/required" // the flag must be given
)

// bindEnv is the one environment fallback of the CLI: flag name of cmd
// takes the value of the environment variable env when the flag is not
// given and env is set and not empty. The value is parsed as the flag
// would parse it.
func bindEnv(cmd *cobra.Command, name, env string) {
	f := cmd.Flags().Lookup(name)
	if f == nil {
		panic(fmt.Sprintf("bindEnv: %s has no flag --%s", cmd.CommandPath(), name))
	}
	f.Usage += " (env " + env + ")"
	_ = cmd.Flags().SetAnnotation(name, annotationEnv, []string{env})
}

// markRequired marks flags of cmd as required: missing, the verb exits 2
// before doing anything.
func markRequired(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		f := cmd.Flags().Lookup(n)
		if f == nil {
			panic(fmt.Sprintf("markRequired: %s has no flag --%s", cmd.CommandPath(), n))
		}
		if !strings.Contains(f.Usage, "(required)") {
			f.Usage += " (required)"
		}
		_ = cmd.Flags().SetAnnotation(n, annotationRequired, []string{"true"})
	}
}

// prepareFlags runs once the flags of cmd are parsed, before any check of
// the verb: it applies the environment fallbacks of flags not given, and
// refuses missing required flags.
func prepareFlags(cmd *cobra.Command) error {
	fl := cmd.Flags()
	given := map[string]bool{}
	fl.Visit(func(f *pflag.Flag) { given[f.Name] = true })
	var errs []error
	var missing []string
	fl.VisitAll(func(f *pflag.Flag) {
		if given[f.Name] {
			return
		}
		for _, env := range f.Annotations[annotationEnv] {
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
		if !given[f.Name] && len(f.Annotations[annotationRequired]) > 0 {
			missing = append(missing, f.Name)
		}
	})
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("required flag(s) %q not set", strings.Join(missing, `", "`)))
	}
	return usageError(errors.Join(errs...))
}

// enforceUsage makes every command of the tree under root exit 2 on a usage
// error: an unknown flag or bad flag value (pflag), a wrong number of
// arguments (the command's Args), an unknown subcommand. It also turns
// commands that only group subcommands into ones that print their help
// and refuse arguments.
func enforceUsage(root *cobra.Command) {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// "imagectl buidl --ray 2.46.0": the flag is not the mistake.
		if c.HasSubCommands() && len(c.Flags().Args()) > 0 {
			if uerr := unknownSubcommand(c, c.Flags().Args()); uerr != nil {
				return usageError(uerr)
			}
		}
		return usageError(err)
	})
	walkCommands(root, func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = 2
		if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.Args = unknownSubcommand
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
		if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error { return usageError(args(c, a)) }
		}
	})
}

// unknownSubcommand refuses any argument of a command that only groups
// subcommands, suggesting the nearest ones.
func unknownSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return errors.New(msg)
}

// walkCommands calls fn on c and every command below it.
func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, s := range c.Commands() {
		walkCommands(s, fn)
	}
}

// environmentHelp lists the environment variables the flags of the tree
// fall back to, for the root command's help.
func environmentHelp(root *cobra.Command) string {
	uses := map[string]map[string]map[string]bool{} // env -> "--flag" -> verbs
	walkCommands(root, func(c *cobra.Command) {
		verb := strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), root.Name()), " ")
		visit := func(f *pflag.Flag) {
			envs := f.Annotations[annotationEnv]
			if len(envs) == 0 {
				return
			}
			if uses[envs[0]] == nil {
				uses[envs[0]] = map[string]map[string]bool{}
			}
			flag := "--" + f.Name
			if uses[envs[0]][flag] == nil {
				uses[envs[0]][flag] = map[string]bool{}
			}
			if verb != "" {
				uses[envs[0]][flag][verb] = true
			}
		}
		c.Flags().VisitAll(visit)
		c.PersistentFlags().VisitAll(visit)
	})
	var b strings.Builder
	b.WriteString("Environment: each variable stands in for its flag when the flag is not given.\n")
	for _, env := range slices.Sorted(maps.Keys(uses)) {
		var flags []string
		for _, flag := range slices.Sorted(maps.Keys(uses[env])) {
			if verbs := slices.Sorted(maps.Keys(uses[env][flag])); len(verbs) > 0 {
				flag += " (" + strings.Join(verbs, ", ") + ")"
			}
			flags = append(flags, flag)
		}
		fmt.Fprintf(&b, "  %-30s %s\n", env, strings.Join(flags, "; "))
	}
	b.WriteString(`Read by the libraries, with no flag: COSIGN_PASSWORD (key password),
SOURCE_DATE_EPOCH (image timestamps), GITHUB_TOKEN (GitHub API),
DOCKER_CONFIG (registry credentials), IMAGECTL_CACHE_DIR (--cache-dir).`)
	return b.String()
}
