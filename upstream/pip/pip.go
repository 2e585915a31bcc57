package pip

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/internal/waitnotice"
	"github.com/imagectl/imagectl/pylock"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// MinVersion is the oldest pip with --dry-run --report.
const MinVersion = "22.2"

// DefaultCommand runs pip.
var DefaultCommand = []string{"python3", "-m", "pip"}

// Locker runs pip to lock closures.
type Locker struct {
	cmd     []string
	timeout time.Duration
	retries int
	hc      *http.Client

	mu   sync.Mutex
	argv []string // cmd with its interpreter resolved; see run
}

// Option configures New.
type Option func(*Locker)

// WithCommand sets the pip command (default DefaultCommand), e.g.
// {"/opt/venv/bin/pip"}.
func WithCommand(argv ...string) Option {
	return func(l *Locker) {
		if len(argv) > 0 {
			l.cmd = append([]string(nil), argv...)
		}
	}
}

// WithTimeout bounds one network operation of pip (its --timeout, default
// 60s) and, times 20, one whole pip run.
func WithTimeout(d time.Duration) Option { return func(l *Locker) { l.timeout = d } }

// WithRetries sets pip's --retries (default 5).
func WithRetries(n int) Option { return func(l *Locker) { l.retries = n } }

// WithHTTPClient sets the client that downloads a wheel whose index gave no
// sha256 (default httpx.New()).
func WithHTTPClient(hc *http.Client) Option { return func(l *Locker) { l.hc = hc } }

// New returns a Locker.
func New(opts ...Option) *Locker {
	l := &Locker{cmd: DefaultCommand, timeout: 60 * time.Second, retries: 5}
	for _, o := range opts {
		o(l)
	}
	if l.hc == nil {
		l.hc = httpx.New()
	}
	return l
}

// resolve returns the command that runs pip. For "INTERPRETER -m pip" it is
// the interpreter's own sys.executable, asked once: an interpreter reached
// through a wrapper such as pyenv's shims gets side effects around pip (the
// shim's pip-rehash hook rewrites the shared shims directory after every
// "-m pip install", and fails when two pip runs finish together, although
// pip itself succeeded). When the question fails the command is used as
// given, and running it reports the error.
func (l *Locker) resolve(ctx context.Context) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.argv != nil {
		return l.argv
	}
	if len(l.cmd) < 3 || l.cmd[1] != "-m" || l.cmd[2] != "pip" {
		return l.cmd
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.cmd[0], "-c", "import sys; sys.stdout.write(sys.executable)")
	killGroupOnCancel(cmd)
	out, err := cmd.Output()
	exe := string(out)
	if err != nil || !filepath.IsAbs(exe) || strings.ContainsAny(exe, "\n\r") {
		return l.cmd
	}
	if fi, err := os.Stat(exe); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return l.cmd
	}
	l.argv = append([]string{exe}, l.cmd[1:]...)
	return l.argv
}

// Command returns the pip command line as configured.
func (l *Locker) Command() []string { return append([]string(nil), l.cmd...) }

var pipVersion = regexp.MustCompile(`^pip (\d+)\.(\d+)(?:\.(\d+))?\S* from `)

// Check runs pip --version and returns the version, or an error saying
// what to install when pip is missing or older than MinVersion.
func (l *Locker) Check(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	argv := l.resolve(ctx)
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "--version")...)
	killGroupOnCancel(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("pip (%s) does not run: %v: %s: install pip for python3 (Debian: apt-get install python3-pip) or name one with --pip", strings.Join(l.cmd, " "), err, firstLine(out))
	}
	m := pipVersion.FindStringSubmatch(strings.TrimSpace(string(out)))
	if m == nil {
		return "", fmt.Errorf("pip (%s) --version printed %q, not \"pip X.Y from ...\"", strings.Join(l.cmd, " "), firstLine(out))
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	v := m[1] + "." + m[2]
	if m[3] != "" {
		v += "." + m[3]
	}
	if major < 22 || (major == 22 && minor < 2) {
		return v, fmt.Errorf("pip %s (%s) has no --dry-run --report: want pip >= %s", v, strings.Join(l.cmd, " "), MinVersion)
	}
	return v, nil
}

// Args returns pip's arguments (after the command) that lock req, writing
// the report to report; target is an empty scratch directory.
func (l *Locker) Args(req pylock.Request, report, target string) ([]string, error) {
	if _, ok := catalog.PythonMinor(req.Python); !ok {
		return nil, fmt.Errorf("python %q: want a CPython minor version such as 3.12", req.Python)
	}
	// The base's wheel platform tags, as the build passes them
	// (dockerfiles/Dockerfile, wheels stage, PIP_PLATFORMS_<ARCH>).
	tags, err := imagespec.ManylinuxTags(req.Platform)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(req.Index)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("package index %q is not an http(s) URL", req.Index)
	}
	if len(req.Requirements) == 0 {
		return nil, errors.New("no requirements to lock")
	}
	args := []string{
		"--isolated", "--no-input", "--disable-pip-version-check", "--quiet",
		"--timeout", strconv.Itoa(int(l.timeout.Seconds())), "--retries", strconv.Itoa(l.retries),
		"install", "--dry-run", "--report", report, "--ignore-installed", "--target", target, "--no-cache-dir",
		"--only-binary=:all:", "--implementation", "cp", "--python-version", req.Python,
	}
	for _, t := range tags {
		args = append(args, "--platform", t)
	}
	args = append(args, "--index-url", req.Index)
	if u.Scheme == "http" {
		args = append(args, "--trusted-host", u.Hostname())
	}
	for _, r := range req.Requirements {
		if strings.HasPrefix(r, "-") {
			return nil, fmt.Errorf("requirement %q looks like an option", r)
		}
	}
	return append(args, req.Requirements...), nil
}

// Lock runs pip for req and returns the closure, sorted by normalized name.
// pip runs silently for seconds to minutes: the command's wait notice (if
// ctx carries one) names what it waits for.
func (l *Locker) Lock(ctx context.Context, req pylock.Request) (dists []imagespec.PythonDist, err error) {
	host := req.Index
	if u, perr := url.Parse(req.Index); perr == nil && u.Host != "" {
		host = u.Host
	}
	stop := waitnotice.Start(ctx, host, fmt.Sprintf("pip (%s) to lock %s for CPython %s on %s against %s",
		strings.Join(l.cmd, " "), strings.Join(req.Requirements, " "), req.Python, req.Platform, safetext.URL(req.Index)))
	defer func() { stop(err) }()
	dir, err := os.MkdirTemp("", "imagectl-pip-lock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	report := filepath.Join(dir, "report.json")
	args, err := l.Args(req, report, filepath.Join(dir, "target"))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*l.timeout)
	defer cancel()
	argv := l.resolve(ctx)
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], args...)...)
	killGroupOnCancel(cmd)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("pip (%s) for %s: %w", strings.Join(l.cmd, " "), req.Platform, ctx.Err())
		}
		if b, ok := Blocked(stderr.String()); ok {
			// pip says "from versions: none" also when the index did not
			// answer (with --retries 0 it does not even warn): ask the
			// index for the project before calling it blocked.
			if err := l.probe(ctx, req.Index, &b); err != nil {
				return nil, err
			}
			return nil, &pylock.BlockedError{Blocked: b}
		}
		return nil, fmt.Errorf("pip (%s) for %s, CPython %s: %v: %s", strings.Join(l.cmd, " "), req.Platform, req.Python, err, lastLines(stderr.String(), 6))
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		return nil, fmt.Errorf("pip wrote no report: %w (pip >= %s is required)", err, MinVersion)
	}
	ds, missing, err := ParseReport(raw)
	if err != nil {
		return nil, err
	}
	for _, i := range missing {
		sum, err := l.sha256(ctx, ds[i].URL)
		if err != nil {
			return nil, fmt.Errorf("%s %s: the index gave no sha256 and downloading the wheel failed: %w", ds[i].Name, ds[i].Version, err)
		}
		ds[i].SHA256 = sum
	}
	pylock.SortClosure(ds)
	return ds, nil
}

// probe asks the index for b's project page: a page or a 404 confirms b
// (the project has no installable wheel, or does not exist there); any
// other answer means pip's "no matching distribution" may only be the index
// failing, which is an error.
func (l *Locker) probe(ctx context.Context, index string, b *pylock.Blocked) error {
	if b.Distribution == "" {
		return nil
	}
	u := strings.TrimRight(index, "/") + "/" + url.PathEscape(b.Distribution) + "/"
	resp, err := httpx.Get(ctx, l.hc, u, nil)
	var se *httpx.StatusError
	switch {
	case errors.As(err, &se) && se.Status == http.StatusNotFound:
		b.Detail += " (the index has no project " + b.Distribution + ")"
		return nil
	case err != nil:
		return fmt.Errorf("pip found no %s, but the package index did not answer for it: %w", b.Distribution, err)
	}
	resp.Body.Close()
	return nil
}

func (l *Locker) sha256(ctx context.Context, u string) (string, error) {
	resp, err := httpx.Get(ctx, l.hc, u, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, resp.Body); err != nil {
		return "", fmt.Errorf("reading %s: %w", u, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// report is the part of pip's installation report (format version 1) read
// here: https://pip.pypa.io/en/stable/reference/installation-report/
type report struct {
	Version string `json:"version"`
	Install []struct {
		DownloadInfo struct {
			URL         string `json:"url"`
			ArchiveInfo *struct {
				Hash   string            `json:"hash"`
				Hashes map[string]string `json:"hashes"`
			} `json:"archive_info"`
		} `json:"download_info"`
		Metadata struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"metadata"`
	} `json:"install"`
}

// ParseReport reads pip's installation report. missing lists the indexes of
// distributions whose sha256 the index did not give (the caller downloads
// and hashes them).
func ParseReport(b []byte) (ds []imagespec.PythonDist, missing []int, err error) {
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, nil, fmt.Errorf("pip report: %w", err)
	}
	if r.Version != "1" {
		return nil, nil, fmt.Errorf("pip report version %q, want \"1\"", r.Version)
	}
	if len(r.Install) == 0 {
		return nil, nil, errors.New("pip report: nothing to install")
	}
	for i, in := range r.Install {
		u := in.DownloadInfo.URL
		if u == "" || in.DownloadInfo.ArchiveInfo == nil {
			return nil, nil, fmt.Errorf("pip report: %s %s is not an archive from an index (url %q)", in.Metadata.Name, in.Metadata.Version, u)
		}
		pu, err := url.Parse(u)
		if err != nil {
			return nil, nil, fmt.Errorf("pip report: %s %s: url %q: %w", in.Metadata.Name, in.Metadata.Version, u, err)
		}
		file, err := url.PathUnescape(path.Base(pu.Path))
		if err != nil || !strings.HasSuffix(file, ".whl") {
			return nil, nil, fmt.Errorf("pip report: %s %s: %s is not a wheel", in.Metadata.Name, in.Metadata.Version, u)
		}
		pu.Fragment = ""
		ai := in.DownloadInfo.ArchiveInfo
		sum := strings.ToLower(ai.Hashes["sha256"])
		if sum == "" {
			if alg, v, ok := strings.Cut(ai.Hash, "="); ok && alg == "sha256" {
				sum = strings.ToLower(v)
			}
		}
		d := imagespec.PythonDist{Name: in.Metadata.Name, Version: in.Metadata.Version, Filename: file, URL: pu.String(), SHA256: sum}
		if d.Name == "" || d.Version == "" {
			return nil, nil, fmt.Errorf("pip report: install[%d] (%s) has no metadata name or version", i, u)
		}
		if sum == "" {
			missing = append(missing, len(ds))
		}
		ds = append(ds, d)
	}
	return ds, missing, nil
}

var (
	noMatch      = regexp.MustCompile(`(?m)^ERROR: No matching distribution found for (\S+)`)
	couldNotFind = regexp.MustCompile(`(?m)^ERROR: (Could not find a version that satisfies the requirement .*)$`)
	conflict     = regexp.MustCompile(`(?m)^ERROR: (Cannot install .*|ResolutionImpossible.*)$`)
	// networkTrouble marks pip output where "no matching distribution"
	// may only mean the index did not answer.
	networkTrouble = regexp.MustCompile(`(?m)^WARNING: Retrying |NewConnectionError|Max retries exceeded|ConnectTimeoutError|ReadTimeoutError|HTTP error \d+|SSLError|ProxyError`)
	reqName        = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*`)
)

// Blocked reads pip's stderr of a failed run: a requirement without an
// installable wheel ("No matching distribution found for X") or a
// dependency conflict. A run that shows network trouble is never blocked.
func Blocked(stderr string) (pylock.Blocked, bool) {
	if networkTrouble.MatchString(stderr) {
		return pylock.Blocked{}, false
	}
	if m := noMatch.FindStringSubmatch(stderr); m != nil {
		detail := "no matching distribution found for " + m[1]
		if c := couldNotFind.FindStringSubmatch(stderr); c != nil {
			detail = strings.TrimSpace(c[1])
		}
		return pylock.Blocked{Distribution: imagespec.NormalizeName(reqName.FindString(m[1])), Detail: detail}, true
	}
	if m := conflict.FindStringSubmatch(stderr); m != nil {
		return pylock.Blocked{Detail: strings.TrimSpace(m[1])}, true
	}
	return pylock.Blocked{}, false
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
