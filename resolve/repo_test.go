package resolve

import (
	"encoding/json"
	"testing"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/matrix"
)

// TestRepoSnapshot resolves the committed matrix.yaml and catalog.json: the
// acceptance example must keep working.
func TestRepoSnapshot(t *testing.T) {
	cfg, err := matrix.Load("../matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load("../catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	set, ex, err := Resolve(cfg, cat, Request{Ray: "2.46.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("explanation:\n%s", ex)
	if set.Python != "3.12" || len(set.RayPythons) != 4 || set.RayPythons[0] != "3.9" {
		t.Errorf("python %s / %v, want 3.12 from 3.9..3.12", set.Python, set.RayPythons)
	}
	if set.Debugpy != "1.8.14" || set.CodeServer.Version != "4.101.2" || set.CodeServer.VSCode != "1.101.2" {
		t.Errorf("debugpy %s code-server %s VS Code %s", set.Debugpy, set.CodeServer.Version, set.CodeServer.VSCode)
	}
	if len(set.Extensions) != 3 {
		t.Fatalf("want 3 extensions, got %+v", set.Extensions)
	}
	for _, e := range set.Extensions {
		for _, p := range []string{"linux/amd64", "linux/arm64"} {
			if e.Files[p].TargetPlatform == "" || e.Files[p].URL == "" {
				t.Errorf("%s has no file for %s", e.ID, p)
			}
		}
	}
	b, _ := json.MarshalIndent(set, "", "  ")
	t.Logf("set:\n%s", b)
}
