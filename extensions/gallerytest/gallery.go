package gallerytest

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/imagectl/imagectl/vscode/vsixmanifest"
)

// Build is one platform build of one extension version.
type Build struct {
	ID             string // publisher.name
	Version        string
	TargetPlatform string // "universal" or linux-x64, ...
	Engine         string
	Dependencies   []string
	ExtensionPack  []string
	PreRelease     bool
	Body           []byte
}

// SHA256 returns the hex digest of the build's body.
func (b Build) SHA256() string {
	s := sha256.Sum256(b.Body)
	return hex.EncodeToString(s[:])
}

func (b Build) split() (string, string) {
	p, n, _ := strings.Cut(b.ID, ".")
	return p, n
}

// FixtureDir returns the absolute path of extensions/testdata/vsix in this
// source tree.
func FixtureDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "vsix")
}

// LoadDir reads every *.vsix in dir and describes it from its own
// extension.vsixmanifest.
func LoadDir(dir string) ([]Build, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.vsix"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no *.vsix in %s", dir)
	}
	sort.Strings(paths)
	var out []Build
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		bd, err := Describe(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, bd)
	}
	return out, nil
}

// Describe reads a VSIX's manifest into a Build.
func Describe(body []byte) (Build, error) {
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return Build{}, err
	}
	for _, f := range zr.File {
		if f.Name != "extension.vsixmanifest" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return Build{}, err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return Build{}, err
		}
		m, err := vsixmanifest.Parse(data)
		if err != nil {
			return Build{}, err
		}
		return Build{ID: m.ID(), Version: m.Version, TargetPlatform: m.TargetPlatform, Engine: m.Engine,
			Dependencies: m.Dependencies, ExtensionPack: m.ExtensionPack, PreRelease: m.PreRelease, Body: body}, nil
	}
	return Build{}, fmt.Errorf("no extension.vsixmanifest")
}

// FaultKind is what a fault does to a matching download.
type FaultKind int

const (
	// RateLimit answers 429 with Retry-After and x-ratelimit-* headers.
	RateLimit FaultKind = iota + 1
	// Unavailable answers 503 (a burst, with Count).
	Unavailable
	// ResetMidBody sends the headers and half the body, then drops the
	// connection (hijacked, SO_LINGER 0: a TCP reset).
	ResetMidBody
	// Truncate declares the full Content-Length and sends half the body.
	Truncate
	// GzipEncoded gzips the body and says so (Content-Encoding: gzip).
	GzipEncoded
	// GzipSilent gzips the body without saying so.
	GzipSilent
	// HTML200 answers an HTML page with status 200.
	HTML200
	// Replace serves Body instead of the real file (wrong file, zip slip,
	// zip bomb...).
	Replace
	// Hangup closes the connection without answering (before any header),
	// as a dying proxy does.
	Hangup
	// Trickle sends the body Chunk bytes at a time (default 1), one chunk
	// every Delay: a steady but slow transfer.
	Trickle
	// Stall sends the headers and half the body, then nothing for Delay,
	// then the rest.
	Stall
	// Status answers Status (default 500) with Body as the error body.
	Status
)

// Fault is applied to downloads of ID (and TargetPlatform, when set).
type Fault struct {
	Kind           FaultKind
	ID             string
	TargetPlatform string
	// Count is how many matching downloads the fault hits; 0 means all.
	Count int
	// RetryAfter is the Retry-After value in seconds for RateLimit and
	// Unavailable (default 1).
	RetryAfter int
	// Body is served by Replace.
	Body []byte
	// Delay and Chunk shape Trickle and Stall.
	Delay time.Duration
	Chunk int
	// StatusCode is the status Status answers.
	StatusCode int
}

// Stats counts what the fake served.
type Stats struct {
	Requests  int64
	Bytes     int64
	Downloads int64
}

// Fake is the pair of fake galleries.
type Fake struct {
	mkt, ovsx *httptest.Server

	mu     sync.Mutex
	builds []Build
	faults []*Fault
	stats  Stats
	paths  []string
}

// New starts a fake Marketplace and a fake Open VSX serving builds.
func New(builds []Build) *Fake {
	f := &Fake{builds: append([]Build(nil), builds...)}
	f.mkt = httptest.NewServer(f.count(http.HandlerFunc(f.marketplace)))
	f.ovsx = httptest.NewServer(f.count(http.HandlerFunc(f.openvsx)))
	return f
}

// Close stops both servers.
func (f *Fake) Close() {
	f.mkt.CloseClientConnections()
	f.ovsx.CloseClientConnections()
	f.mkt.Close()
	f.ovsx.Close()
}

// MarketplaceURL is the base URL of the fake Marketplace.
func (f *Fake) MarketplaceURL() string { return f.mkt.URL }

// OpenVSXURL is the base URL of the fake Open VSX.
func (f *Fake) OpenVSXURL() string { return f.ovsx.URL }

// AddFault switches a fault on.
func (f *Fake) AddFault(ft Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft.RetryAfter == 0 {
		ft.RetryAfter = 1
	}
	f.faults = append(f.faults, &ft)
}

// ClearFaults switches every fault off.
func (f *Fake) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
}

// Stats returns the counters.
func (f *Fake) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// ResetStats zeroes the counters and the request log.
func (f *Fake) ResetStats() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats = Stats{}
	f.paths = nil
}

// Requests returns "METHOD path?query" of every request since the last reset.
func (f *Fake) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...)
}

type countingWriter struct {
	http.ResponseWriter
	f *Fake
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.f.mu.Lock()
	w.f.stats.Bytes += int64(n)
	w.f.mu.Unlock()
	return n, err
}

// Unwrap lets http.ResponseController reach the hijacker.
func (w countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (f *Fake) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.stats.Requests++
		p := r.Method + " " + r.URL.Path
		if r.URL.RawQuery != "" {
			p += "?" + r.URL.RawQuery
		}
		f.paths = append(f.paths, p)
		f.mu.Unlock()
		h.ServeHTTP(countingWriter{w, f}, r)
	})
}

// takeFault returns the fault to apply to this download, consuming one of
// its Count.
func (f *Fake) takeFault(id, tp string) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ft := range f.faults {
		if !strings.EqualFold(ft.ID, id) || (ft.TargetPlatform != "" && ft.TargetPlatform != tp) {
			continue
		}
		if ft.Count < 0 {
			continue
		}
		if ft.Count > 0 {
			ft.Count--
			if ft.Count == 0 {
				ft.Count = -1 // spent
			}
		}
		c := *ft
		return &c
	}
	return nil
}

// versionsOf returns the builds of id, newest version first, universal first
// within a version.
func (f *Fake) versionsOf(id string) []Build {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Build
	for _, b := range f.builds {
		if strings.EqualFold(b.ID, id) {
			out = append(out, b)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Version != out[j].Version {
			return newer(out[i].Version, out[j].Version)
		}
		if (out[i].TargetPlatform == "universal") != (out[j].TargetPlatform == "universal") {
			return out[i].TargetPlatform == "universal"
		}
		return out[i].TargetPlatform < out[j].TargetPlatform
	})
	return out
}

func newer(a, b string) bool {
	va, ea := semver.NewVersion(a)
	vb, eb := semver.NewVersion(b)
	if ea == nil && eb == nil {
		return va.GreaterThan(vb)
	}
	return a > b
}

// pick returns the build of id@version for tp. want "" means the caller gave
// no target platform: the universal build, else an arbitrary platform build
// (the Marketplace's behaviour that makes targetPlatform mandatory).
func (f *Fake) pick(id, version, tp string) (Build, bool) {
	var fallback *Build
	for _, b := range f.versionsOf(id) {
		if b.Version != version {
			continue
		}
		if tp != "" && b.TargetPlatform == tp {
			return b, true
		}
		if b.TargetPlatform == "universal" {
			bb := b
			fallback = &bb
		} else if tp == "" && fallback == nil {
			bb := b
			fallback = &bb
		}
	}
	if fallback != nil {
		return *fallback, true
	}
	return Build{}, false
}

// serveFile sends a VSIX body, applying a matching fault.
func (f *Fake) serveFile(w http.ResponseWriter, r *http.Request, b Build) {
	f.mu.Lock()
	f.stats.Downloads++
	f.mu.Unlock()
	body := b.Body
	if ft := f.takeFault(b.ID, b.TargetPlatform); ft != nil {
		if ft.Kind == Replace {
			body = ft.Body
		} else if serveFault(w, r, ft, body) {
			return
		}
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// serveFault answers with the fault ft (on body); false when ft leaves
// the answer to the caller.
func serveFault(w http.ResponseWriter, r *http.Request, ft *Fault, body []byte) bool {
	switch ft.Kind {
	case RateLimit:
		w.Header().Set("Retry-After", strconv.Itoa(ft.RetryAfter))
		w.Header().Set("X-RateLimit-Limit", "100")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", "1")
		http.Error(w, `{"message":"Request was blocked due to exceeding usage of resource"}`, http.StatusTooManyRequests)
		return true
	case Unavailable:
		w.Header().Set("Retry-After", strconv.Itoa(ft.RetryAfter))
		http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
		return true
	case HTML200:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!DOCTYPE html><html><head><title>Sign in</title></head><body>Please sign in</body></html>")
		return true
	case Status:
		code := ft.StatusCode
		if code == 0 {
			code = http.StatusInternalServerError
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(code)
		w.Write(ft.Body)
		return true
	case Hangup:
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return true
	case Trickle, Stall:
		serveSlow(w, r, ft, body)
		return true
	case GzipEncoded, GzipSilent:
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
		if ft.Kind == GzipEncoded {
			w.Header().Set("Content-Encoding", "gzip")
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		w.Write(buf.Bytes())
		return true
	case Truncate:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body[:len(body)/2])
		return true // net/http closes the connection: Content-Length not met
	case ResetMidBody:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body[:len(body)/2])
		http.NewResponseController(w).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			if tc, ok := conn.(interface{ SetLinger(int) error }); ok {
				tc.SetLinger(0)
			}
			conn.Close()
		}
		return true
	}
	return false
}

// serveSlow sends body in ft.Chunk pieces ft.Delay apart (Trickle), or
// half of it, a pause of ft.Delay, then the rest (Stall).
func serveSlow(w http.ResponseWriter, r *http.Request, ft *Fault, body []byte) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if ft.Kind == Stall {
		w.Write(body[:len(body)/2])
		rc.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(ft.Delay):
		}
		w.Write(body[len(body)/2:])
		return
	}
	chunk := max(ft.Chunk, 1)
	for i := 0; i < len(body); i += chunk {
		if i > 0 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(ft.Delay):
			}
		}
		w.Write(body[i:min(i+chunk, len(body))])
		rc.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
