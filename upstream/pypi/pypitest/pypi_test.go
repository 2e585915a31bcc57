package pypitest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// pipAccept is what pip (src/pip/_internal/index/collector.py) sends.
const pipAccept = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01"

func TestSelectContentType(t *testing.T) {
	tests := []struct{ accept, want string }{
		{"", "text/html"},
		{pipAccept, "application/vnd.pypi.simple.v1+json"},
		{"application/vnd.pypi.simple.v1+json", "application/vnd.pypi.simple.v1+json"},
		{"application/vnd.pypi.simple.v1+html", "application/vnd.pypi.simple.v1+html"},
		// None offered: warehouse falls back to text/html, never 406.
		{"application/json", "text/html"},
		{"application/vnd.pypi.simple.v2+json", "text/html"},
		{"*/*", "text/html"},
		{"application/*", "application/vnd.pypi.simple.v1+html"},
		{"text/html, application/vnd.pypi.simple.v1+json; q=0.5", "text/html"},
		{"text/html; q=0.2, application/vnd.pypi.simple.v1+json; q=0.9", "application/vnd.pypi.simple.v1+json"},
		{"application/vnd.pypi.simple.v1+json; q=0, */*", "text/html"},
	}
	for _, tc := range tests {
		if got := SelectContentType(tc.accept); got != tc.want {
			t.Errorf("SelectContentType(%q) = %q, want %q", tc.accept, got, tc.want)
		}
	}
}

func TestSimpleAPI(t *testing.T) {
	f := New([]Project{{Name: "Ray_Project", Releases: map[string][]File{
		"2.10.0":    {Wheel("ray_project-2.10.0-py3-none-any.whl")},
		"2.9.0":     {Yanked("ray_project-2.9.0-py3-none-any.whl"), {Filename: "ray_project-2.9.0.tar.gz"}},
		"2.11.0rc1": {Wheel("ray_project-2.11.0rc1-py3-none-any.whl")},
		"2.0.0":     {},
	}}})
	srv := httptest.NewServer(f)
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path, accept string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	resp := get("/simple/ray-project/", pipAccept)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.pypi.simple.v1+json" || resp.Header.Get("Vary") != "Accept" {
		t.Fatalf("JSON page: %s, Content-Type %q, Vary %q", resp.Status, resp.Header.Get("Content-Type"), resp.Header.Get("Vary"))
	}
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"api-version": "1.4", "_last-serial": 1.0}, doc["meta"]); diff != "" {
		t.Errorf("meta (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"2.9.0", "2.10.0", "2.11.0rc1"}, doc["versions"]); diff != "" {
		t.Errorf("versions, PEP 440 order, only those with files (-want +got):\n%s", diff)
	}
	var names []string
	for _, fl := range doc["files"].([]any) {
		file := fl.(map[string]any)
		names = append(names, file["filename"].(string))
		for _, key := range []string{"url", "hashes", "requires-python", "size", "upload-time", "yanked", "data-dist-info-metadata", "core-metadata", "provenance"} {
			if _, ok := file[key]; !ok {
				t.Errorf("file %s has no %q", file["filename"], key)
			}
		}
		switch file["filename"] {
		case "ray_project-2.9.0-py3-none-any.whl":
			if file["yanked"] != "broken" || file["requires-python"] != ">=3.9" {
				t.Errorf("yanked wheel: yanked %v, requires-python %v; want \"broken\", \">=3.9\"", file["yanked"], file["requires-python"])
			}
		case "ray_project-2.9.0.tar.gz":
			if file["yanked"] != false || file["requires-python"] != nil {
				t.Errorf("sdist: yanked %v, requires-python %v; want false, null", file["yanked"], file["requires-python"])
			}
		}
	}
	want := []string{"ray_project-2.9.0-py3-none-any.whl", "ray_project-2.9.0.tar.gz", "ray_project-2.10.0-py3-none-any.whl", "ray_project-2.11.0rc1-py3-none-any.whl"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("files, by version then name (-want +got):\n%s", diff)
	}

	for _, accept := range []string{"", "application/json"} {
		resp := get("/simple/ray-project/", accept)
		b, _ := io.ReadAll(resp.Body)
		if resp.Header.Get("Content-Type") != "text/html" || !strings.Contains(string(b), `#sha256=`) {
			t.Errorf("Accept %q: Content-Type %q, want the HTML page", accept, resp.Header.Get("Content-Type"))
		}
	}
	for path, loc := range map[string]string{"/simple/Ray_Project/": "/simple/ray-project/", "/simple/ray-project": "/simple/ray-project/", "/simple/nope": "/simple/nope/"} {
		resp := get(path, pipAccept)
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != loc {
			t.Errorf("GET %s: %s to %q, want 301 to %s", path, resp.Status, resp.Header.Get("Location"), loc)
		}
	}
	resp = get("/simple/nope/", pipAccept)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusNotFound || string(b) != "404 Not Found" {
		t.Errorf("unknown project: %s %q, want 404 \"404 Not Found\"", resp.Status, b)
	}
	resp = get("/simple/", pipAccept)
	var index struct {
		Meta     map[string]any   `json:"meta"`
		Projects []map[string]any `json:"projects"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&index); err != nil || len(index.Projects) != 1 || index.Projects[0]["name"] != "Ray_Project" || index.Meta["api-version"] != "1.4" {
		t.Errorf("project list: %+v, %v", index, err)
	}
}
