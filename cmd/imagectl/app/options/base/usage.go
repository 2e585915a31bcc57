package base

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/internal/docsurl"
)

// EnforceUsage makes every command of the tree under root exit 2 on a usage
// error: an unknown flag or bad flag value (pflag), a wrong number of
// arguments (the command's Args), an unknown subcommand. It also turns
// commands that only group subcommands into ones that print their help
// and refuse arguments. Call it once the tree is complete (help command
// included).
func EnforceUsage(root *cobra.Command) {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// "imagectl buidl --ray 2.46.0": the flag is not the mistake.
		if c.HasSubCommands() && len(c.Flags().Args()) > 0 {
			if uerr := unknownSubcommand(c, c.Flags().Args()); uerr != nil {
				return UsageError(uerr)
			}
		}
		return UsageError(renamedFlag(c, err))
	})
	WalkCommands(root, func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = 2
		if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.Args = unknownSubcommand
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
		if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error {
				err := args(c, a)
				if err != nil && !c.HasSubCommands() && strings.HasPrefix(err.Error(), "unknown command ") {
					// cobra.NoArgs calls an argument of a verb an unknown
					// command.
					err = noArgs(c, a)
				}
				return UsageError(err)
			}
		}
	})
}

// renamedFlags are the old spellings of docs/cli.md's "Renamed and removed
// flags" (a test holds the two together), with what replaced them.
var renamedFlags = map[string]string{
	"repo":              "is now --repository",
	"registry-override": "is now --repository",
	"insecure-registry": "is now --insecure",
	"password-file":     "is now --key-password-file",
	"sbom-from-labels":  "is now --sbom-from-lock",
	"max-time":          "is now --timeout",
	"create-secret":     "is removed: --secret-file FILE writes the Secret",
}

// renamedFlag adds to pflag's "unknown flag: --NAME" what NAME became,
// when it is an old spelling.
func renamedFlag(c *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var hint string
	switch {
	case c.Name() == "smoke" && c.Parent() == c.Root() && name == "image":
		hint = "imagectl smoke --image is now imagectl smoke kind --image"
	case renamedFlags[name] != "":
		hint = "--" + name + " " + renamedFlags[name]
	default:
		return err
	}
	return fmt.Errorf("%w: %s (%s)", err, hint, docsurl.CLIRenamedFlags)
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

// noArgs is the refusal of arguments by a verb that takes none.
func noArgs(c *cobra.Command, args []string) error {
	msg := fmt.Sprintf("%s takes no arguments, got %q", c.CommandPath(), strings.Join(args, " "))
	if c.Flags().Lookup("filename") != nil {
		msg += " (the manifest goes after -f, one per run)"
	}
	return errors.New(msg)
}

// WalkCommands calls fn on c and every command below it.
func WalkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, s := range c.Commands() {
		WalkCommands(s, fn)
	}
}
