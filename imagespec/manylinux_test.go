package imagespec

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/internal/testutil"
)

func TestManylinuxTags(t *testing.T) {
	span := func(arch string, from, to int) []string {
		var out []string
		for m := from; m >= to; m-- {
			out = append(out, fmt.Sprintf("manylinux_2_%d_%s", m, arch))
		}
		return out
	}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		platform string
		want     []string
	}{
		{"linux/amd64", cat(span("x86_64", 39, 17), []string{"manylinux2014_x86_64"},
			span("x86_64", 16, 12), []string{"manylinux2010_x86_64"},
			span("x86_64", 11, 5), []string{"manylinux1_x86_64"})},
		{"linux/arm64", cat(span("aarch64", 39, 17), []string{"manylinux2014_aarch64"})},
	}
	for _, tc := range tests {
		got, err := ManylinuxTags(tc.platform)
		if err != nil {
			t.Fatalf("ManylinuxTags(%s): %v", tc.platform, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ManylinuxTags(%s) (-want +got):\n%s", tc.platform, diff)
		}
	}
	for platform, want := range map[string]string{"linux/amd64": "x86_64", "linux/arm64": "aarch64", "linux/arm/v7": ""} {
		if got, ok := WheelArch(platform); got != want || ok != (want != "") {
			t.Errorf("WheelArch(%s) = %q, %v; want %q", platform, got, ok, want)
		}
	}
	for _, bad := range []string{"linux/arm/v7", "linux/s390x", ""} {
		if _, err := ManylinuxTags(bad); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) {
			t.Errorf("ManylinuxTags(%q) error = %v, want one naming the platform", bad, err)
		}
	}
}

// packagingTags prints what pip's own copy of pypa/packaging yields as the
// manylinux platform tags of a glibc 2.<minor> system of each architecture
// (its _manylinux.platform_tags, with the glibc version it would read
// from the running system replaced): the list pip uses without --platform.
const packagingTags = `
import json, sys
from pip._vendor.packaging import _manylinux as m
minor = int(sys.argv[1])
m._get_glibc_version = lambda: m._GLibCVersion(2, minor)
m._have_compatible_abi = lambda *a: True
out = {}
for arch in sys.argv[2:]:
    try:
        tags = list(m.platform_tags([arch]))  # packaging >= 24
    except TypeError:
        tags = list(m.platform_tags("linux_" + arch, arch))  # packaging 21-23
    out[arch] = tags
print(json.dumps(out))
`

// TestManylinuxTagsArePackagings checks ManylinuxTags against pypa/packaging
// (pip's vendored copy) on the base's glibc: the tags pip would accept
// if it ran on the base image itself.
func TestManylinuxTagsArePackagings(t *testing.T) {
	out, err := exec.Command("python3", "-c", packagingTags, fmt.Sprint(BaseGlibcMinor), "x86_64", "aarch64").Output()
	if err != nil {
		msg := fmt.Sprintf("python3 with pip (pip._vendor.packaging) is needed to compare with pypa/packaging: %v", err)
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + string(ee.Stderr)
		}
		testutil.SkipOrFail(t, "%s", msg)
	}
	var want map[string][]string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("packaging's tags %q: %v", out, err)
	}
	for platform, arch := range map[string]string{"linux/amd64": "x86_64", "linux/arm64": "aarch64"} {
		got, err := ManylinuxTags(platform)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[arch], got); diff != "" {
			t.Errorf("ManylinuxTags(%s) is not packaging's list on glibc 2.%d (-packaging +got):\n%s", platform, BaseGlibcMinor, diff)
		}
	}
}
