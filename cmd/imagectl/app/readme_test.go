package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadmeQuickStartOutsideAClone runs the README's quick start as a
// user who ran go install does: from an empty directory. No command may be
// a usage error (exit 2); what the network or BuildKit gives is not
// checked (each run is cut after a few seconds).
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
			if code == exitUsage {
				t.Errorf("%s: exit %d outside a clone: %s", strings.TrimSpace(c), code, errb.String())
			}
		}
	}
	if n == 0 {
		t.Fatal("the Quick start runs no imagectl command")
	}
}
