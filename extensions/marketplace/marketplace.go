package marketplace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/upstream/httpx"
	"github.com/imagectl/imagectl/vscode/vsixmanifest"
)

// DefaultBaseURL is the public VS Marketplace.
const DefaultBaseURL = "https://marketplace.visualstudio.com"

// Query constants from microsoft/vscode extensionGalleryService.ts.
const (
	FilterTypeExtensionName    = 7
	FilterTypeTarget           = 8
	FilterTypeExcludeWithFlags = 12
	// Flags = IncludeVersions|IncludeFiles|IncludeVersionProperties|
	// ExcludeNonValidated|IncludeAssetUri.
	Flags = 0x1 | 0x2 | 0x10 | 0x20 | 0x80 // 179

	AcceptHeader = "application/json;api-version=3.0-preview.1"

	AssetVSIX     = "Microsoft.VisualStudio.Services.VSIXPackage"
	AssetManifest = "Microsoft.VisualStudio.Code.Manifest"
)

const maxQueryBody = 64 << 20

// Client talks to one Marketplace.
type Client struct {
	base     string
	hc       *http.Client
	maxBytes int64
}

// Option configures New.
type Option func(*Client)

// WithBaseURL sets the Marketplace base URL (default DefaultBaseURL).
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

// QueryRequest is the body of an extensionquery POST.
type QueryRequest struct {
	Filters    []Filter `json:"filters"`
	AssetTypes []string `json:"assetTypes"`
	Flags      int      `json:"flags"`
}

// Filter is one filter of a QueryRequest.
type Filter struct {
	Criteria   []Criterion `json:"criteria"`
	PageNumber int         `json:"pageNumber"`
	PageSize   int         `json:"pageSize"`
	SortBy     int         `json:"sortBy"`
	SortOrder  int         `json:"sortOrder"`
}

// Criterion is one criterion of a Filter.
type Criterion struct {
	FilterType int    `json:"filterType"`
	Value      string `json:"value"`
}

// QueryResponse is the answer of extensionquery.
type QueryResponse struct {
	Results []struct {
		Extensions []Extension `json:"extensions"`
	} `json:"results"`
}

// Extension is one extension in a QueryResponse.
type Extension struct {
	ExtensionID   string `json:"extensionId,omitempty"`
	ExtensionName string `json:"extensionName"`
	DisplayName   string `json:"displayName,omitempty"`
	Publisher     struct {
		PublisherName string `json:"publisherName"`
		DisplayName   string `json:"displayName,omitempty"`
	} `json:"publisher"`
	Versions []Version `json:"versions"`
}

// Version is one platform build of one version. TargetPlatform is empty for a
// universal build (the Marketplace omits the field).
type Version struct {
	Version          string     `json:"version"`
	TargetPlatform   string     `json:"targetPlatform,omitempty"`
	Flags            string     `json:"flags,omitempty"`
	LastUpdated      string     `json:"lastUpdated,omitempty"`
	AssetURI         string     `json:"assetUri,omitempty"`
	FallbackAssetURI string     `json:"fallbackAssetUri,omitempty"`
	Files            []File     `json:"files,omitempty"`
	Properties       []Property `json:"properties,omitempty"`
}

// File is one asset of a Version.
type File struct {
	AssetType string `json:"assetType"`
	Source    string `json:"source"`
}

// Property is one key/value property of a Version.
type Property struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Property returns the value of key, or "".
func (v Version) Property(key string) string {
	for _, p := range v.Properties {
		if p.Key == key {
			return p.Value
		}
	}
	return ""
}

// NewQuery returns the query VS Code sends for one extension id
// (publisher.name): all versions with files, properties and asset URIs,
// unpublished extensions excluded.
func NewQuery(id string) QueryRequest {
	return QueryRequest{
		Filters: []Filter{{
			Criteria: []Criterion{
				{FilterType: FilterTypeExtensionName, Value: id},
				{FilterType: FilterTypeTarget, Value: "Microsoft.VisualStudio.Code"},
				{FilterType: FilterTypeExcludeWithFlags, Value: "4096"},
			},
			PageNumber: 1, PageSize: 1,
		}},
		AssetTypes: []string{},
		Flags:      Flags,
	}
}

// Query returns the raw Marketplace entry of id (publisher.name).
func (c *Client) Query(ctx context.Context, id string) (*Extension, error) {
	pub, name, err := SplitID(id)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(NewQuery(id))
	if err != nil {
		return nil, err
	}
	u := c.base + "/_apis/public/gallery/extensionquery"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("marketplace query %s: %w", id, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", AcceptHeader)
	resp, err := httpx.Do(c.hc, req)
	if err != nil {
		return nil, fmt.Errorf("marketplace query %s: %w", id, err)
	}
	defer resp.Body.Close()
	r, err := vsix.MaybeGunzip(resp.Body, maxQueryBody)
	if err != nil {
		return nil, fmt.Errorf("marketplace query %s: POST %s: %w", id, safetext.URL(u), err)
	}
	b, err := httpx.ReadJSONBody(r, u, maxQueryBody)
	if err != nil {
		return nil, fmt.Errorf("marketplace query %s: %w", id, err)
	}
	var qr QueryResponse
	if err := json.Unmarshal(b, &qr); err != nil {
		return nil, fmt.Errorf("marketplace query %s: decoding POST %s: %w", id, safetext.URL(u), err)
	}
	for _, res := range qr.Results {
		for i := range res.Extensions {
			e := &res.Extensions[i]
			if strings.EqualFold(e.Publisher.PublisherName, pub) && strings.EqualFold(e.ExtensionName, name) {
				return e, nil
			}
		}
	}
	return nil, fmt.Errorf("marketplace query %s: POST %s: extension not found", id, safetext.URL(u))
}

// Versions lists every version of id, newest first as the Marketplace orders
// them, with the platform builds of one version merged into one entry whose
// Files are keyed by target platform ("universal" when the Marketplace gives
// no targetPlatform). Each File.URL is the vspackage URL this client
// downloads from; SHA256 is empty (the Marketplace publishes none).
func (c *Client) Versions(ctx context.Context, id string) ([]catalog.ExtensionVersion, error) {
	e, err := c.Query(ctx, id)
	if err != nil {
		return nil, err
	}
	return c.merge(id, e.Versions)
}

func (c *Client) merge(id string, vs []Version) ([]catalog.ExtensionVersion, error) {
	var out []catalog.ExtensionVersion
	idx := map[string]int{}
	for _, v := range vs {
		if v.Version == "" {
			return nil, fmt.Errorf("marketplace %s: a version entry has no version", id)
		}
		tp := v.TargetPlatform
		if tp == "" {
			tp = vsix.Universal
		}
		i, ok := idx[v.Version]
		if !ok {
			i = len(out)
			idx[v.Version] = i
			out = append(out, catalog.ExtensionVersion{
				Version:       v.Version,
				PreRelease:    v.Property(vsixmanifest.PropertyPreRelease) == "true",
				Engine:        v.Property(vsixmanifest.PropertyEngine),
				Dependencies:  vsixmanifest.SplitIDs(v.Property(vsixmanifest.PropertyDependencies)),
				ExtensionPack: vsixmanifest.SplitIDs(v.Property(vsixmanifest.PropertyExtensionPack)),
				Files:         map[string]catalog.File{},
			})
		}
		ev := &out[i]
		if ev.Engine == "" {
			ev.Engine = v.Property(vsixmanifest.PropertyEngine)
		}
		u, err := c.DownloadURL(id, v.Version, tp)
		if err != nil {
			return nil, err
		}
		ev.Files[tp] = catalog.File{URL: u}
	}
	return out, nil
}

// SplitID splits publisher.name.
func SplitID(id string) (publisher, name string, err error) {
	pub, name, ok := strings.Cut(id, ".")
	if !ok || pub == "" || name == "" || strings.ContainsAny(id, "/\\?#% ") {
		return "", "", fmt.Errorf("extension id %q: want publisher.name", id)
	}
	return pub, name, nil
}

// DownloadURL returns the vspackage URL of id@version built for
// targetPlatform. A platform build always carries ?targetPlatform= (without it
// the Marketplace answers with an arbitrary build of a platform-only
// extension); a universal build carries none, as VS Code does.
func (c *Client) DownloadURL(id, version, targetPlatform string) (string, error) {
	pub, name, err := SplitID(id)
	if err != nil {
		return "", err
	}
	if version == "" || strings.ContainsAny(version, "/\\?#% ") {
		return "", fmt.Errorf("extension %s: bad version %q", id, version)
	}
	u := fmt.Sprintf("%s/_apis/public/gallery/publishers/%s/vsextensions/%s/%s/vspackage",
		c.base, url.PathEscape(pub), url.PathEscape(name), url.PathEscape(version))
	if targetPlatform != "" && targetPlatform != vsix.Universal {
		u += "?targetPlatform=" + url.QueryEscape(targetPlatform)
	}
	return u, nil
}

// Download writes the VSIX of id@version for targetPlatform to w (gunzipped
// when the body is gzip, whatever the headers say) and returns the URL it
// came from. The body must be a zip; an HTML page is rejected.
func (c *Client) Download(ctx context.Context, id, version, targetPlatform string, w io.Writer) (vsix.Origin, error) {
	u, err := c.DownloadURL(id, version, targetPlatform)
	if err != nil {
		return vsix.Origin{}, err
	}
	n, err := vsix.Download(ctx, c.hc, u, w, c.maxBytes)
	if err != nil {
		return vsix.Origin{URL: u}, err
	}
	return vsix.Origin{URL: u, Size: n}, nil
}
