package extensions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/extensions/gallerytest"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
)

// TestExtensionsFetchLayoutLs runs the verbs against the fake Marketplace:
// the committed matrix.yaml, and the committed catalog with its extension
// records replaced by what the fake serves (the vsce-built fixtures).
func TestExtensionsFetchLayoutLs(t *testing.T) {
	builds, err := gallerytest.LoadDir(gallerytest.FixtureDir())
	if err != nil {
		t.Fatal(err)
	}
	f := gallerytest.New(builds)
	defer f.Close()
	root := filepath.Join("..", "..", "..", "..")
	tmp := t.TempDir()
	catPath := filepath.Join(tmp, "catalog.json")
	if err := f.WriteCatalog(context.Background(), filepath.Join(root, "catalog.json"), catPath); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(tmp, "cache")
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		base := []string{"--matrix", filepath.Join(root, "matrix.yaml"), "--catalog", catPath}
		if args[1] == "ls" {
			base = nil // ls reads no matrix.yaml or catalog, and refuses the flags
		}
		if code := app.Run(context.Background(), append(base, args...), &out, &errb); code != 0 {
			t.Fatalf("imagectl %v: exit %d\n%s", args, code, errb.String())
		}
		return out.String()
	}
	f.ResetStats()
	out := run("extensions", "fetch", "--ray", "2.46.0", "--platform", "linux/amd64,linux/arm64",
		"--cache-dir", cacheDir, "--marketplace-url", f.MarketplaceURL())
	t.Logf("first fetch:\n%s", out)
	if f.Stats().Downloads == 0 || strings.Contains(out, "cached") {
		t.Errorf("first fetch: %d downloads, output:\n%s", f.Stats().Downloads, out)
	}
	for _, want := range []string{"ms-python.python", "linux-x64", "linux-arm64", "ms-python.debugpy", "anyscalecompute.ray-distributed-debugger"} {
		if !strings.Contains(out, want) {
			t.Errorf("fetch output lacks %q", want)
		}
	}
	for _, r := range f.Requests() {
		if strings.Contains(r, "/vsextensions/python/") && !strings.Contains(r, "targetPlatform=linux-") {
			t.Errorf("python fetched without targetPlatform: %s", r)
		}
	}
	f.ResetStats()
	out2 := run("extensions", "fetch", "--ray", "2.46.0", "--platform", "linux/amd64,linux/arm64",
		"--cache-dir", cacheDir, "--marketplace-url", f.MarketplaceURL())
	if n := f.Stats().Requests; n != 0 || strings.Contains(out2, "fetched") {
		t.Errorf("second fetch made %d requests; output:\n%s", n, out2)
	}
	ls := run("extensions", "ls", "--cache-dir", cacheDir)
	if strings.Count(ls, "\n") < 4 {
		t.Errorf("ls:\n%s", ls)
	}
	// -o json is an object, like every other report: the cache and its
	// entries.
	var listing struct {
		CacheDir string `json:"cacheDir"`
		Entries  []struct {
			ID, Version, TargetPlatform, SHA256 string
		} `json:"entries"`
	}
	if js := run("extensions", "ls", "--cache-dir", cacheDir, "-o", "json"); json.Unmarshal([]byte(js), &listing) != nil ||
		listing.CacheDir != cacheDir || len(listing.Entries) != strings.Count(ls, "\n")-1 || listing.Entries[0].SHA256 == "" {
		t.Errorf("ls -o json: %+v\n%s", listing, js)
	}
	dir := filepath.Join(tmp, "arm64")
	run("extensions", "layout", "--ray", "2.46.0", "--platform", "linux/arm64", "--out", dir, "--cache-dir", cacheDir,
		"--settings", filepath.Join(tmp, "settings.json"))
	ents, _ := filepath.Glob(filepath.Join(dir, "ms-python.python-*", "platform.txt"))
	if len(ents) != 1 {
		t.Fatalf("layout: python folders %v", ents)
	}
	if p, _ := os.ReadFile(ents[0]); strings.TrimSpace(string(p)) != "linux-arm64" {
		t.Errorf("arm64 layout holds the %q build of ms-python.python", p)
	}
	s, _ := os.ReadFile(filepath.Join(tmp, "settings.json"))
	if !strings.Contains(string(s), "clusterDashboards") {
		t.Errorf("settings.json:\n%s", s)
	}
	if f.Stats().Requests != 0 {
		t.Errorf("layout made requests")
	}
}
