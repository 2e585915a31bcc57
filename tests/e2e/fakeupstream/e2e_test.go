package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/matrix"
)

// The e2e's generated matrix.yaml and catalog.json (every snapshot run.sh
// makes) load with the strict loaders.
func TestConfigLoads(t *testing.T) {
	dir := t.TempDir()
	writeJSON := func(name string, v any) string {
		p := filepath.Join(dir, name)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	d := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	base := writeJSON("base.json", map[string]any{"index": d("a"), "platforms": map[string]string{"linux/amd64": d("b"), "linux/arm64": d("c")}})
	tools := writeJSON("tools.json", map[string]any{"index": d("d")})
	urls := writeJSON("gallery.json", map[string]string{"marketplace": "http://127.0.0.1:1/marketplace", "openvsx": "http://127.0.0.1:1/openvsx"})
	for _, omit := range []string{"anyscalecompute.ray-distributed-debugger@0.1.6", "", "anyscalecompute.ray-distributed-debugger@0.1.6,ms-python.python@2025.8.0"} {
		out := filepath.Join(dir, "cfg"+omit)
		if err := runConfig([]string{"-out", out, "-registry", "127.0.0.1:5000", "-base", base, "-gallery-urls", urls,
			"-package-index", "http://127.0.0.1:1/simple", "-tools-image", "127.0.0.1:5000/tools:1", "-tools", tools, "-omit", omit}); err != nil {
			t.Fatalf("e2e-config -omit %q: %v", omit, err)
		}
		if _, err := catalog.Load(filepath.Join(out, "catalog.json")); err != nil {
			t.Errorf("e2e-config -omit %q: catalog.json does not load: %v", omit, err)
		}
		if _, err := matrix.Load(filepath.Join(out, "matrix.yaml")); err != nil {
			t.Errorf("e2e-config -omit %q: matrix.yaml does not load: %v", omit, err)
		}
	}
}
