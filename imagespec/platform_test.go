package imagespec

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVSCodeTarget(t *testing.T) {
	for _, tc := range []struct{ oci, want string }{
		{"linux/amd64", "linux-x64"},
		{"linux/arm64", "linux-arm64"},
		{"linux/arm64/v8", "linux-arm64"},
		{"linux/arm/v7", "linux-armhf"},
	} {
		got, err := VSCodeTarget(tc.oci)
		if err != nil || got != tc.want {
			t.Errorf("VSCodeTarget(%q) = %q, %v; want %q", tc.oci, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "linux/s390x", "windows/amd64", "linux-x64", "linux/amd64/v2"} {
		got, err := VSCodeTarget(bad)
		var unknown *UnknownPlatformError
		if err == nil || !errors.As(err, &unknown) || unknown.Platform != bad {
			t.Errorf("VSCodeTarget(%q) = %q, %v; want an *UnknownPlatformError naming it", bad, got, err)
			continue
		}
		if !strings.Contains(err.Error(), `"`+bad+`"`) || !strings.Contains(err.Error(), "linux/amd64 or linux/arm64") {
			t.Errorf("VSCodeTarget(%q) error %q does not name the platform and the known ones", bad, err)
		}
	}
}

func TestPlatforms(t *testing.T) {
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, Platforms()); diff != "" {
		t.Errorf("Platforms (-want +got):\n%s", diff)
	}
	// Every platform imagectl builds has a VS Code target.
	for _, p := range Platforms() {
		if _, err := VSCodeTarget(p); err != nil {
			t.Errorf("built platform %s: %v", p, err)
		}
	}
	// Callers may not change the table through the result.
	Platforms()[0] = "linux/s390x"
	if Platforms()[0] != "linux/amd64" {
		t.Error("Platforms shares its slice with the caller")
	}
}

func TestPlatformName(t *testing.T) {
	for _, tc := range []struct{ os, arch, variant, want string }{
		{"linux", "amd64", "", "linux/amd64"},
		{"linux", "arm64", "", "linux/arm64"},
		{"linux", "arm64", "v8", "linux/arm64"},
		{"linux", "arm", "v7", "linux/arm/v7"},
	} {
		if got := PlatformName(tc.os, tc.arch, tc.variant); got != tc.want {
			t.Errorf("PlatformName(%q, %q, %q) = %q, want %q", tc.os, tc.arch, tc.variant, got, tc.want)
		}
	}
}

func TestSamePlatform(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"linux/arm64", "linux/arm64/v8", true},
		{"linux/arm64/v8", "linux/arm64", true},
		{"linux/amd64", "linux/amd64", true},
		{"linux/amd64", "linux/arm64", false},
		{"linux/arm/v7", "linux/arm/v6", false},
		{"not a platform!", "not a platform!", true},
	} {
		if got := SamePlatform(tc.a, tc.b); got != tc.want {
			t.Errorf("SamePlatform(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
