package openvsx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"golang.org/x/sync/errgroup"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// DefaultBaseURL is the public Open VSX registry.
const DefaultBaseURL = "https://open-vsx.org"

const (
	maxJSON     = 16 << 20
	pageSize    = 100
	parallelism = 4
)

// Client talks to one Open VSX registry.
type Client struct {
	base     string
	hc       *http.Client
	maxBytes int64
}

// Option configures New.
type Option func(*Client)

// WithBaseURL sets the registry base URL (default DefaultBaseURL).
func WithBaseURL(u string) Option {
	return func(c *Client) {
		if u != "" {
			c.base = strings.TrimRight(u, "/")
		}
	}
}

// WithHTTPClient sets the HTTP client (default httpx.New()).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// New returns a Client.
func New(opts ...Option) *Client {
	c := &Client{base: DefaultBaseURL, maxBytes: vsix.DefaultMaxDownloadBytes}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		c.hc = httpx.New()
	}
	return c
}

// BaseURL returns the base URL in use.
func (c *Client) BaseURL() string { return c.base }

// VersionsPage is the answer of GET /api/{ns}/{name}/versions.
type VersionsPage struct {
	Offset    int               `json:"offset"`
	TotalSize int               `json:"totalSize"`
	Versions  map[string]string `json:"versions"`
	Error     string            `json:"error,omitempty"`
}

// ExtensionJSON is the per-version metadata (ExtensionJson.java), reduced to
// what imagectl reads.
type ExtensionJSON struct {
	Namespace         string            `json:"namespace"`
	Name              string            `json:"name"`
	Version           string            `json:"version"`
	TargetPlatform    string            `json:"targetPlatform"`
	PreRelease        bool              `json:"preRelease,omitempty"`
	Engines           map[string]string `json:"engines,omitempty"`
	Dependencies      []Reference       `json:"dependencies,omitempty"`
	BundledExtensions []Reference       `json:"bundledExtensions,omitempty"`
	Downloads         map[string]string `json:"downloads,omitempty"`
	Files             map[string]string `json:"files,omitempty"`
	Error             string            `json:"error,omitempty"`
}

// Reference names another extension (ExtensionReferenceJson.java).
type Reference struct {
	URL       string `json:"url,omitempty"`
	Namespace string `json:"namespace"`
	Extension string `json:"extension"`
}

func (r Reference) id() string { return r.Namespace + "." + r.Extension }

func splitID(id string) (ns, name string, err error) {
	ns, name, ok := strings.Cut(id, ".")
	if !ok || ns == "" || name == "" || strings.ContainsAny(id, "/\\?#% ") {
		return "", "", fmt.Errorf("extension id %q: want namespace.name", id)
	}
	return ns, name, nil
}

func (c *Client) getJSON(ctx context.Context, u string, v any) error {
	resp, err := httpx.Get(ctx, c.hc, u, http.Header{"Accept": {"application/json"}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	r, err := vsix.MaybeGunzip(resp.Body, maxJSON)
	if err != nil {
		return fmt.Errorf("GET %s: %w", safetext.URL(u), err)
	}
	b, err := httpx.ReadJSONBody(r, u, maxJSON)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decoding GET %s: %w", safetext.URL(u), err)
	}
	return nil
}

// VersionList returns every version of id, newest first.
func (c *Client) VersionList(ctx context.Context, id string) ([]string, error) {
	ns, name, err := splitID(id)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for offset := 0; ; {
		u := fmt.Sprintf("%s/api/%s/%s/versions?size=%d&offset=%d", c.base, url.PathEscape(ns), url.PathEscape(name), pageSize, offset)
		var p VersionsPage
		if err := c.getJSON(ctx, u, &p); err != nil {
			return nil, fmt.Errorf("open vsx versions of %s: %w", id, err)
		}
		if p.Error != "" {
			return nil, fmt.Errorf("open vsx versions of %s: GET %s: %s", id, safetext.URL(u), safetext.Sanitize(p.Error))
		}
		for v := range p.Versions {
			seen[v] = true
		}
		offset += len(p.Versions)
		if len(p.Versions) == 0 || offset >= p.TotalSize {
			break
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sortNewestFirst(out)
	return out, nil
}

func sortNewestFirst(vs []string) {
	sort.SliceStable(vs, func(i, j int) bool {
		a, errA := semver.NewVersion(vs[i])
		b, errB := semver.NewVersion(vs[j])
		if errA == nil && errB == nil {
			if !a.Equal(b) {
				return a.GreaterThan(b)
			}
			return vs[i] > vs[j]
		}
		if (errA == nil) != (errB == nil) {
			return errA == nil
		}
		return vs[i] > vs[j]
	})
}

// Metadata returns the JSON of id@version built for targetPlatform
// (GET /api/{ns}/{name}/{targetPlatform}/{version}); an empty targetPlatform
// asks for /api/{ns}/{name}/{version}, which Open VSX answers with one of the
// builds.
func (c *Client) Metadata(ctx context.Context, id, version, targetPlatform string) (*ExtensionJSON, string, error) {
	ns, name, err := splitID(id)
	if err != nil {
		return nil, "", err
	}
	u := fmt.Sprintf("%s/api/%s/%s", c.base, url.PathEscape(ns), url.PathEscape(name))
	if targetPlatform != "" {
		u += "/" + url.PathEscape(targetPlatform)
	}
	u += "/" + url.PathEscape(version)
	var e ExtensionJSON
	if err := c.getJSON(ctx, u, &e); err != nil {
		return nil, u, fmt.Errorf("open vsx %s@%s (%s): %w", id, version, orAny(targetPlatform), err)
	}
	if e.Error != "" {
		return nil, u, fmt.Errorf("open vsx %s@%s (%s): GET %s: %s", id, version, orAny(targetPlatform), safetext.URL(u), safetext.Sanitize(e.Error))
	}
	if !strings.EqualFold(e.Namespace+"."+e.Name, id) || e.Version != version {
		return nil, u, fmt.Errorf("open vsx %s@%s: GET %s described %s", id, version, safetext.URL(u), safetext.Sanitize(e.Namespace+"."+e.Name+"@"+e.Version))
	}
	if targetPlatform != "" && e.TargetPlatform != targetPlatform {
		return nil, u, fmt.Errorf("open vsx %s@%s: GET %s described target platform %q, want %q", id, version, safetext.URL(u), e.TargetPlatform, targetPlatform)
	}
	return &e, u, nil
}

func orAny(tp string) string {
	if tp == "" {
		return "any platform"
	}
	return tp
}

// Versions lists every version of id, newest first, each with its platform
// builds keyed by target platform (Open VSX always names one; "universal" for
// a universal build). File URLs come from the downloads map; SHA256 is left
// empty (Download checks the published digest).
func (c *Client) Versions(ctx context.Context, id string) ([]catalog.ExtensionVersion, error) {
	vs, err := c.VersionList(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]catalog.ExtensionVersion, len(vs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallelism)
	for i, v := range vs {
		g.Go(func() error {
			e, _, err := c.Metadata(gctx, id, v, "")
			if err != nil {
				return err
			}
			out[i] = toCatalog(e)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func toCatalog(e *ExtensionJSON) catalog.ExtensionVersion {
	ev := catalog.ExtensionVersion{
		Version:    e.Version,
		PreRelease: e.PreRelease,
		Engine:     e.Engines["vscode"],
		Files:      map[string]catalog.File{},
	}
	for _, d := range e.Dependencies {
		ev.Dependencies = append(ev.Dependencies, d.id())
	}
	for _, d := range e.BundledExtensions {
		ev.ExtensionPack = append(ev.ExtensionPack, d.id())
	}
	for tp, u := range e.Downloads {
		ev.Files[tp] = catalog.File{URL: u}
	}
	if len(ev.Files) == 0 && e.Files["download"] != "" {
		tp := e.TargetPlatform
		if tp == "" {
			tp = vsix.Universal
		}
		ev.Files[tp] = catalog.File{URL: e.Files["download"]}
	}
	return ev
}

// Download writes the VSIX of id@version for targetPlatform to w. It reads
// the version's metadata for files.download and files.sha256, downloads the
// file, and fails when its sha256 differs from the published digest. The
// returned Origin carries the URL and the published digest.
func (c *Client) Download(ctx context.Context, id, version, targetPlatform string, w io.Writer) (vsix.Origin, error) {
	if targetPlatform == "" {
		targetPlatform = vsix.Universal
	}
	e, mu, err := c.Metadata(ctx, id, version, targetPlatform)
	if err != nil {
		return vsix.Origin{URL: mu}, err
	}
	dl := e.Files["download"]
	if dl == "" {
		return vsix.Origin{URL: mu}, fmt.Errorf("open vsx %s@%s (%s): GET %s: no files.download", id, version, targetPlatform, safetext.URL(mu))
	}
	o := vsix.Origin{URL: dl}
	if su := e.Files["sha256"]; su != "" {
		d, err := c.publishedDigest(ctx, su)
		if err != nil {
			return o, fmt.Errorf("open vsx %s@%s (%s): %w", id, version, targetPlatform, err)
		}
		o.SHA256 = d
	}
	h := sha256.New()
	n, err := vsix.Download(ctx, c.hc, dl, io.MultiWriter(w, h), c.maxBytes)
	o.Size = n
	if err != nil {
		return o, err
	}
	if got := hex.EncodeToString(h.Sum(nil)); o.SHA256 != "" && got != o.SHA256 {
		return o, fmt.Errorf("open vsx %s@%s (%s): GET %s: sha256 %s, but Open VSX publishes %s", id, version, targetPlatform, safetext.URL(dl), got, o.SHA256)
	}
	return o, nil
}

// publishedDigest reads a files.sha256 text file: a hex digest, optionally
// followed by a file name as sha256sum prints it.
func (c *Client) publishedDigest(ctx context.Context, u string) (string, error) {
	resp, err := httpx.Get(ctx, c.hc, u, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", safetext.URL(u), err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "", fmt.Errorf("GET %s: empty, expected a sha256 hex digest", safetext.URL(u))
	}
	d := strings.ToLower(f[0])
	if _, err := hex.DecodeString(d); err != nil || len(d) != 64 {
		return "", fmt.Errorf("GET %s: %q is not a sha256 hex digest", safetext.URL(u), f[0])
	}
	return d, nil
}
