package github

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/upstream/github/githubtest"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// The token is sent only over HTTPS and only to the token host
// (api.github.com unless named otherwise): an upstreams.github that names
// another host, or plain HTTP, gets no Authorization header. Loopback over
// HTTP is allowed only through WithLoopbackToken.
func TestTokenOnlyOverHTTPSToTheTokenHost(t *testing.T) {
	rels := []githubtest.Release{{Repository: "coder/code-server", TagName: "v4.101.2", PublishedAt: "2025-06-25T00:00:00Z"}}
	plain := httptest.NewServer(githubtest.New(rels))
	defer plain.Close()
	tls := httptest.NewTLSServer(githubtest.New(rels))
	defer tls.Close()
	tlsHost := mustHost(t, tls.URL)
	for _, tc := range []struct {
		name   string
		srv    *httptest.Server
		opts   []Option
		sent   bool
		whyNot string
	}{
		{"plain HTTP to a host that is not the token host", plain, nil, false, "only over HTTPS"},
		{"HTTPS to a host that is not the token host", tls, nil, false, "only to api.github.com"},
		{"plain HTTP to the named token host", plain, []Option{WithTokenHost(mustHost(t, plain.URL))}, false, "only over HTTPS"},
		{"HTTPS to the named token host", tls, []Option{WithTokenHost(tlsHost)}, true, ""},
		{"plain HTTP to loopback, allowed explicitly", plain, []Option{WithLoopbackToken()}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &authRecorder{rt: tc.srv.Client().Transport}
			opts := append([]Option{WithBaseURL(tc.srv.URL), WithToken("s3cret"), WithHTTPClient(httpx.New(httpx.WithTransport(rec)))}, tc.opts...)
			c := New(opts...)
			if _, err := c.CodeServers(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			if len(rec.seen) == 0 {
				t.Fatal("no request seen")
			}
			for path, auth := range rec.seen {
				if tc.sent && auth != "Bearer s3cret" {
					t.Errorf("%s: Authorization = %q, want the token", path, auth)
				}
				if !tc.sent && auth != "" {
					t.Errorf("%s: Authorization = %q sent to %s", path, auth, tc.srv.URL)
				}
			}
			err := c.TokenError()
			if tc.sent != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.whyNot)) {
				t.Errorf("TokenError = %v, want %q", err, tc.whyNot)
			}
		})
	}
	// The defaults: the public API gets the token.
	if err := New(WithToken("x")).TokenError(); err != nil {
		t.Errorf("TokenError for %s = %v", DefaultBaseURL, err)
	}
	if err := New(WithToken("x"), WithBaseURL("https://api.github.com.evil.example")).TokenError(); err == nil {
		t.Error("a look-alike host gets the token")
	}
}

func mustHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

var _ http.RoundTripper = (*authRecorder)(nil)
