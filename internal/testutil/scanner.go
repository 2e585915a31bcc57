package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// scannerEnv is sbom.ScannerEnv (testutil imports nothing of the project).
const scannerEnv = "IMAGECTL_SBOM_SCANNER"

// SBOMScanner returns the path of the SBOM scanner, imagectl-sbom (the
// nested module cmd/imagectl-sbom), for tests that build and sign with a
// scanned SBOM: $IMAGECTL_SBOM_SCANNER when set (make test builds it once
// and sets it), else one this test process builds, once, from this tree
// into CacheDir()/imagectl-sbom (written under a temporary name and
// renamed, so that test processes running at once never run half a
// file). A build that fails fails the test.
func SBOMScanner(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(scannerEnv); p != "" {
		return p
	}
	p, err := buildScanner()
	if err != nil {
		t.Fatalf("building the SBOM scanner (set %s to skip the build): %v", scannerEnv, err)
	}
	return p
}

var buildScanner = sync.OnceValues(func() (string, error) {
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("no source path for testutil")
	}
	mod := filepath.Join(filepath.Dir(here), "..", "..", "cmd", "imagectl-sbom")
	dir := filepath.Join(CacheDir(), "imagectl-sbom")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "imagectl-sbom")
	tmp, err := os.CreateTemp(dir, ".build-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-o", tmp.Name(), ".")
	cmd.Dir = mod
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s: %v: %s", mod, err, strings.TrimSpace(string(b)))
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", err
	}
	return out, nil
})
