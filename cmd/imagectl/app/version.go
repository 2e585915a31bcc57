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

// currentVersion is the version set at link time (Version), else the
// module version go install recorded, and the VCS revision go build
// recorded.
func currentVersion() versionInfo {
	v := versionInfo{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Revision = s.Value
			}
		}
	}
	return v
}

// line is imagectl version's text and imagectl --version.
func (v versionInfo) line() string {
	rev := ""
	if v.Revision != "" {
		rev = " " + v.Revision
	}
	return fmt.Sprintf("imagectl %s%s %s %s", v.Version, rev, v.Go, v.Platform)
}

func newVersionCommand(g *globals) *cobra.Command {
	out := newOutputOptions("text", "json")
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the imagectl version",
		Example: "  imagectl version\n  imagectl version -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			if out.JSON() {
				return writeJSON(g.stdout, v)
			}
			_, err := fmt.Fprintln(g.stdout, v.line())
			return err
		},
	}
	addOptions(cmd, &out)
	return cmd
}
