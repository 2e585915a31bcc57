package pypi

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/pep440"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// DefaultBaseURL is the public PyPI.
const DefaultBaseURL = "https://pypi.org"

// SimpleJSON is the media type of the Simple API's JSON form, version 1
// (PEP 691): what Releases asks for and accepts.
const SimpleJSON = "application/vnd.pypi.simple.v1+json"

// maxBody bounds a project page (ray's lists some thousands of files).
const maxBody = 128 << 20

// maxABI3Minor is the highest CPython minor an abi3 wheel is assumed to cover.
const maxABI3Minor = 14

// Client reads the Simple API of a PyPI-like index.
type Client struct {
	base string
	hc   *http.Client
}

// Option configures New.
type Option func(*Client)

// WithBaseURL sets the PyPI base URL (default DefaultBaseURL); project
// pages are {base}/simple/{project}/.
func WithBaseURL(u string) Option { return func(c *Client) { c.base = strings.TrimRight(u, "/") } }

// WithHTTPClient sets the HTTP client (default httpx.New()).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// New returns a client.
func New(opts ...Option) *Client {
	c := &Client{base: DefaultBaseURL}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		c.hc = httpx.New()
	}
	return c
}

// simpleProject is the part of a PEP 691 project page imagectl reads.
type simpleProject struct {
	Meta struct {
		APIVersion string `json:"api-version"`
	} `json:"meta"`
	Name string `json:"name"`
	// Versions is PEP 700's list of the project's versions (api-version
	// 1.1 and later); nil when the key is absent.
	Versions []string     `json:"versions"`
	Files    []simpleFile `json:"files"`
}

// simpleFile is one entry of a project page's files.
type simpleFile struct {
	Filename       string  `json:"filename"`
	RequiresPython *string `json:"requires-python"`
	// Yanked is false, true, or the reason (a string, which means yanked).
	Yanked json.RawMessage `json:"yanked"`
}

// yanked reads a file's PEP 691 yanked value.
func (f simpleFile) yanked() (bool, error) {
	if len(f.Yanked) == 0 || string(f.Yanked) == "null" {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(f.Yanked, &b); err == nil {
		return b, nil
	}
	var reason string
	if err := json.Unmarshal(f.Yanked, &reason); err != nil {
		return false, fmt.Errorf("file %s: yanked is %s, want a boolean or a reason string", f.Filename, f.Yanked)
	}
	return true, nil
}

// checkAPIVersion accepts a Simple API version 1.x with PEP 700's
// versions (1.1 and later).
func checkAPIVersion(v string) error {
	major, minor, ok := strings.Cut(v, ".")
	maj, err1 := strconv.Atoi(major)
	mnr, err2 := strconv.Atoi(minor)
	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("meta.api-version %q is not MAJOR.MINOR (PEP 629)", v)
	}
	if maj != 1 {
		return fmt.Errorf("meta.api-version %s: want major version 1 of the Simple API (PEP 691)", v)
	}
	if mnr < 1 {
		return fmt.Errorf("meta.api-version %s: want 1.1 or later (PEP 700 versions)", v)
	}
	return nil
}

// Releases returns every release of project with the Pythons its wheels
// cover per platform, from the project's Simple API page in its JSON form
// (GET {base}/simple/{normalized project}/ with Accept: SimpleJSON): PEP
// 700's versions, and each file's filename, requires-python and yanked
// (PEP 691). Releases none of whose files could be attributed to them are
// left out.
func (c *Client) Releases(ctx context.Context, project string) ([]catalog.PythonPackage, error) {
	name := imagespec.NormalizeName(project)
	u := c.base + "/simple/" + url.PathEscape(name) + "/"
	resp, err := httpx.Get(ctx, c.hc, u, http.Header{"Accept": {SimpleJSON}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !isSimpleJSON(ct) {
		return nil, fmt.Errorf("%s answered Content-Type %q, want %s (the Simple API's JSON form, PEP 691)", safetext.URL(u), ct, SimpleJSON)
	}
	b, err := httpx.ReadJSONBody(resp.Body, u, maxBody)
	if err != nil {
		return nil, err
	}
	var p simpleProject
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", safetext.URL(u), err)
	}
	if err := checkAPIVersion(p.Meta.APIVersion); err != nil {
		return nil, fmt.Errorf("%s: %w", safetext.URL(u), err)
	}
	if p.Versions == nil {
		return nil, fmt.Errorf("%s: no \"versions\" list (PEP 700)", safetext.URL(u))
	}
	if p.Files == nil {
		return nil, fmt.Errorf("%s: no \"files\" list (PEP 691)", safetext.URL(u))
	}
	files := map[string][]simpleFile{}
	for _, f := range p.Files {
		if v, ok := fileVersion(f.Filename, name, p.Versions); ok {
			files[v] = append(files[v], f)
		}
	}
	var out []catalog.PythonPackage
	for _, version := range p.Versions {
		if len(files[version]) == 0 {
			continue
		}
		if _, err := pep440.Parse(version); err != nil {
			continue // not a PEP 440 version imagectl can order; never picked
		}
		r, err := release(version, files[version])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", safetext.URL(u), err)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return catalog.ComparePythonVersions(out[i].Version, out[j].Version) > 0 })
	return out, nil
}

// isSimpleJSON reports whether a Content-Type is SimpleJSON (parameters
// such as charset aside).
func isSimpleJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == SimpleJSON
}

// fileVersion returns the entry of versions a file of the project named
// name (normalized) belongs to: a wheel's version field
// ({name}-{version}-...whl); for another file (an sdist {name}-{version}.tar.gz,
// an egg {name}-{version}-py3.9.egg) the longest version that follows a
// '-' after the name and is followed by '.', '-' or nothing. Versions
// spelled differently (1.0 and 1.0.0) are the same PEP 440 version.
func fileVersion(filename, name string, versions []string) (string, bool) {
	if base, ok := strings.CutSuffix(filename, ".whl"); ok {
		parts := strings.Split(base, "-")
		if (len(parts) != 5 && len(parts) != 6) || imagespec.NormalizeName(parts[0]) != name {
			return "", false
		}
		return matchVersion(parts[1], versions)
	}
	best := ""
	for i := strings.IndexByte(filename, '-'); i >= 0; i = nextDash(filename, i) {
		if imagespec.NormalizeName(filename[:i]) != name {
			continue
		}
		rest := filename[i+1:]
		for _, v := range versions {
			if len(v) > len(best) && strings.HasPrefix(rest, v) && (len(rest) == len(v) || rest[len(v)] == '.' || rest[len(v)] == '-') {
				best = v
			}
		}
	}
	return best, best != ""
}

func nextDash(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '-')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// matchVersion returns the entry of versions that is v, as a string or as
// a PEP 440 version.
func matchVersion(v string, versions []string) (string, bool) {
	if slices.Contains(versions, v) {
		return v, true
	}
	pv, err := pep440.Parse(v)
	if err != nil {
		return "", false
	}
	for _, c := range versions {
		if pc, err := pep440.Parse(c); err == nil && pc.Equal(pv) {
			return c, true
		}
	}
	return "", false
}

func release(version string, files []simpleFile) (catalog.PythonPackage, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].Filename < files[j].Filename })
	r := catalog.PythonPackage{Version: version, PreRelease: catalog.IsPythonPreRelease(version), Yanked: true}
	pythons := map[string]map[string]bool{}
	for _, f := range files {
		yanked, err := f.yanked()
		if err != nil {
			return catalog.PythonPackage{}, err
		}
		if !yanked {
			r.Yanked = false
		}
		if r.RequiresPython == "" && f.RequiresPython != nil {
			r.RequiresPython = *f.RequiresPython
		}
		if yanked {
			continue
		}
		w, ok := ParseWheel(f.Filename)
		if !ok {
			continue
		}
		for _, plat := range w.Platforms {
			if pythons[plat] == nil {
				pythons[plat] = map[string]bool{}
			}
			for _, py := range w.Pythons {
				pythons[plat][py] = true
			}
		}
	}
	if len(pythons) > 0 {
		r.Pythons = map[string][]string{}
		for plat, set := range pythons {
			for py := range set {
				r.Pythons[plat] = append(r.Pythons[plat], py)
			}
			slices.SortFunc(r.Pythons[plat], catalog.ComparePythons)
		}
	}
	return r, nil
}

// Wheel is what a wheel file name says about where it installs.
type Wheel struct {
	// Platforms are OCI platforms (linux/amd64, linux/arm64), or "any" for a
	// pure wheel.
	Platforms []string
	// Pythons are CPython minor versions ("3.12"), or "any" for a pure wheel.
	Pythons []string
}

// manylinuxPlatforms maps each of imagespec.ManylinuxTags to its OCI
// platform.
var manylinuxPlatforms = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, p := range imagespec.Platforms() {
		tags, err := imagespec.ManylinuxTags(p)
		if err != nil {
			panic(fmt.Sprintf("pypi: imagespec builds %s but has no manylinux tags for it: %v", p, err))
		}
		for _, t := range tags {
			m[t] = p
		}
	}
	return m
})

// ParseWheel reads a wheel file name
// {name}-{version}(-{build})?-{python}-{abi}-{platform}.whl. A wheel
// installs on a platform imagectl builds when one of its platform tags is
// among imagespec.ManylinuxTags of that platform (the tags the lock and the
// build give pip as --platform): a manylinux tag of a glibc newer than the
// base's, linux_x86_64, musllinux, macosx or win does not count. Pure
// wheels are also of interest; others return ok=false, as do free-threaded
// (cp313t) and non-CPython wheels.
func ParseWheel(filename string) (Wheel, bool) {
	base, ok := strings.CutSuffix(filename, ".whl")
	if !ok {
		return Wheel{}, false
	}
	parts := strings.Split(base, "-")
	if len(parts) != 5 && len(parts) != 6 {
		return Wheel{}, false
	}
	pyTags := strings.Split(parts[len(parts)-3], ".")
	abi := parts[len(parts)-2]
	platTags := strings.Split(parts[len(parts)-1], ".")

	if slices.Contains(platTags, "any") {
		for _, t := range pyTags {
			if t == "py3" || t == "py2.py3" || strings.HasPrefix(t, "py3") {
				return Wheel{Platforms: []string{"any"}, Pythons: []string{"any"}}, true
			}
		}
		return Wheel{}, false
	}
	var w Wheel
	tagPlatforms := manylinuxPlatforms()
	for _, pt := range platTags {
		if p, ok := tagPlatforms[pt]; ok {
			w.Platforms = appendUnique(w.Platforms, p)
		}
	}
	if len(w.Platforms) == 0 || strings.HasSuffix(abi, "t") {
		return Wheel{}, false
	}
	for _, t := range pyTags {
		minor, ok := cpMinor(t)
		if !ok {
			continue
		}
		if abi == "abi3" {
			for m := minor; m <= maxABI3Minor; m++ {
				w.Pythons = appendUnique(w.Pythons, fmt.Sprintf("3.%d", m))
			}
			continue
		}
		w.Pythons = appendUnique(w.Pythons, fmt.Sprintf("3.%d", minor))
	}
	if len(w.Pythons) == 0 {
		return Wheel{}, false
	}
	sort.Strings(w.Platforms)
	slices.SortFunc(w.Pythons, catalog.ComparePythons)
	return w, true
}

// cpMinor reads "cp312" as 12.
func cpMinor(tag string) (int, bool) {
	rest, ok := strings.CutPrefix(tag, "cp3")
	if !ok || len(rest) > 2 {
		return 0, false
	}
	return catalog.PythonMinor("3." + rest)
}

func appendUnique(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
