package image

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/verify"
)

//go:embed scripts/check.py scripts/breakpoint.py
var scripts embed.FS

// Status of one check.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	// Skip is a check that does not apply (code-server where the base
	// carries none); it is reported, never silent.
	Skip Status = "skip"
)

// Check names, one report line each.
const (
	CheckContainer  = "container"
	CheckPython     = "python"
	CheckDebugger   = "debugger"
	CheckPostMortem = "post-mortem"
	CheckCodeServer = "code-server"
)

// Line is one check of one platform.
type Line struct {
	Check   string  `json:"check"`
	Status  Status  `json:"status"`
	Detail  string  `json:"detail"`
	Seconds float64 `json:"seconds"`
}

// PlatformReport is what ran for one platform image.
type PlatformReport struct {
	Platform string `json:"platform"`
	Digest   string `json:"digest"`
	Lines    []Line `json:"lines"`
}

// Report is the outcome of a smoke.
type Report struct {
	Image     string           `json:"image"`
	Digest    string           `json:"digest"`
	Runtime   string           `json:"runtime"`
	OK        bool             `json:"ok"`
	Platforms []PlatformReport `json:"platforms"`
	// Error says why the image could not be smoked at all (it could not
	// be read); no platform ran.
	Error string `json:"error,omitempty"`
}

// Err is nil when every line passed or was skipped, else names the failed
// lines.
func (r *Report) Err() error {
	var failed []string
	for _, p := range r.Platforms {
		for _, l := range p.Lines {
			if l.Status == Fail {
				failed = append(failed, p.Platform+" "+l.Check)
			}
		}
	}
	if len(failed) == 0 && len(r.Platforms) > 0 {
		return nil
	}
	if len(r.Platforms) == 0 {
		return errors.New("smoke image: no platform was run")
	}
	return fmt.Errorf("smoke image %s: failed: %s", r.Image, strings.Join(failed, ", "))
}

// WriteText writes one line per check.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "smoke image %s (%s) with %s\n", r.Image, r.Digest, r.Runtime)
	for _, p := range r.Platforms {
		for _, l := range p.Lines {
			if _, err := fmt.Fprintf(w, "%-12s %-12s %-4s %s (%.1fs)\n", p.Platform, l.Check, strings.ToUpper(string(l.Status)), l.Detail, l.Seconds); err != nil {
				return err
			}
		}
	}
	verdict := "PASSED"
	if !r.OK {
		verdict = "FAILED"
	}
	_, err := fmt.Fprintln(w, verdict)
	return err
}

type options struct {
	platforms   []string
	runtime     Runtime
	nameOpts    []name.Option
	remoteOpts  []remote.Option
	workDir     string
	bootTimeout time.Duration
	stepTimeout time.Duration
	debugPort   int
	logger      *slog.Logger
	archiveMax  int64
}

// Option configures Image and Archive.
type Option func(*options)

// WithPlatforms limits the smoke to these platforms (default: every
// platform of the image).
func WithPlatforms(p ...string) Option { return func(o *options) { o.platforms = p } }

// WithRuntime sets the container runtime (default: DetectRuntime).
func WithRuntime(r Runtime) Option { return func(o *options) { o.runtime = r } }

// WithNameOptions are used to parse the reference.
func WithNameOptions(n ...name.Option) Option {
	return func(o *options) { o.nameOpts = append(o.nameOpts, n...) }
}

// WithRemoteOptions are used to read the image from its registry (pass
// regauth.RemoteOptions for the docker config keychain).
func WithRemoteOptions(r ...remote.Option) Option {
	return func(o *options) { o.remoteOpts = append(o.remoteOpts, r...) }
}

// WithWorkDir is where scripts and unpacked archives go (default
// os.TempDir()).
func WithWorkDir(d string) Option { return func(o *options) { o.workDir = d } }

// WithBootTimeout bounds code-server's boot to a healthy /healthz and the
// debug script's start (default 5m: arm64 runs emulated).
func WithBootTimeout(d time.Duration) Option { return func(o *options) { o.bootTimeout = d } }

// WithStepTimeout bounds each process and each DAP request (default 5m).
func WithStepTimeout(d time.Duration) Option { return func(o *options) { o.stepTimeout = d } }

// WithLogger logs progress.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

func newOptions(opts []Option) *options {
	o := &options{workDir: os.TempDir(), bootTimeout: 5 * time.Minute, stepTimeout: 5 * time.Minute,
		debugPort: 5678, logger: slog.New(slog.DiscardHandler), archiveMax: 64 << 30}
	for _, f := range opts {
		f(o)
	}
	return o
}

// Image smoke-tests the image ref names in its registry.
func Image(ctx context.Context, ref string, opts ...Option) (*Report, error) {
	o := newOptions(opts)
	src, err := openRemote(ctx, ref, o.nameOpts, o.remoteOpts)
	if err != nil {
		return nil, err
	}
	return run(ctx, src, o)
}

// Archive smoke-tests the OCI archive (or OCI layout directory) at path, as
// imagectl build writes it.
func Archive(ctx context.Context, path string, opts ...Option) (*Report, error) {
	o := newOptions(opts)
	src, err := openArchive(path, o.workDir, o.archiveMax)
	if err != nil {
		return nil, err
	}
	defer src.cleanup()
	return run(ctx, src, o)
}

func run(ctx context.Context, src *source, o *options) (*Report, error) {
	plats, err := selectPlatforms(src.platforms, o.platforms)
	if err != nil {
		return nil, err
	}
	rt := o.runtime
	if rt == nil {
		if rt, err = DetectRuntime(ctx, WithRuncWorkDir(o.workDir)); err != nil {
			return nil, err
		}
	}
	dir, err := writeScripts(o.workDir)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rep := &Report{Image: src.ref, Digest: src.digest, Runtime: rt.Name()}
	for _, p := range plats {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		o.logger.Info("smoke", "platform", p.Platform, "digest", p.Digest.String(), "runtime", rt.Name())
		pr := smokePlatform(ctx, rt, p, dir, o)
		rep.Platforms = append(rep.Platforms, pr)
	}
	rep.OK = rep.Err() == nil
	return rep, ctx.Err()
}

// writeScripts puts the embedded scripts in a new directory readable by
// any user (the image's code-server user runs nothing from it, but the
// image's config user may not be root).
func writeScripts(workDir string) (string, error) {
	dir, err := os.MkdirTemp(workDir, "imagectl-smoke-scripts-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	for _, n := range []string{"check.py", "breakpoint.py"} {
		b, err := scripts.ReadFile("scripts/" + n)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, n), b, 0o644)
		}
		if err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

func randomID(arch string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return "imagectl-smoke-" + arch + "-" + hex.EncodeToString(b)
}

// platformRun is the state of one platform's smoke.
type platformRun struct {
	o      *options
	p      *Platform
	c      Container
	lock   *imagespec.Set
	labels []string // label problems
	env    []string
	uid    uint32
	gid    uint32
	python *pythonFacts // from the python check, nil when it failed early
}

func smokePlatform(ctx context.Context, rt Runtime, p *Platform, scriptsDir string, o *options) PlatformReport {
	pr := PlatformReport{Platform: p.Platform, Digest: p.Digest.String()}
	add := func(check string, start time.Time, st Status, format string, args ...any) {
		pr.Lines = append(pr.Lines, Line{Check: check, Status: st, Detail: fmt.Sprintf(format, args...), Seconds: time.Since(start).Round(100 * time.Millisecond).Seconds()})
	}
	start := time.Now()
	r := &platformRun{o: o, p: p}
	r.lock, r.labels = verify.Lock(p.Config.Config.Labels)

	c, err := rt.Create(ctx, p, Spec{ID: randomID(p.Arch()), Mount: scriptsDir, Ports: []int{imagespec.CodeServerPort, o.debugPort}})
	if err != nil {
		add(CheckContainer, start, Fail, "creating the container: %v", err)
		return pr
	}
	r.c = c
	defer func() {
		if err := c.Remove(ctx); err != nil {
			add(CheckContainer, time.Now(), Fail, "cleaning up: %v", err)
		}
	}()
	read := func(path string) ([]byte, error) { return c.ReadFile(ctx, path, 4<<20) }
	r.uid, r.gid, err = lookupUser(read, p.Config.Config.User)
	if err != nil {
		add(CheckContainer, start, Fail, "the image's user: %v", err)
		return pr
	}
	passwd, _ := read("/etc/passwd")
	r.env = ImageEnv(p.Config, homeOf(passwd, r.uid))

	_, csErr := c.ReadFile(ctx, imagespec.CodeServerBin, 1<<20)
	hasCodeServer := csErr == nil || !isNotExist(csErr)
	entry := append(append([]string{}, p.Config.Config.Entrypoint...), p.Config.Config.Cmd...)
	// Python and the debugger first, in a container kept up without its
	// entrypoint (a broken image may break its entrypoint too; each line
	// then still says what is wrong); then the entrypoint for code-server.
	if err := c.Hold(ctx); err != nil {
		add(CheckContainer, start, Fail, "keeping the container up: %v", err)
		return pr
	}
	add(CheckContainer, start, Pass, "%s %s: created from the image's config (user %d:%d, env %d variables)", rt.Name(), shortDigest(p.Digest.String()), r.uid, r.gid, len(r.env))

	t := time.Now()
	st, detail := r.checkPython(ctx)
	add(CheckPython, t, st, "%s", detail)
	t = time.Now()
	st, detail = r.checkDebugger(ctx)
	add(CheckDebugger, t, st, "%s", detail)
	t = time.Now()
	st, detail = r.checkPostMortem(ctx)
	add(CheckPostMortem, t, st, "%s", detail)
	t = time.Now()
	if !hasCodeServer {
		add(CheckCodeServer, t, Skip, "the image has no %s: nothing to boot", imagespec.CodeServerBin)
		return pr
	}
	if err := c.Start(ctx); err != nil {
		add(CheckCodeServer, t, Fail, "starting the entrypoint %q: %v", entry, err)
		return pr
	}
	st, detail = r.checkCodeServer(ctx, entry)
	add(CheckCodeServer, t, st, "%s", detail)
	return pr
}

func shortDigest(d string) string {
	if i := strings.Index(d, ":"); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}
