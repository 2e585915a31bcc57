package githubtest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/upstream/github/githubtest"
)

func get(t *testing.T, u string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

type asset struct {
	ID                 int64   `json:"id"`
	Name               string  `json:"name"`
	Size               int64   `json:"size"`
	Digest             *string `json:"digest"`
	BrowserDownloadURL string  `json:"browser_download_url"`
}

// The shapes and pagination clients rely on.
func TestShapes(t *testing.T) {
	x := githubtest.Asset{Name: "a+b.tar.gz", SHA256: strings.Repeat("1", 64), Digest: true, Size: 7}
	sums := githubtest.SumsAsset(githubtest.Sums([]githubtest.Asset{x}))
	f := githubtest.New([]githubtest.Release{{Repository: "o/r", ID: 9, TagName: "t1", Padding: 45, Assets: []githubtest.Asset{x, sums}}})
	srv := httptest.NewServer(f)
	defer srv.Close()

	resp, b := get(t, srv.URL+"/repos/o/r/releases/tags/t1")
	var rel struct {
		ID      int64   `json:"id"`
		TagName string  `json:"tag_name"`
		Draft   bool    `json:"draft"`
		Assets  []asset `json:"assets"`
	}
	if err := json.Unmarshal(b, &rel); err != nil || resp.StatusCode != 200 {
		t.Fatalf("release: %d %s: %v", resp.StatusCode, b, err)
	}
	if rel.ID != 9 || rel.TagName != "t1" || len(rel.Assets) != githubtest.EmbeddedAssets {
		t.Errorf("release %+v, want id 9, tag t1, %d embedded assets", rel, githubtest.EmbeddedAssets)
	}

	// Default page size 30, cap 100, [] past the end, Link to the next page.
	for _, tc := range []struct {
		query    string
		want     int
		nextLink bool
	}{
		{"", 30, true}, {"?page=2", 17, false}, {"?per_page=500", 47, false},
		{"?per_page=40&page=2", 7, false}, {"?per_page=40&page=3", 0, false},
	} {
		resp, b := get(t, srv.URL+"/repos/o/r/releases/9/assets"+tc.query)
		var as []asset
		if err := json.Unmarshal(b, &as); err != nil || as == nil {
			t.Fatalf("assets%s: %s: %v", tc.query, b, err)
		}
		if len(as) != tc.want || strings.Contains(resp.Header.Get("Link"), `rel="next"`) != tc.nextLink {
			t.Errorf("assets%s: %d assets, Link %q; want %d, next link %v", tc.query, len(as), resp.Header.Get("Link"), tc.want, tc.nextLink)
		}
	}
	_, b = get(t, srv.URL+"/repos/o/r/releases/9/assets?per_page=100")
	var as []asset
	json.Unmarshal(b, &as)
	got := as[45]
	d := "sha256:" + x.SHA256
	want := asset{ID: got.ID, Name: x.Name, Size: 7, Digest: &d, BrowserDownloadURL: srv.URL + "/o/r/releases/download/t1/a%2Bb.tar.gz"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("asset (-want +got):\n%s", diff)
	}
	if as[0].Digest != nil || as[46].Digest != nil || as[46].Size != int64(len(sums.Body)) {
		t.Errorf("padding %+v and SHA256SUMS %+v: want null digests and the body's size", as[0], as[46])
	}

	resp, b = get(t, as[46].BrowserDownloadURL)
	if resp.StatusCode != 200 || string(b) != fmt.Sprintf("%s  a+b.tar.gz\n", x.SHA256) {
		t.Errorf("SHA256SUMS: %d %q", resp.StatusCode, b)
	}
	for _, p := range []string{"/repos/o/r/releases/tags/t2", "/repos/o/x/releases", "/repos/o/r/releases/8/assets"} {
		resp, b := get(t, srv.URL+p)
		if resp.StatusCode != 404 || !strings.Contains(string(b), `"message":"Not Found"`) {
			t.Errorf("%s: %d %s, want GitHub's 404", p, resp.StatusCode, b)
		}
	}
	if resp, _ := get(t, srv.URL+"/o/r/releases/download/t1/missing"); resp.StatusCode != 404 {
		t.Errorf("missing asset: %d, want 404", resp.StatusCode)
	}
	if n := len(f.Requests()); n != 12 {
		t.Errorf("%d requests recorded, want 12", n)
	}
}

// The HTML faults answer 200 with a page.
func TestHTMLFaults(t *testing.T) {
	rels := []githubtest.Release{{Repository: "o/r", TagName: "t", Assets: []githubtest.Asset{githubtest.SumsAsset("x  y\n")}}}
	for name, tc := range map[string]struct {
		opt  githubtest.Option
		path string
	}{
		"api":      {githubtest.WithHTMLAPI(), "/repos/o/r/releases/tags/t"},
		"download": {githubtest.WithHTMLDownload("SHA256SUMS"), "/o/r/releases/download/t/SHA256SUMS"},
	} {
		srv := httptest.NewServer(githubtest.New(rels, tc.opt))
		resp, b := get(t, srv.URL+tc.path)
		srv.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "<!DOCTYPE html>") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %d %s %q, want an HTML page with 200", name, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
}
