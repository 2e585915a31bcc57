package github

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/upstream/github/githubtest"
	"github.com/imagectl/imagectl/upstream/httpx"
)

func TestCodeServers(t *testing.T) {
	cs := func(tag string, draft, pre bool, published string) githubtest.Release {
		return githubtest.Release{Repository: "coder/code-server", TagName: tag, Draft: draft, Prerelease: pre, PublishedAt: published}
	}
	srv := httptest.NewServer(githubtest.New([]githubtest.Release{
		cs("v4.102.0-rc.1", false, true, "2025-07-10T00:00:00Z"),
		cs("v4.101.3", true, false, ""),
		cs("v4.101.2", false, false, "2025-06-25T00:00:00Z"),
		cs("v4.99.4", false, false, "2025-05-01T00:00:00Z"),
		cs("v4.90.0", false, false, "2024-06-01T00:00:00Z"),
	}))
	defer srv.Close()
	c := New(WithBaseURL(srv.URL), WithVSCodeOverrides(map[string]string{"4.99.4": "1.99.3"}))
	got, err := c.CodeServers(context.Background(), func(v string) bool { return v != "4.90.0" })
	if err != nil {
		t.Fatal(err)
	}
	want := []catalog.CodeServer{
		{Version: "4.101.2", VSCode: "1.101.2", Tag: "4.101.2"},
		{Version: "4.99.4", VSCode: "1.99.3", Tag: "4.99.4"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Releases past the first page (GitHub lists 100 at the most) count.
func TestCodeServersPages(t *testing.T) {
	var rels []githubtest.Release
	for i := 150; i > 0; i-- { // newest first: 150 release candidates fill page 1
		rels = append(rels, githubtest.Release{Repository: "coder/code-server", TagName: fmt.Sprintf("v4.102.0-rc.%d", i), Prerelease: true, PublishedAt: "2025-07-10T00:00:00Z"})
	}
	rels = append(rels, githubtest.Release{Repository: "coder/code-server", TagName: "v4.101.2", PublishedAt: "2025-06-25T00:00:00Z"})
	f := githubtest.New(rels)
	srv := httptest.NewServer(f)
	defer srv.Close()
	got, err := New(WithBaseURL(srv.URL)).CodeServers(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []catalog.CodeServer{{Version: "4.101.2", VSCode: "1.101.2", Tag: "4.101.2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if n := len(f.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (two pages of 100): %+v", n, f.Requests())
	}
}

// The token goes with API requests only, never with downloads (SHA256SUMS).
func TestTokenOnlyForTheAPI(t *testing.T) {
	as := realisticAssets()
	srv := serve(t, as, githubtest.Sums(as))
	rec := &authRecorder{rt: http.DefaultTransport}
	c := New(WithBaseURL(srv.URL), WithToken("s3cret"), WithLoopbackToken(), WithHTTPClient(httpx.New(httpx.WithTransport(rec))))
	if _, err := c.PythonRuntimes(context.Background(), st, keep312); err != nil {
		t.Fatal(err)
	}
	var api, downloads int
	for path, auth := range rec.seen {
		if strings.HasPrefix(path, "/repos/") {
			api++
			if auth != "Bearer s3cret" {
				t.Errorf("API request %s: Authorization = %q, want the token", path, auth)
			}
		} else {
			downloads++
			if auth != "" {
				t.Errorf("download %s sent Authorization %q: the token must stay with the API", path, auth)
			}
		}
	}
	if api == 0 || downloads == 0 {
		t.Fatalf("saw %d API requests and %d downloads, want both", api, downloads)
	}
}

// authRecorder records the Authorization header of every request by path.
type authRecorder struct {
	rt   http.RoundTripper
	mu   sync.Mutex
	seen map[string]string
}

func (a *authRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	a.mu.Lock()
	if a.seen == nil {
		a.seen = map[string]string{}
	}
	a.seen[r.URL.Path] = r.Header.Get("Authorization")
	a.mu.Unlock()
	return a.rt.RoundTrip(r)
}
