package sbom

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ScannerName is the scanner's executable: imagectl-sbom, the nested
// module cmd/imagectl-sbom, which links syft. make build builds it beside
// imagectl.
const ScannerName = "imagectl-sbom"

// ScannerEnv is the environment variable imagectl reads the scanner's path
// from when no --sbom-scanner is given.
const ScannerEnv = "IMAGECTL_SBOM_SCANNER"

// stopDelay is how long a cancelled scanner has to exit after SIGTERM
// before it is killed.
const stopDelay = 10 * time.Second

// maxResultBytes bounds what a scanner may write on its standard output
// (one document, base64 in JSON): imagectl's SPDX documents are a few MB.
const maxResultBytes = 256 << 20

// Find returns the path of imagectl-sbom: the one beside the running
// executable (make build and the release
// archives put them together), else the first on PATH. The error says
// where it looked and how to get one.
func Find() (string, error) {
	var looked []string
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			p := filepath.Join(filepath.Dir(exe), ScannerName)
			if _, err := checkExecutable(p, ""); err == nil {
				return p, nil
			}
			looked = append(looked, filepath.Dir(exe))
		}
	}
	if p, err := exec.LookPath(ScannerName); err == nil {
		return p, nil
	}
	looked = append(looked, "$PATH")
	return "", fmt.Errorf("%s, the SBOM scanner, was not found (looked in %s): make build builds it into bin/ beside imagectl; or pass --sbom-scanner PATH, or --sbom-from-lock to sign an SBOM written from the lock", ScannerName, strings.Join(looked, " and "))
}

func checkExecutable(p, what string) (string, error) {
	st, err := os.Stat(p)
	if err == nil && (st.IsDir() || st.Mode()&0o111 == 0) {
		err = errors.New("not an executable file")
	}
	if err != nil {
		if what != "" {
			return "", fmt.Errorf("%s %s: %w", what, p, err)
		}
		return "", fmt.Errorf("SBOM scanner %s: %w", p, err)
	}
	return p, nil
}

// Command scans images by running the scanner executable at Path, one
// process per platform image: the image is served to it, read-only, by a
// registry on a loopback address for the time of the scan (the layers are
// read from wherever img reads them, with the caller's credentials; the
// scanner needs none), the Request goes to its standard input and the
// Result comes back on its standard output. The zero Command is not
// usable: set Path (NewCommand finds it).
type Command struct {
	// Path is the scanner executable (imagectl-sbom).
	Path string

	mu   sync.Mutex
	tool string
	warm []*process
}

// NewCommand returns a Command running path, or the scanner Find finds
// when path is "".
func NewCommand(path string) (*Command, error) {
	var err error
	if path == "" {
		path, err = Find()
	} else {
		path, err = checkExecutable(path, "--sbom-scanner (or $"+ScannerEnv+")")
	}
	if err != nil {
		return nil, err
	}
	return &Command{Path: path}, nil
}

// versionTimeout bounds `imagectl-sbom version`.
const versionTimeout = time.Minute

// Tool returns the tool name and version the scanner writes into its
// documents (ToolName-<version>), for MadeBy: the scanner's answer to
// "imagectl-sbom version", asked once.
func (c *Command) Tool(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tool != "" {
		return c.tool, nil
	}
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, c.Path, "version")
	cmd.Stdout, cmd.Stderr = &out, &tail{max: 4 << 10, w: &errb}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s version: %w%s", c.Path, err, stderrNote(errb.Bytes()))
	}
	v := strings.TrimSpace(out.String())
	if v == "" || strings.ContainsAny(v, " \n\t") {
		return "", fmt.Errorf("%s version printed %q, want one word (the scanner's version)", c.Path, out.String())
	}
	c.tool = ToolName + "-" + v
	return c.tool, nil
}

// Warm starts n scanner processes ahead of the scans (while a build
// solves, when CPU is idle): each prepares what every scan needs (syft's
// license matcher, about a second of CPU) and waits for its request. Scan
// takes a warm process when there is one; Close ends those left. The
// processes end with ctx.
func (c *Command) Warm(ctx context.Context, n int) {
	for range n {
		p, err := c.start(ctx)
		if err != nil {
			return // Scan starts its own, and reports the error then
		}
		c.mu.Lock()
		c.warm = append(c.warm, p)
		c.mu.Unlock()
	}
}

// Close ends the warm processes no Scan took (their standard input closes
// and they exit without scanning) and waits for them.
func (c *Command) Close() error {
	c.mu.Lock()
	warm := c.warm
	c.warm = nil
	c.mu.Unlock()
	var errs []error
	for _, p := range warm {
		_ = p.stdin.Close()
		if err := p.wait(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// process is a started scanner waiting for its request.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *limited
	stderr *bytes.Buffer
}

func (c *Command) start(ctx context.Context) (*process, error) {
	cmd := exec.CommandContext(ctx, c.Path, "scan")
	// A scan that is cancelled is asked to stop (SIGTERM: it removes its
	// scratch directories, gigabytes of layers), and killed only when it
	// has not exited after stopDelay.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopDelay
	p := &process{cmd: cmd, stdout: &limited{max: maxResultBytes}, stderr: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = p.stdout, &tail{max: 8 << 10, w: p.stderr}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the SBOM scanner %s: %w", c.Path, err)
	}
	return p, nil
}

func (p *process) wait() error {
	if err := p.cmd.Wait(); err != nil {
		return fmt.Errorf("%s scan: %w%s", p.cmd.Path, err, stderrNote(p.stderr.Bytes()))
	}
	if p.stdout.over {
		return fmt.Errorf("%s scan wrote more than %d bytes", p.cmd.Path, int64(maxResultBytes))
	}
	return nil
}

// Scan scans img (one platform image) with the scanner and returns its
// SBOM.
func (c *Command) Scan(ctx context.Context, img v1.Image, o Options) (*Result, error) {
	if err := ValidateFormat(o.Format); err != nil {
		return nil, err
	}
	ref, stop, err := serveImage(img)
	if err != nil {
		return nil, fmt.Errorf("serving the %s image to the SBOM scanner: %w", o.Platform, err)
	}
	defer stop()
	c.mu.Lock()
	var p *process
	if n := len(c.warm); n > 0 {
		p, c.warm = c.warm[n-1], c.warm[:n-1]
	}
	c.mu.Unlock()
	if p == nil {
		if p, err = c.start(ctx); err != nil {
			return nil, err
		}
	}
	// A warm process belongs to the Warm context; this scan's ends it too,
	// the same way: SIGTERM, then SIGKILL after stopDelay.
	stopped := context.AfterFunc(ctx, func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		time.AfterFunc(stopDelay, func() { _ = p.cmd.Process.Kill() })
	})
	defer stopped()
	req, err := json.Marshal(Request{Image: ref, Options: o})
	if err != nil {
		return nil, err
	}
	_, werr := p.stdin.Write(req)
	_ = p.stdin.Close()
	if err := p.wait(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if werr != nil {
		return nil, fmt.Errorf("writing the request to %s: %w", c.Path, werr)
	}
	var res Result
	if err := json.Unmarshal(p.stdout.buf.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("%s scan's answer: %w", c.Path, err)
	}
	if len(res.Document) == 0 || res.PredicateType == "" {
		return nil, fmt.Errorf("%s scan answered no document", c.Path)
	}
	return &res, nil
}

// serveImage serves img, read-only, as REPO@DIGEST on a registry (the
// distribution API's GETs and HEADs of /v2/) on 127.0.0.1, under a random
// repository name; stop ends it.
func serveImage(img v1.Image) (ref string, stop func(), err error) {
	digest, err := img.Digest()
	if err != nil {
		return "", nil, err
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return "", nil, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return "", nil, err
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return "", nil, err
	}
	var rnd [16]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", nil, err
	}
	repo := "scan/" + hex.EncodeToString(rnd[:])
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	prefix := "/v2/" + repo + "/"
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == "/v2/" {
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok {
			registryError(w, http.StatusNotFound, "NAME_UNKNOWN", "repository name not known to registry")
			return
		}
		kind, d, _ := strings.Cut(rest, "/")
		switch {
		case kind == "manifests" && d == digest.String():
			w.Header().Set("Content-Type", string(mt))
			w.Header().Set("Docker-Content-Digest", d)
			w.Header().Set("Content-Length", fmt.Sprint(len(manifest)))
			if r.Method == http.MethodGet {
				_, _ = w.Write(manifest)
			}
		case kind == "blobs" && d == cfgName.String():
			raw, err := img.RawConfigFile()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Length", fmt.Sprint(len(raw)))
			w.Header().Set("Docker-Content-Digest", d)
			if r.Method == http.MethodGet {
				_, _ = w.Write(raw)
			}
		case kind == "blobs":
			h, err := v1.NewHash(d)
			if err != nil {
				registryError(w, http.StatusBadRequest, "DIGEST_INVALID", "provided digest did not match uploaded content")
				return
			}
			l, err := img.LayerByDigest(h)
			if err != nil {
				registryError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown to registry")
				return
			}
			if size, err := l.Size(); err == nil {
				w.Header().Set("Content-Length", fmt.Sprint(size))
			}
			w.Header().Set("Docker-Content-Digest", d)
			if r.Method == http.MethodHead {
				return
			}
			rc, err := l.Compressed()
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer rc.Close()
			// A read that fails midway cuts the answer short: the
			// scanner's registry client checks the digest of what it
			// read and fails.
			_, _ = io.Copy(w, rc)
		default:
			registryError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
		}
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String() + "/" + repo + "@" + digest.String(), func() { _ = srv.Close() }, nil
}

func registryError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": msg}}})
}

// limited keeps up to max bytes and notes whether more came.
type limited struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); len(p) > room {
		l.over = true
		l.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return l.buf.Write(p)
}

// tail keeps the last max bytes written to w (w is a bytes.Buffer).
type tail struct {
	max int
	w   *bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.w.Write(p)
	if over := t.w.Len() - t.max; over > 0 {
		rest := append([]byte(nil), t.w.Bytes()[over:]...)
		t.w.Reset()
		t.w.Write(rest)
	}
	return len(p), nil
}

// stderrNote is ": " and the scanner's last standard error lines, or "".
func stderrNote(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	return ": " + s
}
