package app

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
)

// An installed imagectl works from any directory: without --matrix and no
// ./matrix.yaml it reads the matrix.yaml and catalog.json built into it
// (saying so on stderr); ./matrix.yaml, when there, wins over the built-in
// one, and --matrix/IMAGECTL_MATRIX over both.
func TestBuiltinDefaults(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", "..")) // before the Chdir
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("IMAGECTL_MATRIX", "")
	t.Setenv("IMAGECTL_CATALOG", "")
	want, _, errOut := mustRun(t, "--matrix", filepath.Join(root, "matrix.yaml"), "matrix", "list", "-o", "json")
	if errOut != "" {
		t.Errorf("--matrix given: stderr %q, want nothing", errOut)
	}

	t.Chdir(t.TempDir())
	got, _, errOut := mustRun(t, "matrix", "list", "-o", "json")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("matrix list from an empty directory (-repository's files +built-in):\n%s", diff)
	}
	if !strings.Contains(errOut, "imagectl: no ./matrix.yaml: using the matrix.yaml and catalog.json built into imagectl") {
		t.Errorf("stderr does not say the built-in files are used: %q", errOut)
	}
	if code, _, errOut := runArgs(t, "matrix", "refresh", "--no-python-lock"); code != options.ExitUsage || !strings.Contains(errOut, "pass --catalog FILE") {
		t.Errorf("matrix refresh with the built-in catalog: exit %d, stderr %q; want 2 and a pointer to --catalog", code, errOut)
	}

	// ./matrix.yaml wins over the built-in one: a copy with one platform.
	m, err := os.ReadFile(filepath.Join(root, "matrix.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := os.ReadFile(filepath.Join(root, "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("catalog.json", c, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("matrix.yaml", m, 0o644); err != nil {
		t.Fatal(err)
	}
	got, _, errOut = mustRun(t, "matrix", "list", "-o", "json")
	if errOut != "" || got != want {
		t.Errorf("with ./matrix.yaml: stderr %q, output equal: %v", errOut, got == want)
	}
	if err := os.WriteFile("matrix.yaml", []byte("not: [a matrix"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runArgs(t, "matrix", "list"); code != options.ExitFailure || !strings.Contains(errOut, "matrix.yaml") {
		t.Errorf("with a broken ./matrix.yaml: exit %d, stderr %q; want 1 naming it (not the built-in one)", code, errOut)
	}
	t.Setenv("IMAGECTL_MATRIX", filepath.Join(root, "matrix.yaml"))
	t.Setenv("IMAGECTL_CATALOG", filepath.Join(root, "catalog.json"))
	if got, _, _ := mustRun(t, "matrix", "list", "-o", "json"); got != want {
		t.Errorf("IMAGECTL_MATRIX does not win over ./matrix.yaml")
	}
}

func mustRun(t *testing.T, args ...string) (string, int, string) {
	t.Helper()
	code, out, errOut := runArgs(t, args...)
	if code != 0 {
		t.Fatalf("imagectl %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	return out, code, errOut
}

// TestLocalMatrixUnreadable: a ./matrix.yaml that is there but does not
// read is an error naming it, not a silent fall back to the built-in one.
func TestLocalMatrixUnreadable(t *testing.T) {
	t.Setenv("IMAGECTL_MATRIX", "")
	t.Setenv("IMAGECTL_CATALOG", "")
	for name, target := range map[string]string{
		"dangling link": "gone.yaml",
		"link loop":     "matrix.yaml",
	} {
		t.Run(name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			if err := os.Symlink(target, "matrix.yaml"); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := runArgs(t, "matrix", "list", "-o", "json")
			if code == 0 || !strings.Contains(errOut, "matrix.yaml") || strings.Contains(errOut, "built into imagectl") {
				t.Errorf("exit %d, stderr %q; want an error naming matrix.yaml and no built-in matrix", code, errOut)
			}
		})
	}
}

// TestCatalogBesideMatrix: with --matrix, the catalog is catalog.json
// beside it, never the built-in one, and --catalog's help says so.
func TestCatalogBesideMatrix(t *testing.T) {
	t.Setenv("IMAGECTL_MATRIX", "")
	t.Setenv("IMAGECTL_CATALOG", "")
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	m, err := os.ReadFile(filepath.Join(root, "matrix.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "matrix.yaml"), m, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runArgs(t, "--matrix", filepath.Join(dir, "matrix.yaml"), "matrix", "resolve", "--ray", "2.46.0")
	if code == 0 || !strings.Contains(errOut, filepath.Join(dir, "catalog.json")) {
		t.Errorf("--matrix without a catalog.json beside it: exit %d, stderr %q; want an error naming %s", code, errOut, filepath.Join(dir, "catalog.json"))
	}
	usage := NewRootCommand(io.Discard, io.Discard).PersistentFlags().Lookup("catalog").Usage
	if !strings.Contains(usage, "built into imagectl only with the built-in matrix") {
		t.Errorf("--catalog help %q: want it to say the built-in catalog goes only with the built-in matrix", usage)
	}
}

// TestCatalogBesideBuiltinMatrix: with no ./matrix.yaml the built-in
// catalog goes with the built-in matrix, but a ./catalog.json there (the
// one matrix refresh --catalog catalog.json just wrote) is named with the
// flag that reads it: in the notice, in matrix refresh's refusal, and
// again after a failure, whose message may say to run matrix refresh.
func TestCatalogBesideBuiltinMatrix(t *testing.T) {
	t.Setenv("IMAGECTL_MATRIX", "")
	t.Setenv("IMAGECTL_CATALOG", "")
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	c, err := os.ReadFile(filepath.Join(root, "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if err := os.WriteFile("catalog.json", c, 0o644); err != nil {
		t.Fatal(err)
	}
	const hint = "pass --catalog catalog.json"
	code, _, errOut := runArgs(t, "matrix", "list")
	if code != 0 || !strings.Contains(errOut, "./catalog.json is not read with the built-in matrix: "+hint) {
		t.Errorf("matrix list: exit %d, stderr %q; want a notice with %q", code, errOut, hint)
	}
	code, _, errOut = runArgs(t, "matrix", "resolve", "--ray", "9.99.0")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if code != options.ExitFailure || !strings.Contains(lines[len(lines)-1], "the catalog read was the one built into imagectl, not ./catalog.json: "+hint) {
		t.Errorf("failed resolve: exit %d, stderr %q; want the last line to point at %q", code, errOut, hint)
	}
	if code, _, errOut := runArgs(t, "matrix", "refresh", "--no-python-lock"); code != options.ExitUsage || !strings.Contains(errOut, hint) {
		t.Errorf("matrix refresh: exit %d, stderr %q; want 2 and %q", code, errOut, hint)
	}
	if code, _, errOut := runArgs(t, "--catalog", "catalog.json", "matrix", "list"); code != 0 || strings.Contains(errOut, hint) {
		t.Errorf("--catalog catalog.json: exit %d, stderr %q; want no hint", code, errOut)
	}
}
