package githubtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// EmbeddedAssets is how many assets a release embeds in its "assets" list;
// the rest are only in the assets endpoint.
const EmbeddedAssets = 3

// Page sizes of GitHub's list endpoints.
const (
	DefaultPerPage = 30
	MaxPerPage     = 100
)

// Asset is one file of a release.
type Asset struct {
	Name string
	// Body is what the asset's browser_download_url serves.
	Body []byte
	// Size is the size the API reports (default len(Body)).
	Size int64
	// SHA256 is the asset's hex sha256, as Sums lists it (tests rarely give
	// real bodies, so it is not computed from Body; see the SHA256 function).
	SHA256 string
	// Digest makes the API report "digest": "sha256:<SHA256>"; without it
	// the digest is null, as on releases older than GitHub's digests.
	Digest bool
	// ContentType is the API's content_type and the download's Content-Type
	// (default application/octet-stream).
	ContentType string
}

// Release is one release of a repository.
type Release struct {
	// Repository is owner/name.
	Repository string
	// ID is the release id (default: its position among all releases, from 1).
	ID         int64
	TagName    string
	Name       string // default TagName
	Draft      bool
	Prerelease bool
	// PublishedAt is an RFC 3339 time; "" reports null (as for a draft).
	PublishedAt string
	Assets      []Asset
	// Padding is how many other assets (tiny Windows tarballs named
	// cpython-3.9.{i}+{TagName}-x86_64-pc-windows-msvc-shared-install_only.tar.gz,
	// size 1, no digest) come before Assets in the listing.
	Padding int
}

// SumsAsset is a SHA256SUMS asset with body.
func SumsAsset(body string) Asset {
	return Asset{Name: "SHA256SUMS", Body: []byte(body)}
}

// Sums is the SHA256SUMS body listing assets, one "<SHA256>  <name>" line
// each, in order; assets without a SHA256 are left out.
func Sums(assets []Asset) string {
	var b strings.Builder
	for _, a := range assets {
		if a.SHA256 != "" {
			fmt.Fprintf(&b, "%s  %s\n", a.SHA256, a.Name)
		}
	}
	return b.String()
}

// SHA256 is the hex sha256 of b (an Asset's SHA256 for a Body).
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Request is one request the fake received.
type Request struct {
	// URI is the path and query as sent.
	URI string
	// Authorization is the request's Authorization header.
	Authorization string
}

// Option configures New.
type Option func(*Fake)

// WithHTMLAPI makes every API request (/repos/...) answer an HTML page with
// status 200.
func WithHTMLAPI() Option { return func(f *Fake) { f.htmlAPI = true } }

// WithHTMLDownload makes the downloads of the assets named names answer an
// HTML page with status 200 (a proxy's or rate limiter's page).
func WithHTMLDownload(names ...string) Option {
	return func(f *Fake) {
		for _, n := range names {
			f.htmlDownload[n] = true
		}
	}
}

// Fake is an http.Handler answering like api.github.com and github.com's
// release downloads.
type Fake struct {
	releases     []Release
	htmlAPI      bool
	htmlDownload map[string]bool

	mu   sync.Mutex
	reqs []Request
}

// New returns a fake serving releases; each repository's releases are
// listed in the order given (GitHub lists newest first).
func New(releases []Release, opts ...Option) *Fake {
	f := &Fake{htmlDownload: map[string]bool{}}
	for i, r := range releases {
		if r.ID == 0 {
			r.ID = int64(i + 1)
		}
		if r.Name == "" {
			r.Name = r.TagName
		}
		pad := make([]Asset, 0, r.Padding+len(r.Assets))
		for j := range r.Padding {
			pad = append(pad, Asset{Name: fmt.Sprintf("cpython-3.9.%d+%s-x86_64-pc-windows-msvc-shared-install_only.tar.gz", j, r.TagName), Size: 1})
		}
		r.Assets = append(pad, r.Assets...)
		f.releases = append(f.releases, r)
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

// Requests returns every request received, in order.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.reqs...)
}

// ServeHTTP implements http.Handler.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.reqs = append(f.reqs, Request{URI: r.URL.RequestURI(), Authorization: r.Header.Get("Authorization")})
	f.mu.Unlock()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeJSON(w, http.StatusNotFound, notFound)
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	base := scheme + "://" + r.Host
	p := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(p) > 0 && p[0] == "repos" {
		f.serveAPI(w, r, base, p[1:])
		return
	}
	// {owner}/{repo}/releases/download/{tag}/{name}
	if len(p) == 6 && p[2] == "releases" && p[3] == "download" {
		if rel, ok := f.byTag(p[0]+"/"+p[1], p[4]); ok {
			for _, a := range rel.Assets {
				if a.Name != p[5] {
					continue
				}
				if f.htmlDownload[a.Name] {
					writeHTML(w)
					return
				}
				w.Header().Set("Content-Type", contentType(a))
				w.Header().Set("Content-Length", strconv.Itoa(len(a.Body)))
				w.Write(a.Body)
				return
			}
		}
	}
	http.Error(w, "Not Found", http.StatusNotFound)
}

// notFound is GitHub's 404 body.
var notFound = map[string]string{"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}

// serveAPI answers /repos/{p...}.
func (f *Fake) serveAPI(w http.ResponseWriter, r *http.Request, base string, p []string) {
	if f.htmlAPI {
		writeHTML(w)
		return
	}
	if len(p) < 3 || p[2] != "releases" {
		writeJSON(w, http.StatusNotFound, notFound)
		return
	}
	repo := p[0] + "/" + p[1]
	switch {
	case len(p) == 3:
		var list []map[string]any
		for _, rel := range f.releases {
			if rel.Repository == repo {
				list = append(list, releaseDoc(base, rel))
			}
		}
		if list == nil {
			writeJSON(w, http.StatusNotFound, notFound)
			return
		}
		writePage(w, r, base, list)
	case len(p) == 5 && p[3] == "tags":
		if rel, ok := f.byTag(repo, p[4]); ok {
			writeJSON(w, http.StatusOK, releaseDoc(base, rel))
			return
		}
		writeJSON(w, http.StatusNotFound, notFound)
	case len(p) == 4 || (len(p) == 5 && p[4] == "assets"):
		for _, rel := range f.releases {
			if rel.Repository != repo || strconv.FormatInt(rel.ID, 10) != p[3] {
				continue
			}
			if len(p) == 4 {
				writeJSON(w, http.StatusOK, releaseDoc(base, rel))
			} else {
				writePage(w, r, base, assetDocs(base, rel))
			}
			return
		}
		writeJSON(w, http.StatusNotFound, notFound)
	default:
		writeJSON(w, http.StatusNotFound, notFound)
	}
}

func (f *Fake) byTag(repo, tag string) (Release, bool) {
	for _, rel := range f.releases {
		if rel.Repository == repo && rel.TagName == tag {
			return rel, true
		}
	}
	return Release{}, false
}

// writePage writes the page of all that per_page and page ask for, with
// GitHub's Link header.
func writePage[T any](w http.ResponseWriter, r *http.Request, base string, all []T) {
	q := r.URL.Query()
	perPage, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || perPage <= 0 {
		perPage = DefaultPerPage
	}
	perPage = min(perPage, MaxPerPage)
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page <= 0 {
		page = 1
	}
	last := max(1, (len(all)+perPage-1)/perPage)
	link := func(n int, rel string) string {
		q.Set("per_page", strconv.Itoa(perPage))
		q.Set("page", strconv.Itoa(n))
		return fmt.Sprintf("<%s%s?%s>; rel=%q", base, r.URL.Path, q.Encode(), rel)
	}
	var links []string
	if page > 1 {
		links = append(links, link(page-1, "prev"))
	}
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	lo, hi := min((page-1)*perPage, len(all)), min(page*perPage, len(all))
	writeJSON(w, http.StatusOK, append([]T{}, all[lo:hi]...))
}

func releaseDoc(base string, rel Release) map[string]any {
	api := fmt.Sprintf("%s/repos/%s/releases/%d", base, rel.Repository, rel.ID)
	var published any
	if rel.PublishedAt != "" {
		published = rel.PublishedAt
	}
	assets := assetDocs(base, rel)
	return map[string]any{
		"url":              api,
		"assets_url":       api + "/assets",
		"html_url":         fmt.Sprintf("%s/%s/releases/tag/%s", base, rel.Repository, url.PathEscape(rel.TagName)),
		"id":               rel.ID,
		"tag_name":         rel.TagName,
		"target_commitish": "main",
		"name":             rel.Name,
		"draft":            rel.Draft,
		"prerelease":       rel.Prerelease,
		"created_at":       "2025-08-08T00:00:00Z",
		"published_at":     published,
		"assets":           assets[:min(EmbeddedAssets, len(assets))],
	}
}

func assetDocs(base string, rel Release) []map[string]any {
	out := []map[string]any{}
	for i, a := range rel.Assets {
		id := rel.ID*100000 + int64(i) + 1
		size := a.Size
		if size == 0 {
			size = int64(len(a.Body))
		}
		var digest any
		if a.Digest {
			digest = "sha256:" + a.SHA256
		}
		out = append(out, map[string]any{
			"url":                  fmt.Sprintf("%s/repos/%s/releases/assets/%d", base, rel.Repository, id),
			"id":                   id,
			"name":                 a.Name,
			"label":                "",
			"content_type":         contentType(a),
			"state":                "uploaded",
			"size":                 size,
			"digest":               digest,
			"download_count":       0,
			"created_at":           "2025-08-08T00:00:00Z",
			"updated_at":           "2025-08-08T00:00:00Z",
			"browser_download_url": DownloadURL(base, rel.Repository, rel.TagName, a.Name),
		})
	}
	return out
}

// DownloadURL is the browser_download_url of asset name of release tag of
// repo on the fake at base: GitHub escapes the name, "+" included (%2B).
func DownloadURL(base, repo, tag, name string) string {
	esc := func(s string) string { return strings.ReplaceAll(url.PathEscape(s), "+", "%2B") }
	return fmt.Sprintf("%s/%s/releases/download/%s/%s", base, repo, esc(tag), esc(name))
}

func contentType(a Asset) string {
	if a.ContentType != "" {
		return a.ContentType
	}
	return "application/octet-stream"
}

func writeHTML(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, "<!DOCTYPE html><html><head><title>Sign in to GitHub</title></head><body>Too many requests</body></html>")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
}
