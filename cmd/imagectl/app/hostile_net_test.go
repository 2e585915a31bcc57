package app

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/extensions/gallerytest"
	"github.com/imagectl/imagectl/internal/testutil"
)

// galleryEnv is the committed matrix.yaml with a catalog whose extension
// records are what the fake Marketplace serves (no sha256 pinned).
type galleryEnv struct {
	f       *gallerytest.Fake
	builds  []gallerytest.Build
	catPath string
	tmp     string
	root    string
}

func newGalleryEnv(t *testing.T) *galleryEnv {
	t.Helper()
	return newGalleryEnvWith(t, nil)
}

// newGalleryEnvWith is newGalleryEnv with every fixture VSIX passed
// through edit (nil: served as it is).
func newGalleryEnvWith(t *testing.T, edit func([]byte) []byte) *galleryEnv {
	t.Helper()
	builds, err := gallerytest.LoadDir(gallerytest.FixtureDir())
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		for i := range builds {
			builds[i].Body = edit(builds[i].Body)
		}
	}
	f := gallerytest.New(builds)
	t.Cleanup(f.Close)
	root := filepath.Join("..", "..", "..")
	tmp := t.TempDir()
	catPath := filepath.Join(tmp, "catalog.json")
	if err := f.WriteCatalog(context.Background(), filepath.Join(root, "catalog.json"), catPath); err != nil {
		t.Fatal(err)
	}
	return &galleryEnv{f: f, builds: builds, catPath: catPath, tmp: tmp, root: root}
}

func (e *galleryEnv) run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	base := []string{"--matrix", filepath.Join(e.root, "matrix.yaml"), "--catalog", e.catPath}
	code := Run(context.Background(), append(base, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// readTree returns every regular file under dir, concatenated.
func readTree(t *testing.T, dir string) string {
	t.Helper()
	var all strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			all.Write(b)
		}
		return nil
	})
	return all.String()
}

// A password in --marketplace-url appears nowhere: not in error messages,
// not in -v logs, not in the cache index.
func TestURLUserinfoIsNeverPrintedNorStored(t *testing.T) {
	e := newGalleryEnv(t)
	withUser := strings.Replace(e.f.MarketplaceURL(), "http://", "http://alice:s3cret@", 1)
	cacheDir := filepath.Join(e.tmp, "cache")
	fetch := []string{"extensions", "fetch", "--ray", "2.46.0", "--cache-dir", cacheDir, "--marketplace-url", withUser}

	code, out, errOut := e.run(append([]string{"-v"}, fetch...)...)
	if code != 0 {
		t.Fatalf("fetch: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "redacted@") {
		t.Errorf("-v log names no URL at all (nothing to check):\n%s", errOut)
	}
	index := readTree(t, filepath.Join(cacheDir, "index"))
	for what, s := range map[string]string{"stdout": out, "-v log": errOut, "cache index": index} {
		if strings.Contains(s, "s3cret") || strings.Contains(s, "alice") {
			t.Errorf("%s leaks the userinfo:\n%s", what, s)
		}
	}

	// A failing download: the error names the URL, without the userinfo.
	e.f.AddFault(gallerytest.Fault{Kind: gallerytest.Status, StatusCode: 403, ID: "ms-python.python", Body: []byte("forbidden")})
	code, _, errOut = e.run(append([]string{"-v"}, "extensions", "fetch", "--ray", "2.46.0", "--cache-dir", filepath.Join(e.tmp, "cache2"), "--marketplace-url", withUser)...)
	if code == 0 {
		t.Fatal("fetch succeeded despite the 403")
	}
	if !strings.Contains(errOut, "HTTP 403") {
		t.Errorf("stderr lacks the failure:\n%s", errOut)
	}
	if strings.Contains(errOut, "s3cret") || strings.Contains(errOut, "alice") {
		t.Errorf("error output leaks the userinfo:\n%s", errOut)
	}
}

// withPublisher returns the VSIX with package.json's publisher replaced.
func withPublisher(t *testing.T, vsix []byte, publisher string) []byte {
	t.Helper()
	return testutil.EditZip(t, vsix, func(f *zip.File) ([]byte, bool) {
		if f.Name != "extension/package.json" {
			return nil, false
		}
		pj := strings.Replace(string(testutil.ReadZipEntry(t, f)), `"publisher": "ms-python"`, `"publisher": `+strings.Trim(mustJSON(t, publisher), "\n"), 1)
		return []byte(pj), true
	}, nil)
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Upstream text with terminal escape sequences (an HTTP error body, a
// publisher name in package.json) reaches stderr escaped; so does any
// error, whatever it carries (the CLI's last line of defence).
func TestUpstreamTextIsEscaped(t *testing.T) {
	e := newGalleryEnv(t)
	const evil = "\x1b]0;pwned\x07\x1b[2J"
	var pyBody []byte
	for _, b := range e.builds {
		if b.ID == "ms-python.python" && b.TargetPlatform == "linux-x64" {
			pyBody = b.Body
		}
	}
	for name, fault := range map[string]gallerytest.Fault{
		"HTTP error body":             {Kind: gallerytest.Status, StatusCode: 403, ID: "ms-python.python", Body: []byte(evil + "denied")},
		"publisher in a package.json": {Kind: gallerytest.Replace, ID: "ms-python.python", TargetPlatform: "linux-x64", Body: withPublisher(t, pyBody, "ms-python"+evil)},
	} {
		t.Run(name, func(t *testing.T) {
			e.f.ClearFaults()
			e.f.AddFault(fault)
			code, _, errOut := e.run("extensions", "fetch", "--ray", "2.46.0", "--platform", "linux/amd64", "--cache-dir", t.TempDir(), "--marketplace-url", e.f.MarketplaceURL())
			if code == 0 {
				t.Fatal("fetch succeeded")
			}
			if strings.ContainsAny(errOut, "\x1b\x07") {
				t.Errorf("raw escape sequence on stderr: %q", errOut)
			}
			if !strings.Contains(errOut, `\x1b]0;pwned\x07`) {
				t.Errorf("stderr does not show the escaped text: %q", errOut)
			}
		})
	}
	e.f.ClearFaults()
	code, _, errOut := e.run("matrix", "resolve", "--ray", "2.46.0", "--platform", "linux/\x1b[31mred")
	if code == 0 || strings.ContainsAny(errOut, "\x1b") {
		t.Errorf("exit %d, stderr %q: want a failure printed without raw escapes", code, errOut)
	}
}

// Trust on first use is visible: fetch warns about every unpinned file;
// --require-pins refuses them before any request; extensions pin records
// them in the catalog, after which --require-pins passes.
func TestPinsOnTheCommandLine(t *testing.T) {
	e := newGalleryEnv(t)
	fetch := []string{"extensions", "fetch", "--ray", "2.46.0", "--marketplace-url", e.f.MarketplaceURL()}

	code, out, errOut := e.run(append(fetch, "--cache-dir", filepath.Join(e.tmp, "c1"))...)
	if code != 0 {
		t.Fatalf("fetch: exit %d\n%s", code, errOut)
	}
	files := strings.Count(out, "\n") - 1 // minus the header
	if n := strings.Count(errOut, "is not pinned by sha256"); n != files || files < 3 {
		t.Errorf("%d warnings for %d unpinned files:\n%s", n, files, errOut)
	}

	e.f.ResetStats()
	code, _, errOut = e.run(append(fetch, "--cache-dir", filepath.Join(e.tmp, "c2"), "--require-pins")...)
	if code == 0 {
		t.Fatal("--require-pins accepted an unpinned catalog")
	}
	for _, id := range []string{"ms-python.python@", "ms-python.debugpy@", "anyscalecompute.ray-distributed-debugger@"} {
		if !strings.Contains(errOut, id) {
			t.Errorf("the refusal does not name %s:\n%s", id, errOut)
		}
	}
	if n := e.f.Stats().Requests; n != 0 {
		t.Errorf("--require-pins made %d requests before refusing", n)
	}

	code, out, errOut = e.run("extensions", "pin", "--ray", "2.46.0", "--cache-dir", filepath.Join(e.tmp, "c1"), "--marketplace-url", e.f.MarketplaceURL())
	if code != 0 {
		t.Fatalf("pin: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(out, "newly pinned") || strings.Count(out, "pinned ms-python.python@") != 2 {
		t.Errorf("pin output:\n%s", out)
	}
	code, _, errOut = e.run(append(fetch, "--cache-dir", filepath.Join(e.tmp, "c3"), "--require-pins")...)
	if code != 0 || strings.Contains(errOut, "not pinned") {
		t.Errorf("fetch --require-pins after pin: exit %d\n%s", code, errOut)
	}
}

// release cannot be talked out of requiring pins.
func TestReleaseAlwaysRequiresPins(t *testing.T) {
	e := newGalleryEnv(t)
	code, _, errOut := e.run("release", "--require-pins=false", "--dry-run")
	if code == 0 || !strings.Contains(errOut, "release always requires pinned extension files") {
		t.Errorf("release --require-pins=false: exit %d\n%s", code, errOut)
	}
}
