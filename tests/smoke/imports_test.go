package smoketest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNothingImportsTests: no package outside tests/ imports one under
// tests/ (test files aside), so the shipped binary links no test code.
func TestNothingImportsTests(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH: go list is needed to read the import graph")
	}
	const module = "github.com/imagectl/imagectl"
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], module+"/tests/") {
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
		t.Fatalf("go list named only %d packages outside tests/:\n%s", checked, out)
	}
}
