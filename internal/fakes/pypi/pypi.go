package pypi

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
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
	// Requires are the wheel's Requires-Dist lines (PEP 508, markers such
	// as `extra == "default"` included) and Extras its Provides-Extra.
	Requires []string
	Extras   []string
	// Content replaces the generated file bytes (a valid minimal wheel for
	// a .whl, fixed bytes otherwise).
	Content []byte
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

// Fake is an http.Handler answering like pypi.org: the JSON API, the
// simple API (PEP 503 HTML, PEP 691 JSON) under /simple/ and the files
// themselves under /packages/, so that pip can resolve and download from it.
type Fake struct {
	projects map[string]Project
	fault    FaultFunc
	// content maps a file name to its bytes.
	content map[string][]byte

	mu   sync.Mutex
	hits []time.Time
	reqs []string
}

// New returns a fake serving projects.
func New(projects []Project, opts ...Option) *Fake {
	f := &Fake{projects: map[string]Project{}, content: map[string][]byte{}}
	for _, p := range projects {
		f.projects[normalize(p.Name)] = p
		for v, files := range p.Releases {
			for _, file := range files {
				f.content[file.Filename] = fileContent(p.Name, v, file)
			}
		}
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
	b, err := json.Marshal(f.projectDoc(p, "http://pypi.invalid"))
	return b, err == nil
}

// Replace serves content for the file named filename from now on, in the
// JSON API, the simple API (its sha256) and under /packages/: a file
// replaced upstream.
func (f *Fake) Replace(filename string, content []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.content[filename] = append([]byte(nil), content...)
}

// SHA256 returns the hex sha256 of the file named filename as served now.
func (f *Fake) SHA256(filename string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := sha256.Sum256(f.content[filename])
	return hex.EncodeToString(s[:])
}

// FileURL returns the URL of the file named filename as served now by a
// server of the fake at base (httptest.Server.URL).
func (f *Fake) FileURL(base, filename string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fileURL(strings.TrimRight(base, "/"), filename, f.content[filename])
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
	switch parts[0] {
	case "simple":
		f.serveSimple(w, r, parts[1:])
		return
	case "packages":
		f.mu.Lock()
		b, ok := f.content[parts[len(parts)-1]]
		f.mu.Unlock()
		if !ok || len(parts) != 3 {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
		return
	}
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
		writeJSON(w, http.StatusOK, f.projectDoc(p, host))
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
		"urls":            f.filesDoc(host, files),
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

func (f *Fake) projectDoc(p Project, host string) map[string]any {
	releases := map[string]any{}
	latest := ""
	var latestV *semver.Version
	for v, files := range p.Releases {
		releases[v] = f.filesDoc(host, files)
		if sv, err := semver.NewVersion(v); err == nil && sv.Prerelease() == "" && len(files) > 0 && (latestV == nil || sv.GreaterThan(latestV)) {
			latest, latestV = v, sv
		}
	}
	urls := []map[string]any{}
	if latest != "" {
		urls = f.filesDoc(host, p.Releases[latest])
	}
	return map[string]any{
		"info":            p.info(latest),
		"last_serial":     1,
		"releases":        releases,
		"urls":            urls,
		"vulnerabilities": []any{},
	}
}

func (f *Fake) filesDoc(host string, files []File) []map[string]any {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Filename < sorted[j].Filename })
	out := []map[string]any{}
	for _, fl := range sorted {
		f.mu.Lock()
		body := f.content[fl.Filename]
		f.mu.Unlock()
		f := fl
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
		sum := sha256.Sum256(body)
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
			"size":            len(body),
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

// fileURL is where a file is served.
func fileURL(host, filename string, body []byte) string {
	sum := sha256.Sum256(body)
	return host + "/packages/" + hex.EncodeToString(sum[:2]) + "/" + filename
}

// serveSimple answers the simple API: /simple/ lists projects,
// /simple/{project}/ its files with #sha256= (PEP 503 HTML, or PEP 691 JSON
// when the client accepts application/vnd.pypi.simple.v1+json).
func (f *Fake) serveSimple(w http.ResponseWriter, r *http.Request, parts []string) {
	if len(parts) == 0 || parts[0] == "" {
		var names []string
		for _, p := range f.projects {
			names = append(names, p.Name)
		}
		sort.Strings(names)
		var b strings.Builder
		b.WriteString("<!DOCTYPE html><html><body>\n")
		for _, n := range names {
			fmt.Fprintf(&b, "<a href=\"%s/\">%s</a>\n", normalize(n), html.EscapeString(n))
		}
		b.WriteString("</body></html>\n")
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(b.String()))
		return
	}
	p, ok := f.projects[normalize(parts[0])]
	if !ok || len(parts) > 1 {
		http.NotFound(w, r)
		return
	}
	host := "http://" + r.Host
	type simpleFile struct {
		Filename       string            `json:"filename"`
		URL            string            `json:"url"`
		Hashes         map[string]string `json:"hashes"`
		RequiresPython string            `json:"requires-python,omitempty"`
		Yanked         any               `json:"yanked"`
	}
	var files []simpleFile
	for _, rel := range p.Releases {
		for _, fl := range rel {
			f.mu.Lock()
			body := f.content[fl.Filename]
			f.mu.Unlock()
			sum := sha256.Sum256(body)
			var yanked any = false
			if fl.Yanked {
				yanked = true
				if fl.YankedReason != "" {
					yanked = fl.YankedReason
				}
			}
			files = append(files, simpleFile{Filename: fl.Filename, URL: fileURL(host, fl.Filename, body),
				Hashes: map[string]string{"sha256": hex.EncodeToString(sum[:])}, RequiresPython: fl.RequiresPython, Yanked: yanked})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Filename < files[j].Filename })
	if strings.Contains(r.Header.Get("Accept"), "application/vnd.pypi.simple.v1+json") {
		w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
		b, _ := json.Marshal(map[string]any{"meta": map[string]string{"api-version": "1.0"}, "name": normalize(p.Name), "files": files})
		w.Write(b)
		return
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html><html><body>\n")
	for _, fl := range files {
		attrs := ""
		if fl.RequiresPython != "" {
			attrs += fmt.Sprintf(` data-requires-python="%s"`, html.EscapeString(fl.RequiresPython))
		}
		if y, ok := fl.Yanked.(string); ok {
			attrs += fmt.Sprintf(` data-yanked="%s"`, html.EscapeString(y))
		} else if fl.Yanked == true {
			attrs += ` data-yanked=""`
		}
		fmt.Fprintf(&b, "<a href=\"%s#sha256=%s\"%s>%s</a>\n", fl.URL, fl.Hashes["sha256"], attrs, html.EscapeString(fl.Filename))
	}
	b.WriteString("</body></html>\n")
	w.Header().Set("Content-Type", "text/html")
	w.Write([]byte(b.String()))
}

// fileContent is what the fake serves for a file: a valid minimal wheel
// (METADATA with Requires-Dist, WHEEL with the file name's tags, RECORD)
// for a .whl, fixed bytes for anything else.
func fileContent(project, version string, f File) []byte {
	if f.Content != nil {
		return append([]byte(nil), f.Content...)
	}
	base, ok := strings.CutSuffix(f.Filename, ".whl")
	if !ok {
		return []byte("fake " + f.Filename + "\n")
	}
	parts := strings.Split(base, "-")
	if len(parts) < 5 {
		return []byte("fake " + f.Filename + "\n")
	}
	dist := parts[0]
	pyTags, abi, platTags := strings.Split(parts[len(parts)-3], "."), parts[len(parts)-2], strings.Split(parts[len(parts)-1], ".")
	distInfo := dist + "-" + version + ".dist-info"
	meta := []string{"Metadata-Version: 2.1", "Name: " + project, "Version: " + version}
	if f.RequiresPython != "" {
		meta = append(meta, "Requires-Python: "+f.RequiresPython)
	}
	for _, e := range f.Extras {
		meta = append(meta, "Provides-Extra: "+e)
	}
	for _, r := range f.Requires {
		meta = append(meta, "Requires-Dist: "+r)
	}
	wheel := "Wheel-Version: 1.0\nGenerator: imagectl-fake-pypi\nRoot-Is-Purelib: " + fmt.Sprint(platTags[0] == "any") + "\n"
	for _, py := range pyTags {
		for _, pl := range platTags {
			wheel += "Tag: " + py + "-" + abi + "-" + pl + "\n"
		}
	}
	files := map[string]string{
		strings.ToLower(dist) + "/__init__.py": fmt.Sprintf("__version__ = %q\n", version),
		distInfo + "/METADATA":                 strings.Join(meta, "\n") + "\n\n",
		distInfo + "/WHEEL":                    wheel,
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var record strings.Builder
	for _, n := range names {
		sum := sha256.Sum256([]byte(files[n]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[n]))
	}
	record.WriteString(distInfo + "/RECORD,,\n")
	files[distInfo+"/RECORD"] = record.String()
	names = append(names, distInfo+"/RECORD")
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		hdr := &zip.FileHeader{Name: n, Method: zip.Deflate, Modified: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}
		w, err := zw.CreateHeader(hdr)
		if err == nil {
			_, err = w.Write([]byte(files[n]))
		}
		if err != nil {
			panic(fmt.Sprintf("fake pypi: building %s: %v", f.Filename, err))
		}
	}
	if err := zw.Close(); err != nil {
		panic(fmt.Sprintf("fake pypi: building %s: %v", f.Filename, err))
	}
	return buf.Bytes()
}
