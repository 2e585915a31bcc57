package pypi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/pep440"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// DefaultBaseURL is the public PyPI.
const DefaultBaseURL = "https://pypi.org"

// maxBody bounds a JSON API answer (ray's is several MB).
const maxBody = 128 << 20

// maxABI3Minor is the highest CPython minor an abi3 wheel is assumed to cover.
const maxABI3Minor = 14

// Client reads the PyPI JSON API.
type Client struct {
	base string
	hc   *http.Client
}

// Option configures New.
type Option func(*Client)

// WithBaseURL sets the PyPI base URL (default DefaultBaseURL).
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

// projectJSON is the part of /pypi/{project}/json imagectl reads.
type projectJSON struct {
	Info struct {
		Name           string `json:"name"`
		RequiresPython string `json:"requires_python"`
	} `json:"info"`
	Releases map[string][]fileJSON `json:"releases"`
}

type fileJSON struct {
	Filename       string `json:"filename"`
	PackageType    string `json:"packagetype"`
	RequiresPython string `json:"requires_python"`
	Yanked         bool   `json:"yanked"`
}

// Releases returns every release of project with the Pythons its wheels
// cover per platform. Releases without files are left out.
func (c *Client) Releases(ctx context.Context, project string) ([]catalog.PythonPackage, error) {
	u := c.base + "/pypi/" + url.PathEscape(project) + "/json"
	resp, err := httpx.Get(ctx, c.hc, u, http.Header{"Accept": {"application/json"}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := httpx.ReadJSONBody(resp.Body, u, maxBody)
	if err != nil {
		return nil, err
	}
	var p projectJSON
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", u, err)
	}
	if p.Releases == nil {
		return nil, fmt.Errorf("decoding %s: no \"releases\" object (not a PyPI JSON API answer?)", u)
	}
	var out []catalog.PythonPackage
	for version, files := range p.Releases {
		if len(files) == 0 {
			continue
		}
		if _, err := pep440.Parse(version); err != nil {
			continue // not a PEP 440 version imagectl can order; never picked
		}
		out = append(out, release(version, files))
	}
	sort.Slice(out, func(i, j int) bool { return catalog.ComparePythonVersions(out[i].Version, out[j].Version) > 0 })
	return out, nil
}

func release(version string, files []fileJSON) catalog.PythonPackage {
	sort.Slice(files, func(i, j int) bool { return files[i].Filename < files[j].Filename })
	r := catalog.PythonPackage{Version: version, PreRelease: catalog.IsPythonPreRelease(version), Yanked: true}
	pythons := map[string]map[string]bool{}
	for _, f := range files {
		if !f.Yanked {
			r.Yanked = false
		}
		if r.RequiresPython == "" && f.RequiresPython != "" {
			r.RequiresPython = f.RequiresPython
		}
		if f.Yanked {
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
	return r
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
