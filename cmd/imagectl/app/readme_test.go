package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
)

// TestReadmeQuickStartOutsideAClone runs the README's quick start as a
// user who ran go install does: from an empty directory. No command may be
// a usage error (exit 2); what the upstreams or BuildKit give is not
// checked (each run is cut after a few seconds). Every upstream is a
// closed port on this machine, so nothing leaves it.
func TestReadmeQuickStartOutsideAClone(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Quick start\n")
	if !ok {
		t.Fatal("README.md has no Quick start section")
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("the Quick start has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	t.Setenv("IMAGECTL_MATRIX", "")
	t.Setenv("IMAGECTL_CATALOG", "")
	closed := "127.0.0.1:1"
	for env, v := range map[string]string{
		"IMAGECTL_PYPI_URL":              "http://" + closed + "/pypi",
		"IMAGECTL_PACKAGE_INDEX":         "http://" + closed + "/simple",
		"IMAGECTL_MARKETPLACE_URL":       "http://" + closed + "/marketplace",
		"IMAGECTL_OPENVSX_URL":           "http://" + closed + "/openvsx",
		"IMAGECTL_GITHUB_URL":            "http://" + closed + "/github",
		"IMAGECTL_PYTHON_STANDALONE_URL": "http://" + closed + "/standalone",
		"IMAGECTL_BASE_IMAGE":            closed + "/base",
		"IMAGECTL_TOOLS_IMAGE":           closed + "/tools",
		"BUILDKIT_HOST":                  "tcp://" + closed,
	} {
		t.Setenv(env, v)
	}
	t.Chdir(t.TempDir())
	var n int
	for _, line := range strings.Split(block, "\n") {
		for _, c := range strings.Split(line, "&&") {
			args := strings.Fields(c)
			if len(args) == 0 || args[0] != "imagectl" {
				continue
			}
			n++
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			var out, errb bytes.Buffer
			code := Run(ctx, args[1:], &out, &errb)
			cancel()
			if code == options.ExitUsage {
				t.Errorf("%s: exit %d outside a clone: %s", strings.TrimSpace(c), code, errb.String())
			}
		}
	}
	if n == 0 {
		t.Fatal("the Quick start runs no imagectl command")
	}
}
