package app

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what imagectl version prints.
type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func newVersionCommand(g *globals) *cobra.Command {
	out := newOutputOptions("text", "json")
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the imagectl version",
		Example: "  imagectl version\n  imagectl version -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionInfo{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						v.Revision = s.Value
					}
				}
			}
			if out.JSON() {
				return writeJSON(g.stdout, v)
			}
			rev := ""
			if v.Revision != "" {
				rev = " " + v.Revision
			}
			_, err := fmt.Fprintf(g.stdout, "imagectl %s%s %s %s\n", v.Version, rev, v.Go, v.Platform)
			return err
		},
	}
	addOptions(cmd, &out)
	return cmd
}
