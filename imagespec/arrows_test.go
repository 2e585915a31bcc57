package imagespec_test

import (
	"strings"
	"testing"
)

// TestArrows: packages that must not depend on others. Reading an SBOM
// (verify, smoke) does not link syft, which only the scanner (package sbom)
// needs; the build pipeline does not depend on release, which adapts it;
// publish does not depend on the build.
func TestArrows(t *testing.T) {
	for _, tc := range []struct {
		pkgs      []string
		forbidden string
		why       string
	}{
		{[]string{"./verify", "./smoke/..."}, "github.com/anchore/syft", "only the SBOM scanner (package sbom) links syft; documents are read with sbom/document"},
		{[]string{"./build/..."}, "github.com/imagectl/imagectl/release", "release adapts the build pipeline, not the other way round"},
		{[]string{"./publish"}, "github.com/imagectl/imagectl/build", "publish knows BuildKit's exports as digests and tarballs, not the build"},
		{[]string{"./publish"}, "github.com/moby/buildkit", "publish links no BuildKit"},
	} {
		deps := goList(t, append([]string{"-deps"}, tc.pkgs...)...)
		if len(deps) < 2 {
			t.Fatalf("go list -deps %s named %d packages, want its whole import graph", strings.Join(tc.pkgs, " "), len(deps))
		}
		for _, d := range deps {
			if d == tc.forbidden || strings.HasPrefix(d, tc.forbidden+"/") {
				t.Errorf("%s depends on %s: %s", strings.Join(tc.pkgs, " "), d, tc.why)
			}
		}
	}
}
