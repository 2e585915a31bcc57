package pypi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
)

// File is one distribution file of a release.
type File struct {
	Filename string
	// PackageType is bdist_wheel or sdist (default: from the file name).
	PackageType string
	// PythonVersion is PyPI's python_version: the wheel's Python tag
	// (cp312, py3, py2.py3) or "source" (default: from the file name).
	PythonVersion  string
	RequiresPython string
	Yanked         bool
	YankedReason   string
}

// Wheel returns the file named name with PyPI's defaults.
func Wheel(name string) File { return File{Filename: name, RequiresPython: ">=3.9"} }

// Yanked returns the file named name, yanked.
func Yanked(name string) File {
	f := Wheel(name)
	f.Yanked, f.YankedReason = true, "broken"
	return f
}

// Project is one project: its releases by version.
type Project struct {
	Name           string
	RequiresPython string
	Releases       map[string][]File
}

// FaultFunc may answer a request before the fake does: it returns true when
// it wrote the response. n counts requests from 1.
type FaultFunc func(w http.ResponseWriter, r *http.Request, n int) bool

// Option configures New.
type Option func(*Fake)

// WithFault installs f.
func WithFault(f FaultFunc) Option { return func(p *Fake) { p.fault = f } }

// Fake is an http.Handler answering like pypi.org.
type Fake struct {
	projects map[string]Project
	fault    FaultFunc

	mu   sync.Mutex
	hits []time.Time
	reqs []string
}

// New returns a fake serving projects.
func New(projects []Project, opts ...Option) *Fake {
	f := &Fake{projects: map[string]Project{}}
	for _, p := range projects {
		f.projects[normalize(p.Name)] = p
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

// normalize is the PEP 503 name normalization.
func normalize(name string) string {
	return strings.ToLower(strings.NewReplacer("_", "-", ".", "-").Replace(name))
}

// Hits returns when each request arrived.
func (f *Fake) Hits() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.hits...)
}

// Requests returns the path of each request, in order.
func (f *Fake) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reqs...)
}

// ProjectJSON returns the body of /pypi/{name}/json (for tests that serve a
// broken copy of it).
func (f *Fake) ProjectJSON(name string) ([]byte, bool) {
	p, ok := f.projects[normalize(name)]
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(p.projectDoc("http://pypi.invalid"))
	return b, err == nil
}

// ServeHTTP implements http.Handler.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hits = append(f.hits, time.Now())
	f.reqs = append(f.reqs, r.URL.Path)
	n := len(f.hits)
	f.mu.Unlock()
	if f.fault != nil && f.fault(w, r, n) {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"message": "Method Not Allowed"})
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 3 || len(parts) > 4 || parts[0] != "pypi" || parts[len(parts)-1] != "json" {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	p, ok := f.projects[normalize(parts[1])]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	host := "http://" + r.Host
	if len(parts) == 3 {
		writeJSON(w, http.StatusOK, p.projectDoc(host))
		return
	}
	files, ok := p.Releases[parts[2]]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"info":            p.info(parts[2]),
		"last_serial":     1,
		"urls":            filesDoc(host, files),
		"vulnerabilities": []any{},
	})
}

func (p Project) info(version string) map[string]any {
	return map[string]any{
		"name":            p.Name,
		"version":         version,
		"requires_python": p.RequiresPython,
		"summary":         p.Name + " (fake)",
		"yanked":          false,
	}
}

func (p Project) projectDoc(host string) map[string]any {
	releases := map[string]any{}
	latest := ""
	var latestV *semver.Version
	for v, files := range p.Releases {
		releases[v] = filesDoc(host, files)
		if sv, err := semver.NewVersion(v); err == nil && sv.Prerelease() == "" && len(files) > 0 && (latestV == nil || sv.GreaterThan(latestV)) {
			latest, latestV = v, sv
		}
	}
	urls := []map[string]any{}
	if latest != "" {
		urls = filesDoc(host, p.Releases[latest])
	}
	return map[string]any{
		"info":            p.info(latest),
		"last_serial":     1,
		"releases":        releases,
		"urls":            urls,
		"vulnerabilities": []any{},
	}
}

func filesDoc(host string, files []File) []map[string]any {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Filename < sorted[j].Filename })
	out := []map[string]any{}
	for _, f := range sorted {
		pt, pv := f.PackageType, f.PythonVersion
		if pt == "" {
			pt = "sdist"
			if strings.HasSuffix(f.Filename, ".whl") {
				pt = "bdist_wheel"
			}
		}
		if pv == "" {
			pv = "source"
			if parts := strings.Split(strings.TrimSuffix(f.Filename, ".whl"), "-"); pt == "bdist_wheel" && len(parts) >= 5 {
				pv = parts[len(parts)-3]
			}
		}
		sum := sha256.Sum256([]byte(f.Filename))
		var reason any
		if f.YankedReason != "" {
			reason = f.YankedReason
		}
		var rp any
		if f.RequiresPython != "" {
			rp = f.RequiresPython
		}
		out = append(out, map[string]any{
			"filename":        f.Filename,
			"packagetype":     pt,
			"python_version":  pv,
			"requires_python": rp,
			"digests":         map[string]string{"sha256": hex.EncodeToString(sum[:])},
			"size":            len(f.Filename),
			"url":             host + "/packages/" + hex.EncodeToString(sum[:2]) + "/" + f.Filename,
			"yanked":          f.Yanked,
			"yanked_reason":   reason,
		})
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
