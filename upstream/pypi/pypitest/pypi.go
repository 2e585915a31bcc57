package pypitest

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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/imagectl/imagectl/internal/pep440"
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
		f.serveSimple(w, r)
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

// Simple API media types, and the Simple API version the fake answers as
// pypi.org does (warehouse/packaging/utils.py API_VERSION).
const (
	mimeHTML       = "text/html"
	mimeSimpleHTML = "application/vnd.pypi.simple.v1+html"
	// SimpleJSONType is the media type of the Simple API's JSON form.
	SimpleJSONType = "application/vnd.pypi.simple.v1+json"
	apiVersion     = "1.4"
)

// SimpleJSON returns the body of /simple/{name}/ in its JSON form, with
// file URLs under base (for tests that serve a broken copy of it).
func (f *Fake) SimpleJSON(base, name string) ([]byte, bool) {
	p, ok := f.projects[normalize(name)]
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(f.simpleDetail(p, strings.TrimRight(base, "/")))
	return b, err == nil
}

// SelectContentType is warehouse's content negotiation
// (warehouse/api/simple.py _select_content_type, WebOb's
// acceptable_offers): of text/html, the v1 HTML and the v1 JSON media
// types, the one the Accept header gives the highest quality (the first
// offered on a tie), each offer rated by its most specific matching media
// range; text/html when there is no Accept header or none matches.
func SelectContentType(accept string) string {
	offers := []string{mimeHTML, mimeSimpleHTML, SimpleJSONType}
	if strings.TrimSpace(accept) == "" {
		return mimeHTML
	}
	type rng struct {
		typ, sub string
		q        float64
	}
	var ranges []rng
	for _, part := range strings.Split(accept, ",") {
		fields := strings.Split(part, ";")
		typ, sub, ok := strings.Cut(strings.ToLower(strings.TrimSpace(fields[0])), "/")
		if !ok {
			continue
		}
		q := 1.0
		for _, param := range fields[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(param), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f >= 0 && f <= 1 {
					q = f
				}
			}
		}
		ranges = append(ranges, rng{typ, sub, q})
	}
	best, bestQ := "", 0.0
	for _, o := range offers {
		typ, sub, _ := strings.Cut(o, "/")
		q, specificity := 0.0, -1
		for _, r := range ranges {
			s := -1
			switch {
			case r.typ == typ && r.sub == sub:
				s = 2
			case r.typ == typ && r.sub == "*":
				s = 1
			case r.typ == "*" && r.sub == "*":
				s = 0
			}
			if s > specificity {
				q, specificity = r.q, s
			}
		}
		if specificity >= 0 && q > bestQ {
			best, bestQ = o, q
		}
	}
	if best == "" {
		return mimeHTML
	}
	return best
}

// serveSimple answers the simple API as warehouse does
// (warehouse/api/simple.py, warehouse/views.py): /simple/ lists the
// projects and /simple/{project}/ a project's files, in the negotiated
// form (PEP 691 JSON, or HTML with #sha256=); a path without its trailing
// slash or with a project name that is not normalized is a 301 to the
// normalized one; an unknown project is a plain-text 404.
func (f *Fake) serveSimple(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/simple")
	if rest == "" || (rest != "/" && !strings.HasSuffix(rest, "/")) {
		// Pyramid's append_slash: the route exists with a slash.
		if strings.Count(strings.Trim(rest, "/"), "/") == 0 {
			http.Redirect(w, r, r.URL.Path+"/", http.StatusMovedPermanently)
			return
		}
		notFound(w)
		return
	}
	name := strings.Trim(rest, "/")
	host := "http://" + r.Host
	ct := SelectContentType(r.Header.Get("Accept"))
	w.Header().Set("Vary", "Accept")
	if name == "" {
		var projects []Project
		for _, p := range f.projects {
			projects = append(projects, p)
		}
		sort.Slice(projects, func(i, j int) bool { return normalize(projects[i].Name) < normalize(projects[j].Name) })
		if ct == SimpleJSONType {
			list := []map[string]any{}
			for _, p := range projects {
				list = append(list, map[string]any{"name": p.Name, "_last-serial": 1})
			}
			writeAs(w, ct, map[string]any{"meta": map[string]any{"api-version": apiVersion, "_last-serial": 1}, "projects": list})
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"%s\">\n    <title>Simple index</title>\n  </head>\n  <body>\n", apiVersion)
		for _, p := range projects {
			fmt.Fprintf(&b, "    <a href=\"/simple/%s/\">%s</a>\n", normalize(p.Name), html.EscapeString(p.Name))
		}
		b.WriteString("  </body>\n</html>\n")
		w.Header().Set("Content-Type", ct)
		w.Write([]byte(b.String()))
		return
	}
	p, ok := f.projects[normalize(name)]
	if strings.Contains(name, "/") || !ok {
		notFound(w)
		return
	}
	if name != normalize(p.Name) {
		http.Redirect(w, r, "/simple/"+normalize(p.Name)+"/", http.StatusMovedPermanently)
		return
	}
	w.Header().Set("X-PyPI-Last-Serial", "1")
	doc := f.simpleDetail(p, host)
	if ct == SimpleJSONType {
		writeAs(w, ct, doc)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"%s\">\n    <meta name=\"pypi:project-status\" content=\"active\">\n    <title>Links for %s</title>\n  </head>\n  <body>\n    <h1>Links for %s</h1>\n", apiVersion, doc.Name, doc.Name)
	for _, fl := range doc.Files {
		attrs := ""
		if fl.RequiresPython != nil {
			attrs += fmt.Sprintf(` data-requires-python="%s"`, html.EscapeString(*fl.RequiresPython))
		}
		switch y := fl.Yanked.(type) {
		case string:
			attrs += fmt.Sprintf(` data-yanked="%s"`, html.EscapeString(y))
		case bool:
			if y {
				attrs += ` data-yanked=""`
			}
		}
		fmt.Fprintf(&b, "    <a href=\"%s#sha256=%s\"%s>%s</a><br />\n", fl.URL, fl.Hashes["sha256"], attrs, html.EscapeString(fl.Filename))
	}
	b.WriteString("  </body>\n</html>\n<!--SERIAL 1-->\n")
	w.Header().Set("Content-Type", ct)
	w.Write([]byte(b.String()))
}

// simpleDoc is a PEP 691 project page as warehouse writes it
// (warehouse/packaging/utils.py _simple_detail).
type simpleDoc struct {
	Meta struct {
		APIVersion string `json:"api-version"`
		LastSerial int    `json:"_last-serial"`
	} `json:"meta"`
	Name          string            `json:"name"`
	ProjectStatus map[string]string `json:"project-status"`
	// Versions is PEP 700's: the versions that have files, in PEP 440 order.
	Versions []string     `json:"versions"`
	Files    []simpleFile `json:"files"`
}

type simpleFile struct {
	Filename string            `json:"filename"`
	URL      string            `json:"url"`
	Hashes   map[string]string `json:"hashes"`
	// RequiresPython is null when the release has none.
	RequiresPython *string `json:"requires-python"`
	Size           int     `json:"size"`
	UploadTime     string  `json:"upload-time"`
	// Yanked is false, true, or the reason.
	Yanked               any  `json:"yanked"`
	DataDistInfoMetadata bool `json:"data-dist-info-metadata"`
	CoreMetadata         bool `json:"core-metadata"`
	Provenance           any  `json:"provenance"`
}

// simpleDetail is p's project page, its files sorted by version, then name.
func (f *Fake) simpleDetail(p Project, host string) simpleDoc {
	var d simpleDoc
	d.Meta.APIVersion, d.Meta.LastSerial = apiVersion, 1
	d.Name = normalize(p.Name)
	d.ProjectStatus = map[string]string{"status": "active"}
	d.Versions, d.Files = []string{}, []simpleFile{}
	for v, rel := range p.Releases {
		if len(rel) > 0 {
			d.Versions = append(d.Versions, v)
		}
	}
	sort.Slice(d.Versions, func(i, j int) bool { return pep440.Compare(d.Versions[i], d.Versions[j]) < 0 })
	for _, v := range d.Versions {
		rel := append([]File(nil), p.Releases[v]...)
		sort.Slice(rel, func(i, j int) bool { return rel[i].Filename < rel[j].Filename })
		for _, fl := range rel {
			f.mu.Lock()
			body := f.content[fl.Filename]
			f.mu.Unlock()
			sum := sha256.Sum256(body)
			var yanked any = fl.Yanked
			if fl.Yanked && fl.YankedReason != "" {
				yanked = fl.YankedReason
			}
			var rp *string
			if fl.RequiresPython != "" {
				rp = &fl.RequiresPython
			}
			d.Files = append(d.Files, simpleFile{
				Filename: fl.Filename, URL: fileURL(host, fl.Filename, body),
				Hashes: map[string]string{"sha256": hex.EncodeToString(sum[:])}, RequiresPython: rp,
				Size: len(body), UploadTime: "2025-01-01T00:00:00.000000Z", Yanked: yanked,
			})
		}
	}
	return d
}

// writeAs writes v as JSON with a trailing newline (warehouse's
// json-with-newline renderer) and Content-Type ct.
func writeAs(w http.ResponseWriter, ct string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Write(append(b, '\n'))
}

// notFound is warehouse's 404 under /simple/.
func notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	w.WriteHeader(http.StatusNotFound)
	w.Write([]byte("404 Not Found"))
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
