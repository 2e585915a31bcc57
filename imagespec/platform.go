package imagespec

import (
	"fmt"
	"strings"
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
	// linux/arm64 with its default variant spelled out, as some indexes
	// write it.
	{"linux/arm64/v8", "linux-arm64", false},
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
// (linux/amd64 -> linux-x64), or an *UnknownPlatformError naming it.
func VSCodeTarget(ociPlatform string) (string, error) {
	for _, p := range platforms {
		if p.oci == ociPlatform {
			return p.vscode, nil
		}
	}
	return "", &UnknownPlatformError{Platform: ociPlatform}
}
