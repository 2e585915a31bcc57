package catalog_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/upstream/httpx"
	"github.com/imagectl/imagectl/upstream/pypi"
	"github.com/imagectl/imagectl/upstream/pypi/pypitest"
)

const refreshMatrix = `
image: {name: t, repositories: [localhost:5000/t]}
components:
  codeServer: {constraint: ">=4.96.0"}
  ray: {constraint: ">=2.39.0"}
  debugpy: {constraint: ">=1.8.0"}
extensions:
  - {id: ms-python.python, source: marketplace}
  - {id: anyscalecompute.ray-distributed-debugger, source: openvsx}
tags: [{template: "{{.CodeServer}}-{{.Ray}}-{{.Python}}-{{.Inputs}}"}]
`

// pypiProjects are ray and debugpy as the fake PyPI serves them.
func pypiProjects() []pypitest.Project {
	var files []pypitest.File
	for _, py := range []string{"39", "310", "311", "312"} {
		files = append(files,
			pypitest.Wheel(fmt.Sprintf("ray-2.46.0-cp%s-cp%s-manylinux2014_x86_64.whl", py, py)),
			pypitest.Wheel(fmt.Sprintf("ray-2.46.0-cp%s-cp%s-manylinux2014_aarch64.whl", py, py)),
			pypitest.Wheel(fmt.Sprintf("ray-2.46.0-cp%s-cp%s-macosx_12_0_arm64.whl", py, py)))
	}
	files = append(files, pypitest.Wheel("ray-2.46.0-cp313-cp313-manylinux2014_x86_64.whl"))
	return []pypitest.Project{
		{Name: "ray", RequiresPython: ">=3.9", Releases: map[string][]pypitest.File{
			"2.46.0":    files,
			"2.47.0rc1": {pypitest.Wheel("ray-2.47.0rc1-cp312-cp312-manylinux2014_x86_64.whl")},
			"2.38.0":    {pypitest.Wheel("ray-2.38.0-cp312-cp312-manylinux2014_x86_64.whl")},
			"2.40.0":    {pypitest.Yanked("ray-2.40.0-cp312-cp312-manylinux2014_x86_64.whl")},
			"0.1":       {},
		}},
		{Name: "debugpy", RequiresPython: ">=3.9", Releases: map[string][]pypitest.File{
			"1.8.14": {
				pypitest.Wheel("debugpy-1.8.14-cp312-cp312-manylinux_2_5_x86_64.manylinux1_x86_64.manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
				pypitest.Wheel("debugpy-1.8.14-py2.py3-none-any.whl"),
				{Filename: "debugpy-1.8.14.tar.gz"},
			},
			"1.7.0": {pypitest.Wheel("debugpy-1.7.0-py2.py3-none-any.whl")},
		}},
	}
}

// newFakePyPI returns the fake PyPI of pypiProjects.
func newFakePyPI(opts ...pypitest.Option) *pypitest.Fake {
	return pypitest.New(pypiProjects(), opts...)
}

// raySimpleJSON is the fake's /simple/ray/ body in its JSON form.
func raySimpleJSON() []byte {
	b, _ := newFakePyPI().SimpleJSON("http://pypi.invalid", "ray")
	return b
}

type fakeCodeServer []catalog.CodeServer

func (f fakeCodeServer) CodeServers(_ context.Context, keep func(string) bool) ([]catalog.CodeServer, error) {
	var out []catalog.CodeServer
	for _, c := range f {
		if keep(c.Version) {
			out = append(out, c)
		}
	}
	return out, nil
}

type fakeExtensions map[string][]catalog.ExtensionVersion

func (f fakeExtensions) Versions(_ context.Context, id string) ([]catalog.ExtensionVersion, error) {
	vs, ok := f[id]
	if !ok {
		return nil, fmt.Errorf("extension %s not found", id)
	}
	return vs, nil
}

func sources(pypiURL string, opts ...httpx.Option) catalog.Sources {
	opts = append([]httpx.Option{httpx.WithBackoff(time.Millisecond, 5*time.Millisecond)}, opts...)
	return catalog.Sources{
		PyPI: pypi.New(pypi.WithBaseURL(pypiURL), pypi.WithHTTPClient(httpx.New(opts...))),
		CodeServer: fakeCodeServer{
			{Version: "4.101.2", VSCode: "1.101.2", Tag: "4.101.2"},
			{Version: "4.95.0", VSCode: "1.95.0", Tag: "4.95.0"},
		},
		Extensions: map[string]catalog.ExtensionSource{
			"marketplace": fakeExtensions{"ms-python.python": {
				{Version: "2025.11.2025071401", PreRelease: true, Engine: "^1.95.0", Files: map[string]catalog.File{"linux-x64": {}}},
				{Version: "2025.10.0", Engine: "^1.95.0", Files: map[string]catalog.File{"linux-x64": {}, "linux-arm64": {}}},
			}},
			"openvsx": fakeExtensions{"anyscalecompute.ray-distributed-debugger": {
				{Version: "0.1.4", Engine: "^1.66.0", Files: map[string]catalog.File{"universal": {}}},
			}},
		},
		Now: func() time.Time { return time.Date(2025, 7, 15, 12, 0, 0, 0, time.UTC) },
	}
}

func mustMatrix(t *testing.T) *matrix.Config {
	t.Helper()
	cfg, err := matrix.Parse("matrix.yaml", []byte(refreshMatrix))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestRefresh(t *testing.T) {
	srv := httptest.NewServer(newFakePyPI())
	defer srv.Close()
	got, err := catalog.Refresh(context.Background(), mustMatrix(t), sources(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	py := []string{"3.9", "3.10", "3.11", "3.12"}
	want := &catalog.Catalog{
		SchemaVersion: 1, Describes: "2025-07-15", Origin: "imagectl matrix refresh",
		CodeServer: []catalog.CodeServer{{Version: "4.101.2", VSCode: "1.101.2", Tag: "4.101.2"}},
		Ray: []catalog.PythonPackage{
			{Version: "2.46.0", RequiresPython: ">=3.9", Pythons: map[string][]string{
				"linux/amd64": append(py[:4:4], "3.13"), "linux/arm64": py}},
			{Version: "2.40.0", Yanked: true, RequiresPython: ">=3.9"},
		},
		Debugpy: []catalog.PythonPackage{
			{Version: "1.8.14", RequiresPython: ">=3.9", Pythons: map[string][]string{"any": {"any"}, "linux/amd64": {"3.12"}}},
		},
		Extensions: []catalog.ExtensionRecord{
			{ID: "anyscalecompute.ray-distributed-debugger", Source: "openvsx", Versions: []catalog.ExtensionVersion{
				{Version: "0.1.4", Engine: "^1.66.0", Files: map[string]catalog.File{"universal": {}}}}},
			{ID: "ms-python.python", Source: "marketplace", Versions: []catalog.ExtensionVersion{
				{Version: "2025.10.0", Engine: "^1.95.0", Files: map[string]catalog.File{"linux-x64": {}, "linux-arm64": {}}}}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Refresh mismatch (-want +got):\n%s", diff)
	}
}

// refreshTo is what `imagectl matrix refresh` does: refresh, then write.
func refreshTo(path string, cfg *matrix.Config, src catalog.Sources) error {
	c, err := catalog.Refresh(context.Background(), cfg, src)
	if err != nil {
		return err
	}
	return catalog.Write(path, c)
}

func TestRefreshFaults(t *testing.T) {
	tests := []struct {
		name    string
		fault   func(w http.ResponseWriter, r *http.Request, n int) bool
		opts    []httpx.Option
		wantErr string // empty: must recover
		check   func(t *testing.T, f *pypitest.Fake)
	}{
		{
			name: "429 with Retry-After is honoured",
			fault: func(w http.ResponseWriter, r *http.Request, n int) bool {
				if n == 1 {
					w.Header().Set("Retry-After", "1")
					w.Header().Set("X-RateLimit-Remaining", "0")
					w.WriteHeader(http.StatusTooManyRequests)
					return true
				}
				return false
			},
			check: func(t *testing.T, f *pypitest.Fake) {
				hits := f.Hits()
				if len(hits) < 2 {
					t.Fatalf("%d requests, want a retry", len(hits))
				}
				if gap := hits[1].Sub(hits[0]); gap < 900*time.Millisecond {
					t.Errorf("retried after %v, want >= 1s (Retry-After: 1)", gap)
				}
			},
		},
		{
			name: "burst of 500s then success",
			fault: func(w http.ResponseWriter, r *http.Request, n int) bool {
				if n <= 3 {
					http.Error(w, "oops", http.StatusInternalServerError)
					return true
				}
				return false
			},
			check: func(t *testing.T, f *pypitest.Fake) {
				if hits := f.Hits(); len(hits) != 5 { // 3 failures, ray, debugpy
					t.Errorf("%d requests, want 5", len(hits))
				}
			},
		},
		{
			name: "500s beyond the retry budget fail",
			fault: func(w http.ResponseWriter, r *http.Request, n int) bool {
				http.Error(w, "oops", http.StatusInternalServerError)
				return true
			},
			opts:    []httpx.Option{httpx.WithRetries(2)},
			wantErr: "/simple/ray/: HTTP 500",
		},
		{
			name: "truncated body",
			fault: func(w http.ResponseWriter, r *http.Request, n int) bool {
				b := raySimpleJSON()
				w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
				w.Header().Set("Content-Length", fmt.Sprint(len(b)))
				w.Write(b[:len(b)/2])
				return true
			},
			wantErr: "/simple/ray/",
		},
		{
			name: "HTML page with status 200",
			fault: func(w http.ResponseWriter, r *http.Request, n int) bool {
				w.Header().Set("Content-Type", "text/html")
				w.Write([]byte("<!DOCTYPE html><html><body>Sign in to the Wi-Fi</body></html>"))
				return true
			},
			wantErr: `/simple/ray/ answered Content-Type "text/html", want application/vnd.pypi.simple.v1+json`,
		},
		{
			name: "timeout",
			fault: func(w http.ResponseWriter, r *http.Request, n int) bool {
				select {
				case <-time.After(2 * time.Second):
				case <-r.Context().Done():
				}
				return true
			},
			opts:    []httpx.Option{httpx.WithTimeout(100 * time.Millisecond), httpx.WithRetries(1)},
			wantErr: "/simple/ray/",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var opts []pypitest.Option
			if tc.fault != nil {
				opts = append(opts, pypitest.WithFault(tc.fault))
			}
			f := newFakePyPI(opts...)
			srv := httptest.NewServer(f)
			defer srv.Close()
			dir := t.TempDir()
			path := filepath.Join(dir, "catalog.json")
			old := []byte("{\"schemaVersion\": 1, \"describes\": \"2000-01-01\"}\n")
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
			err := refreshTo(path, mustMatrix(t), sources(srv.URL, tc.opts...))
			after, rerr := os.ReadFile(path)
			if rerr != nil {
				t.Fatal(rerr)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("directory holds %v, want only catalog.json (no temp files)", names)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), srv.URL) {
					t.Fatalf("error = %v, want one naming %s and containing %q", err, srv.URL, tc.wantErr)
				}
				if string(after) != string(old) {
					t.Errorf("failed refresh changed catalog.json:\n%s", after)
				}
				return
			}
			if err != nil {
				t.Fatalf("did not recover: %v", err)
			}
			c, err := catalog.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Ray) == 0 || c.Ray[0].Version != "2.46.0" {
				t.Errorf("refreshed catalog Ray = %+v", c.Ray)
			}
			if tc.check != nil {
				tc.check(t, f)
			}
		})
	}
}

func TestWriteDeterministic(t *testing.T) {
	srv := httptest.NewServer(newFakePyPI())
	defer srv.Close()
	dir := t.TempDir()
	var outs []string
	for i := 0; i < 2; i++ {
		p := filepath.Join(dir, fmt.Sprintf("c%d.json", i))
		if err := refreshTo(p, mustMatrix(t), sources(srv.URL)); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		outs = append(outs, string(b))
	}
	if outs[0] != outs[1] {
		t.Error("two refreshes of the same upstream state wrote different bytes")
	}
	if !strings.HasSuffix(outs[0], "}\n") || !strings.Contains(outs[0], "\n  \"schemaVersion\": 1,") {
		t.Errorf("want 2-space indented JSON with a trailing newline, got:\n%.200s", outs[0])
	}
}

func TestLoadRejects(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown field": `{"schemaVersion": 1, "describes": "x", "bogus": 1}`,
		"schema":        `{"schemaVersion": 2, "describes": "x"}`,
		"not json":      `<html>`,
	} {
		p := filepath.Join(dir, "c.json")
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := catalog.Load(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: Load error = %v, want one naming %s", name, err, p)
		}
	}
}
