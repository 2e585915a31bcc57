package base

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is set at link time, for imagectl and imagectl-probe alike:
// -ldflags "-X github.com/imagectl/imagectl/cmd/imagectl/app/options/base.Version=v0.1.0".
var Version = "dev"

// VersionInfo is what imagectl version prints.
type VersionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// CurrentVersion is the version set at link time (Version), else the
// module version go install recorded, and the VCS revision go build
// recorded.
func CurrentVersion() VersionInfo {
	v := VersionInfo{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
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

// Line is imagectl version's text and imagectl --version.
func (v VersionInfo) Line() string { return v.LineOf("imagectl") }

// LineOf is Line for the binary named program (imagectl-probe --version).
func (v VersionInfo) LineOf(program string) string {
	rev := ""
	if v.Revision != "" {
		rev = " " + v.Revision
	}
	return fmt.Sprintf("%s %s%s %s %s", program, v.Version, rev, v.Go, v.Platform)
}
