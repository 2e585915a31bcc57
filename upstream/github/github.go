package github

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// DefaultBaseURL is the public GitHub API.
const DefaultBaseURL = "https://api.github.com"

// DefaultTokenHost is the one host a token is sent to unless WithTokenHost
// names another.
const DefaultTokenHost = "api.github.com"

// maxPages bounds pagination (100 releases a page).
const maxPages = 5

// Client lists coder/code-server releases.
type Client struct {
	base, repo    string
	hc            *http.Client
	overrides     map[string]string
	token         string
	tokenHost     string
	loopbackToken bool
}

// Option configures New.
type Option func(*Client)

// WithBaseURL sets the API base URL.
func WithBaseURL(u string) Option { return func(c *Client) { c.base = strings.TrimRight(u, "/") } }

// WithHTTPClient sets the HTTP client (default httpx.New()).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithVSCodeOverrides maps code-server versions to their VS Code where the
// 4.X.Y -> 1.X.Y rule does not hold.
func WithVSCodeOverrides(m map[string]string) Option { return func(c *Client) { c.overrides = m } }

// WithToken authenticates API requests (GitHub allows 60 unauthenticated
// requests an hour per address, which shared CI runners exhaust). The token is
// sent only with API requests, never with downloads, and only when the API
// base URL is HTTPS on the token host (see WithTokenHost and TokenError): a
// base URL from matrix.yaml or the environment naming another host, or plain
// HTTP, gets no token.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithTokenHost sets the one host the token may be sent to (default
// DefaultTokenHost; a GitHub Enterprise API host for its operator). Empty
// keeps the default.
func WithTokenHost(host string) Option {
	return func(c *Client) {
		if host != "" {
			c.tokenHost = host
		}
	}
}

// WithLoopbackToken also sends the token over plain HTTP to a loopback API
// (127.0.0.1, ::1, localhost): for tests against a local fake only. It is
// never the default and no flag sets it.
func WithLoopbackToken() Option { return func(c *Client) { c.loopbackToken = true } }

// TokenError says why the token is not sent to the API base URL, or is nil
// when it is sent (or there is no token).
func (c *Client) TokenError() error {
	if c.token == "" {
		return nil
	}
	u, err := url.Parse(c.base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("GitHub token not sent: API base URL %q does not parse", safetext.URL(c.base))
	}
	host := u.Hostname()
	if c.loopbackToken && (u.Scheme == "http" || u.Scheme == "https") && isLoopback(host) {
		return nil
	}
	if u.Scheme != "https" {
		return fmt.Errorf("GitHub token not sent to %s: only over HTTPS", safetext.URL(c.base))
	}
	if !strings.EqualFold(u.Host, c.tokenHost) && !strings.EqualFold(host, c.tokenHost) {
		return fmt.Errorf("GitHub token not sent to %s: only to %s (a GitHub Enterprise API host must be named as the token host)", safetext.URL(c.base), c.tokenHost)
	}
	return nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// apiHeader is the header of every API request (all of which go to the
// base URL): the token only where TokenError allows it.
func (c *Client) apiHeader() http.Header {
	h := http.Header{"Accept": {"application/vnd.github+json"}}
	if c.token != "" && c.TokenError() == nil {
		h.Set("Authorization", "Bearer "+c.token)
	}
	return h
}

// New returns a client for coder/code-server releases.
func New(opts ...Option) *Client {
	c := &Client{base: DefaultBaseURL, repo: "coder/code-server", tokenHost: DefaultTokenHost}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		c.hc = httpx.New()
	}
	return c
}

type release struct {
	TagName    string `json:"tag_name"`
	Draft      bool   `json:"draft"`
	Prerelease bool   `json:"prerelease"`
}

// CodeServers lists published, non-pre-release code-server versions for
// which keep returns true. Tag is the version (linuxserver's plain tag).
func (c *Client) CodeServers(ctx context.Context, keep func(version string) bool) ([]catalog.CodeServer, error) {
	var out []catalog.CodeServer
	for page := 1; page <= maxPages; page++ {
		u := fmt.Sprintf("%s/repos/%s/releases?per_page=100&page=%d", c.base, c.repo, page)
		resp, err := httpx.Get(ctx, c.hc, u, c.apiHeader())
		if err != nil {
			return nil, err
		}
		b, err := httpx.ReadJSONBody(resp.Body, u, 32<<20)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		var rs []release
		if err := json.Unmarshal(b, &rs); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", u, err)
		}
		for _, r := range rs {
			v := strings.TrimPrefix(r.TagName, "v")
			if r.Draft || r.Prerelease || catalog.IsPreRelease(v) || (keep != nil && !keep(v)) {
				continue
			}
			vscode, err := catalog.VSCodeFor(v, c.overrides)
			if err != nil {
				continue
			}
			out = append(out, catalog.CodeServer{Version: v, VSCode: vscode, Tag: v})
		}
		if len(rs) < 100 {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return catalog.CompareVersions(out[i].Version, out[j].Version) > 0 })
	return out, nil
}
