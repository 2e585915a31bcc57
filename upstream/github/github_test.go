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
	"github.com/imagectl/imagectl/upstream/httpx"
)

func TestCodeServers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/repos/coder/code-server/releases" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[
 {"tag_name":"v4.102.0-rc.1","draft":false,"prerelease":true,"published_at":"2025-07-10T00:00:00Z"},
 {"tag_name":"v4.101.3","draft":true,"prerelease":false,"published_at":null},
 {"tag_name":"v4.101.2","draft":false,"prerelease":false,"published_at":"2025-06-25T00:00:00Z"},
 {"tag_name":"v4.99.4","draft":false,"prerelease":false,"published_at":"2025-05-01T00:00:00Z"},
 {"tag_name":"v4.90.0","draft":false,"prerelease":false,"published_at":"2024-06-01T00:00:00Z"}]`)
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

// The token goes with API requests only, never with downloads (SHA256SUMS).
func TestTokenOnlyForTheAPI(t *testing.T) {
	f := &fakeRelease{tag: "20250808", assets: realisticAssets()}
	f.sums = sumsOf(f.assets, "")
	srv := f.server(t)
	rec := &authRecorder{rt: http.DefaultTransport}
	c := New(WithBaseURL(srv.URL), WithToken("s3cret"), WithHTTPClient(httpx.New(httpx.WithTransport(rec))))
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
