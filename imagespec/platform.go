package imagespec

import (
	"fmt"
	"strings"

	cplatforms "github.com/containerd/platforms"
	specs "github.com/opencontainers/image-spec/specs-go/v1"
)

// VSCodeUniversal is the VS Code target platform of a VSIX that installs on
// every platform.
const VSCodeUniversal = "universal"

// platforms is the one map from OCI platform to VS Code target platform (the
// targetPlatform of a platform-specific VSIX). built marks the platforms
// imagectl builds images for; the others are known so that an image of such
// a platform can still be checked (verify) and laid out (extensions).
var platforms = []struct {
	oci, vscode string
	built       bool
}{
	{"linux/amd64", "linux-x64", true},
	{"linux/arm64", "linux-arm64", true},
	{"linux/arm/v7", "linux-armhf", false},
}

// Platforms returns the OCI platforms imagectl builds images for, in order.
func Platforms() []string {
	var out []string
	for _, p := range platforms {
		if p.built {
			out = append(out, p.oci)
		}
	}
	return out
}

// UnknownPlatformError is returned for an OCI platform with no VS Code
// target platform.
type UnknownPlatformError struct {
	Platform string
}

func (e *UnknownPlatformError) Error() string {
	return fmt.Sprintf("platform %q: no VS Code target platform known (want %s)", e.Platform, strings.Join(Platforms(), " or "))
}

// VSCodeTarget returns the VS Code target platform of an OCI platform
// (linux/amd64 -> linux-x64; linux/arm64/v8 is linux/arm64), or an
// *UnknownPlatformError naming it.
func VSCodeTarget(ociPlatform string) (string, error) {
	for _, p := range platforms {
		if SamePlatform(p.oci, ociPlatform) {
			return p.vscode, nil
		}
	}
	return "", &UnknownPlatformError{Platform: ociPlatform}
}

// PlatformName is the one spelling of an OCI platform imagectl reports and
// compares: os/architecture[/variant], normalised by containerd's platforms
// package, so a default variant is dropped (linux/arm64/v8 is linux/arm64).
func PlatformName(os, architecture, variant string) string {
	return cplatforms.Format(cplatforms.Normalize(specs.Platform{OS: os, Architecture: architecture, Variant: variant}))
}

// SamePlatform reports whether two OCI platform names name one platform
// (linux/arm64 and linux/arm64/v8 do). A name containerd cannot parse is
// only the same as itself.
func SamePlatform(a, b string) bool {
	if a == b {
		return true
	}
	pa, err1 := cplatforms.Parse(a)
	pb, err2 := cplatforms.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return cplatforms.Format(cplatforms.Normalize(pa)) == cplatforms.Format(cplatforms.Normalize(pb))
}
