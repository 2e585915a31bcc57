package imagespec_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/internal/testutil"
)

// goList runs go list at the module root, skipping (or failing with
// IMAGECTL_REQUIRE_TOOLS=1) when the go command is not on PATH.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		testutil.SkipOrFail(t, "go command not found on PATH: go list is needed to read the import graph")
	}
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestNoBuildKitOutsideBuild: the packages that read or publish images
// (and the ones they use) know the image through imagespec, not through
// build, so none of them links BuildKit.
func TestNoBuildKitOutsideBuild(t *testing.T) {
	pkgs := []string{"./imagespec", "./extensions", "./sign", "./verify", "./release", "./resolve", "./matrix"}
	for _, p := range pkgs {
		deps := goList(t, "-deps", p)
		if len(deps) < 2 {
			t.Fatalf("go list -deps %s named %d packages, want its whole import graph", p, len(deps))
		}
		for _, d := range deps {
			if strings.HasPrefix(d, "github.com/moby/buildkit") || d == "github.com/imagectl/imagectl/build" {
				t.Errorf("%s depends on %s; it must know the image through imagespec only", p, d)
			}
		}
	}
}

// TestLeaf: imagespec imports the standard library, go-containerregistry's
// descriptor types and containerd's platform names only, so any package may
// import it.
func TestLeaf(t *testing.T) {
	allowed := map[string]bool{
		"github.com/google/go-containerregistry/pkg/v1":       true,
		"github.com/google/go-containerregistry/pkg/v1/types": true,
		"github.com/imagectl/imagectl/imagespec":              true,
		// containerd/platforms and what it imports.
		"github.com/containerd/platforms":                  true,
		"github.com/containerd/log":                        true,
		"github.com/sirupsen/logrus":                       true,
		"github.com/opencontainers/go-digest":              true,
		"github.com/opencontainers/image-spec/specs-go":    true,
		"github.com/opencontainers/image-spec/specs-go/v1": true,
		"golang.org/x/sys/unix":                            true,
	}
	deps := goList(t, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./imagespec")
	if len(deps) == 0 {
		t.Fatal("go list -deps ./imagespec named no non-standard package, not even imagespec")
	}
	for _, d := range deps {
		if !allowed[d] {
			t.Errorf("imagespec depends on %s; it must stay a leaf (standard library, ggcr's pkg/v1 and containerd/platforms only)", d)
		}
	}
}

// TestNothingImportsTests: no package outside tests/ imports one under
// tests/, and no package at all imports internal/testutil or a package
// under it (test files aside), so the shipped binary links no test code.
func TestNothingImportsTests(t *testing.T) {
	const module = "github.com/imagectl/imagectl"
	lines := goList(t, "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	checked := 0
	for _, line := range lines {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if imp == module+"/internal/testutil" || strings.HasPrefix(imp, module+"/internal/testutil/") {
				t.Errorf("%s imports %s outside its test files: testutil is for tests only", f[0], imp)
			}
		}
		if strings.HasPrefix(f[0], module+"/tests/") {
			continue
		}
		checked++
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module+"/tests/") || imp == module+"/tests" {
				t.Errorf("%s imports %s: move what it needs out of tests/", f[0], imp)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("go list named only %d packages outside tests/:\n%s", checked, strings.Join(lines, "\n"))
	}
}
