package catalog_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/upstream/github"
	"github.com/imagectl/imagectl/upstream/github/githubtest"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// fakePBS serves a python-build-standalone release on the fake GitHub.
// versions are the CPython versions with tarballs for both architectures;
// sum is the hex digit every sum of the version repeats. SHA256SUMS serves
// sumsBody of the true SHA256SUMS.
func fakePBS(t *testing.T, tag string, versions map[string]byte, sumsBody func(string) string) *httptest.Server {
	t.Helper()
	var assets []githubtest.Asset
	for v, c := range versions {
		for _, arch := range []string{"x86_64", "aarch64"} {
			n := fmt.Sprintf("cpython-%s+%s-%s-unknown-linux-gnu-install_only.tar.gz", v, tag, arch)
			s := strings.Repeat(string(c), 63) + map[string]string{"x86_64": "0", "aarch64": "1"}[arch]
			assets = append(assets, githubtest.Asset{Name: n, Size: 1, SHA256: s})
		}
	}
	assets = append(assets, githubtest.SumsAsset(sumsBody(githubtest.Sums(assets))))
	srv := httptest.NewServer(githubtest.New([]githubtest.Release{{Repository: "astral-sh/python-build-standalone", TagName: tag, Assets: assets}}))
	t.Cleanup(srv.Close)
	return srv
}

// Refresh locks, per CPython minor version within components.python min
// and max, the highest patch of build.standalone's release.
func TestRefreshPythonRuntimes(t *testing.T) {
	pypiSrv := httptest.NewServer(newFakePyPI())
	defer pypiSrv.Close()
	gh := fakePBS(t, "20250808", map[string]byte{"3.9.23": '9', "3.11.12": 'a', "3.11.13": 'b', "3.12.11": 'c', "3.13.5": 'd'}, func(s string) string { return s })
	cfg := mustMatrix(t)
	cfg.Components.Python.Min, cfg.Components.Python.Max = "3.10", "3.12"
	src := sources(pypiSrv.URL)
	src.PythonRuntimes = github.New(github.WithBaseURL(gh.URL))
	c, err := catalog.Refresh(context.Background(), cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	dl := gh.URL + "/astral-sh/python-build-standalone/releases/download/20250808/cpython-"
	rt := func(minor, v string, c byte) catalog.PythonRuntime {
		return catalog.PythonRuntime{Python: minor, Version: v, Repository: "astral-sh/python-build-standalone", Release: "20250808", Flavor: "install_only",
			Files: map[string]catalog.RuntimeFile{
				"linux/amd64": {URL: dl + v + "%2B20250808-x86_64-unknown-linux-gnu-install_only.tar.gz", SHA256: strings.Repeat(string(c), 63) + "0", Size: 1},
				"linux/arm64": {URL: dl + v + "%2B20250808-aarch64-unknown-linux-gnu-install_only.tar.gz", SHA256: strings.Repeat(string(c), 63) + "1", Size: 1},
			}}
	}
	want := []catalog.PythonRuntime{rt("3.11", "3.11.13", 'b'), rt("3.12", "3.12.11", 'c')}
	if diff := cmp.Diff(want, c.PythonRuntimes); diff != "" {
		t.Errorf("pythonRuntimes (-want +got):\n%s", diff)
	}
	// Deterministic: written twice, the same bytes, and loadable.
	dir := t.TempDir()
	p := filepath.Join(dir, "catalog.json")
	if err := catalog.Write(p, c); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(p)
	c2, err := catalog.Refresh(context.Background(), cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := catalog.Marshal(c2)
	if !bytes.Equal(first, b2) {
		t.Errorf("two refreshes differ:\n%s\n---\n%s", first, b2)
	}
	if _, err := catalog.Load(p); err != nil {
		t.Errorf("the written catalog does not load: %v", err)
	}

	// base runtime: nothing asked, nothing recorded.
	cfg.Build.PythonRuntime = "base"
	c3, err := catalog.Refresh(context.Background(), cfg, src)
	if err != nil || c3.PythonRuntimes != nil {
		t.Errorf("pythonRuntime base: %v, %+v; want no runtimes", err, c3.PythonRuntimes)
	}
}

// A fault in the runtime source fails the refresh, naming the release and
// the URL, and leaves the old catalog as it was.
func TestRefreshPythonRuntimeFaults(t *testing.T) {
	pypiSrv := httptest.NewServer(newFakePyPI())
	defer pypiSrv.Close()
	for _, tc := range []struct {
		name     string
		versions map[string]byte
		sums     func(string) string
		release  string
		wantErr  []string
	}{
		{name: "SHA256SUMS is HTML with 200", versions: map[string]byte{"3.12.11": 'c'}, release: "20250808",
			sums:    func(string) string { return "<!DOCTYPE html><html>Too many requests</html>" },
			wantErr: []string{"build.standalone astral-sh/python-build-standalone release 20250808", "/releases/download/20250808/SHA256SUMS line 1"}},
		{name: "no minor in range", versions: map[string]byte{"3.13.5": 'd'}, release: "20250808", sums: func(s string) string { return s },
			wantErr: []string{"no CPython version allowed by components.python has install_only tarballs"}},
		{name: "unknown release", versions: map[string]byte{"3.12.11": 'c'}, release: "20990101", sums: func(s string) string { return s },
			wantErr: []string{"/repos/astral-sh/python-build-standalone/releases/tags/20990101", "404"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := fakePBS(t, "20250808", tc.versions, tc.sums)
			cfg := mustMatrix(t)
			cfg.Components.Python.Max = "3.12"
			cfg.Build.Standalone.Release = tc.release
			src := sources(pypiSrv.URL)
			src.PythonRuntimes = github.New(github.WithBaseURL(gh.URL), github.WithHTTPClient(httpx.New(httpx.WithRetries(0))))
			p := filepath.Join(t.TempDir(), "catalog.json")
			old := []byte("{\"old\": true}\n")
			if err := os.WriteFile(p, old, 0o644); err != nil {
				t.Fatal(err)
			}
			err := refreshTo(p, cfg, src)
			if err == nil {
				t.Fatal("refresh succeeded")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if b, _ := os.ReadFile(p); !bytes.Equal(b, old) {
				t.Errorf("old catalog changed to %s", b)
			}
		})
	}
}

// Load rejects a malformed runtime entry.
func TestLoadRejectsBadRuntime(t *testing.T) {
	good := `{"python":"3.12","version":"3.12.11","repository":"a/b","release":"20250808","flavor":"install_only","files":{` +
		`"linux/amd64":{"url":"https://x/a","sha256":"` + strings.Repeat("1", 64) + `"},` +
		`"linux/arm64":{"url":"https://x/b","sha256":"` + strings.Repeat("2", 64) + `"}}}`
	for name, rt := range map[string]string{
		"bad sum":       strings.Replace(good, strings.Repeat("2", 64), "XYZ", 1),
		"no arm64":      strings.Replace(good, `,"linux/arm64":{"url":"https://x/b","sha256":"`+strings.Repeat("2", 64)+`"}`, "", 1),
		"other minor":   strings.Replace(good, `"version":"3.12.11"`, `"version":"3.11.13"`, 1),
		"unknown field": strings.Replace(good, `"flavor"`, `"flavour":"x","flavor"`, 1),
	} {
		p := filepath.Join(t.TempDir(), "catalog.json")
		os.WriteFile(p, []byte(`{"schemaVersion":1,"describes":"2025-08-08","codeServer":[],"ray":[],"debugpy":[],"extensions":[],"pythonRuntimes":[`+rt+`]}`), 0o644)
		if _, err := catalog.Load(p); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	p := filepath.Join(t.TempDir(), "catalog.json")
	os.WriteFile(p, []byte(`{"schemaVersion":1,"describes":"2025-08-08","codeServer":[],"ray":[],"debugpy":[],"extensions":[],"pythonRuntimes":[`+good+`]}`), 0o644)
	if _, err := catalog.Load(p); err != nil {
		t.Errorf("good runtime: %v", err)
	}
}
