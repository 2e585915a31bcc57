package app

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the imagectl version",
		Example: "  imagectl version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rev := ""
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						rev = " " + s.Value
					}
				}
			}
			_, err := fmt.Fprintf(g.stdout, "imagectl %s%s %s %s/%s\n", Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
