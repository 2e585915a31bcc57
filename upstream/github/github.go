package github

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// DefaultBaseURL is the public GitHub API.
const DefaultBaseURL = "https://api.github.com"

// maxPages bounds pagination (100 releases a page).
const maxPages = 5

// Client lists coder/code-server releases.
type Client struct {
	base, repo string
	hc         *http.Client
	overrides  map[string]string
	token      string
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
// sent only to the API base URL, never with downloads.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// apiHeader is the header of every API request.
func (c *Client) apiHeader() http.Header {
	h := http.Header{"Accept": {"application/vnd.github+json"}}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	return h
}

// New returns a client for coder/code-server releases.
func New(opts ...Option) *Client {
	c := &Client{base: DefaultBaseURL, repo: "coder/code-server"}
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
