package version

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
)

// New returns imagectl version.
func New(g *options.Globals) *cobra.Command {
	out := options.NewOutputOptions("text", "json")
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the imagectl version",
		Example: "  imagectl version\n  imagectl version -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := options.CurrentVersion()
			if out.JSON() {
				return options.WriteJSON(g.Stdout, v)
			}
			_, err := fmt.Fprintln(g.Stdout, v.Line())
			return err
		},
	}
	options.Add(cmd, &out)
	return cmd
}
