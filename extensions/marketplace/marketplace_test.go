package marketplace

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
)

// queryAnswer is shaped like a real extensionquery answer: each platform
// build its own entry, a universal build without targetPlatform, newest first.
const queryAnswer = `{"results":[{"extensions":[{"extensionId":"x","extensionName":"debugpy",
 "publisher":{"publisherName":"ms-python","displayName":"Microsoft"},
 "versions":[
  {"version":"2025.11.0","targetPlatform":"linux-x64","assetUri":"a","fallbackAssetUri":"f",
   "files":[{"assetType":"Microsoft.VisualStudio.Services.VSIXPackage","source":"s"}],
   "properties":[{"key":"Microsoft.VisualStudio.Code.Engine","value":"^1.92.0"},
                 {"key":"Microsoft.VisualStudio.Code.PreRelease","value":"true"},
                 {"key":"Microsoft.VisualStudio.Code.ExtensionDependencies","value":"ms-python.python"}]},
  {"version":"2025.10.0","targetPlatform":"linux-arm64",
   "properties":[{"key":"Microsoft.VisualStudio.Code.Engine","value":"^1.92.0"},
                 {"key":"Microsoft.VisualStudio.Code.ExtensionDependencies","value":"ms-python.python"},
                 {"key":"Microsoft.VisualStudio.Code.ExtensionPack","value":""}]},
  {"version":"2025.10.0",
   "properties":[{"key":"Microsoft.VisualStudio.Code.Engine","value":"^1.92.0"},
                 {"key":"Microsoft.VisualStudio.Code.ExtensionDependencies","value":"ms-python.python"}]},
  {"version":"2025.10.0","targetPlatform":"linux-x64",
   "properties":[{"key":"Microsoft.VisualStudio.Code.Engine","value":"^1.92.0"},
                 {"key":"Microsoft.VisualStudio.Code.ExtensionDependencies","value":"ms-python.python"}]}
 ]}]}]}`

func TestVersions(t *testing.T) {
	var gotReq QueryRequest
	var gotHeader http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/_apis/public/gallery/extensionquery" {
			http.NotFound(w, r)
			return
		}
		gotHeader = r.Header.Clone()
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &gotReq); err != nil {
			t.Errorf("request body: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, queryAnswer)
	}))
	defer srv.Close()
	c := New(WithBaseURL(srv.URL))
	got, err := c.Versions(context.Background(), "ms-python.debugpy")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(NewQuery("ms-python.debugpy"), gotReq); diff != "" {
		t.Errorf("query body (-want +got):\n%s", diff)
	}
	if gotReq.Flags != 179 {
		t.Errorf("flags = %d, want 179", gotReq.Flags)
	}
	if a := gotHeader.Get("Accept"); a != "application/json;api-version=3.0-preview.1" {
		t.Errorf("Accept = %q", a)
	}
	if ct := gotHeader.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	pkg := func(v, tp string) catalog.File {
		u := srv.URL + "/_apis/public/gallery/publishers/ms-python/vsextensions/debugpy/" + v + "/vspackage"
		if tp != "" {
			u += "?targetPlatform=" + tp
		}
		return catalog.File{URL: u}
	}
	want := []catalog.ExtensionVersion{
		{Version: "2025.11.0", PreRelease: true, Engine: "^1.92.0", Dependencies: []string{"ms-python.python"},
			Files: map[string]catalog.File{"linux-x64": pkg("2025.11.0", "linux-x64")}},
		{Version: "2025.10.0", Engine: "^1.92.0", Dependencies: []string{"ms-python.python"},
			Files: map[string]catalog.File{
				"linux-arm64": pkg("2025.10.0", "linux-arm64"),
				"universal":   pkg("2025.10.0", ""),
				"linux-x64":   pkg("2025.10.0", "linux-x64"),
			}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Versions (-want +got):\n%s", diff)
	}
}

func TestQueryErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
	}{
		{"not found", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"results":[{"extensions":[]}]}`) }},
		{"html 200", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>sign in</html>") }},
		{"500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusBadRequest) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			_, err := New(WithBaseURL(srv.URL)).Versions(context.Background(), "ms-python.python")
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
		})
	}
	if _, err := New().Versions(context.Background(), "nodot"); err == nil {
		t.Error("bad id accepted")
	}
}
