package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/imagectl/imagectl/imagespec"
)

// Docker runs containers with a Docker engine through the docker CLI. The
// platform image is loaded with `docker load` from go-containerregistry (so
// the registry credentials are imagectl's, and an archive needs no
// registry), under a tag unique to the run, which Remove deletes. Ports are
// published on the host's 127.0.0.1 only. Foreign platforms run through the
// engine's binfmt (QEMU) registration.
type Docker struct {
	bin string
	// holder is a static host binary mounted into a container that has no
	// code-server, to keep it up for docker exec (an amd64 binary runs
	// natively in an emulated arm64 container).
	holder []string
}

// DockerOption configures Docker.
type DockerOption func(*Docker)

// WithDockerBinary sets the docker CLI (default "docker" on PATH).
func WithDockerBinary(p string) DockerOption { return func(d *Docker) { d.bin = p } }

// WithHolder sets the static host program (and its arguments) that keeps a
// container without code-server up: it must run until killed. Default: this
// imagectl binary's "smoke hold", when it is statically linked.
func WithHolder(argv ...string) DockerOption { return func(d *Docker) { d.holder = argv } }

// NewDocker returns the Docker runtime.
func NewDocker(opts ...DockerOption) *Docker {
	d := &Docker{bin: "docker"}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Name is "docker".
func (d *Docker) Name() string { return "docker" }

// Available says why no Docker engine can be used, or nil.
func (d *Docker) Available(ctx context.Context) error {
	if _, err := exec.LookPath(d.bin); err != nil {
		return fmt.Errorf("no docker CLI (%s)", d.bin)
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(cctx, d.bin, "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		return fmt.Errorf("no Docker engine: docker version: %v: %s", err, strings.TrimSpace(tail(string(out), 2)))
	}
	return nil
}

func (d *Docker) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func (d *Docker) run(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := d.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(tail(stderr.String(), 4)))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Create loads the platform image and creates a container from it.
func (d *Docker) Create(ctx context.Context, p *Platform, spec Spec) (_ Container, err error) {
	tag, err := name.NewTag("imagectl-smoke.invalid/" + spec.ID + ":" + p.Arch())
	if err != nil {
		return nil, err
	}
	c := &dockerContainer{d: d, p: p, spec: spec, tag: tag.String()}
	defer func() {
		if err != nil {
			c.Remove(context.WithoutCancel(ctx))
		}
	}()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarball.Write(tag, p.Image, pw)) }()
	load := d.command(ctx, "load", "--quiet")
	load.Stdin = pr
	var stderr bytes.Buffer
	load.Stderr = &stderr
	c.loaded = true
	if err := load.Run(); err != nil {
		pr.CloseWithError(err)
		return nil, fmt.Errorf("docker load %s: %w: %s", tag, err, strings.TrimSpace(stderr.String()))
	}
	if err := c.create(ctx, nil); err != nil {
		return nil, err
	}
	return c, nil
}

type dockerContainer struct {
	d       *Docker
	p       *Platform
	spec    Spec
	tag     string
	loaded  bool
	created bool
	held    bool
}

// create runs docker create; holder replaces the entrypoint when set.
func (c *dockerContainer) create(ctx context.Context, holder []string) error {
	args := []string{"create", "--name", c.spec.ID, "--platform", c.p.Platform, "--hostname", "imagectl-smoke"}
	// The securityContext inject writes for the sidecar: no_new_privs,
	// every capability dropped but the startup's, the default seccomp
	// profile (Docker's, as RuntimeDefault is the runtime's).
	args = append(args, "--security-opt", "no-new-privileges", "--cap-drop", "ALL")
	for _, cp := range imagespec.StartupCapabilities {
		args = append(args, "--cap-add", cp)
	}
	for _, port := range c.spec.Ports {
		args = append(args, "--publish", "127.0.0.1::"+strconv.Itoa(port))
	}
	if c.spec.Mount != "" {
		args = append(args, "--volume", c.spec.Mount+":"+MountPoint+":ro")
	}
	if len(holder) > 0 {
		args = append(args, "--volume", holder[0]+":"+MountPoint+"-holder:ro", "--entrypoint", MountPoint+"-holder")
	}
	args = append(args, c.tag)
	if len(holder) > 0 {
		args = append(args, holder[1:]...)
	}
	c.created = true
	_, err := c.d.run(ctx, args...)
	return err
}

// Start runs the image's entrypoint; a held container is recreated from
// the image first (the holder was its entrypoint).
func (c *dockerContainer) Start(ctx context.Context) error {
	if c.held {
		if _, err := c.d.run(ctx, "rm", "--force", c.spec.ID); err != nil {
			return err
		}
		if err := c.create(ctx, nil); err != nil {
			return err
		}
		c.held = false
	}
	_, err := c.d.run(ctx, "start", c.spec.ID)
	return err
}

// Hold recreates the container with a static host program as its
// entrypoint and starts it.
func (c *dockerContainer) Hold(ctx context.Context) error {
	holder := c.d.holder
	if len(holder) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		if err := checkStatic(exe); err != nil {
			return fmt.Errorf("keeping a container without code-server up needs a static imagectl (CGO_ENABLED=0, as make build builds it): %w", err)
		}
		holder = []string{exe, "smoke", "hold"}
	}
	if _, err := c.d.run(ctx, "rm", "--force", c.spec.ID); err != nil {
		return err
	}
	abs, err := filepath.Abs(holder[0])
	if err != nil {
		return err
	}
	if err := c.create(ctx, append([]string{abs}, holder[1:]...)); err != nil {
		return err
	}
	c.held = true
	_, err = c.d.run(ctx, "start", c.spec.ID)
	return err
}

// checkStatic fails for a dynamically linked executable.
func checkStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked", p)
		}
	}
	return nil
}

func (c *dockerContainer) execArgs(p Process, detach bool) []string {
	args := []string{"exec", "--user", fmt.Sprintf("%d:%d", p.UID, p.GID)}
	if p.Cwd != "" {
		args = append(args, "--workdir", p.Cwd)
	}
	// docker exec starts from the container's environment (the image's
	// Env); pass exactly the given one on top so both runtimes agree.
	for _, e := range p.Env {
		args = append(args, "--env", e)
	}
	args = append(args, c.spec.ID)
	return append(args, p.Args...)
}

// dockerStartFailure recognises the engine's message for a process that
// never started (docker exec exits 126 or 127 then).
func dockerStartFailure(code int, stderr []byte) error {
	s := string(stderr)
	if strings.Contains(s, "is not running") {
		return ErrStopped
	}
	if (code == 126 || code == 127) && (strings.Contains(s, "OCI runtime exec failed") || strings.Contains(s, "executable file not found") || strings.Contains(s, "no such file or directory")) {
		return fmt.Errorf("%w: %s", ErrExecStart, strings.TrimSpace(tail(s, 3)))
	}
	return nil
}

func (c *dockerContainer) Exec(ctx context.Context, p Process) (*Result, error) {
	stdout, stderr := newBoundedOutput(), newBoundedOutput()
	cmd := c.d.command(ctx, c.execArgs(p, false)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	res := outputResult(stdout, stderr)
	if err != nil {
		if ctx.Err() != nil {
			return res, exitResult(ctx, res, err)
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return res, err
		}
		res.ExitCode = ee.ExitCode()
		if serr := dockerStartFailure(res.ExitCode, res.Stderr); serr != nil {
			return res, serr
		}
	}
	return res, nil
}

func (c *dockerContainer) Spawn(ctx context.Context, p Process) (Proc, error) {
	return startProc(ctx, c.d.command(ctx, c.execArgs(p, false)...))
}

// Dial connects to the host port Docker published for port, on 127.0.0.1.
func (c *dockerContainer) Dial(ctx context.Context, port int) (net.Conn, error) {
	out, err := c.d.run(ctx, "port", c.spec.ID, strconv.Itoa(port)+"/tcp")
	if err != nil {
		if st, ierr := c.d.run(ctx, "inspect", "--format", "{{.State.Running}}", c.spec.ID); ierr == nil && st == "false" {
			return nil, fmt.Errorf("container %s: %w", c.spec.ID, ErrStopped)
		}
		return nil, err
	}
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "127.0.0.1:") {
			var dl net.Dialer
			return dl.DialContext(ctx, "tcp", l)
		}
	}
	return nil, fmt.Errorf("docker port %s %d/tcp: no 127.0.0.1 mapping in %q", c.spec.ID, port, out)
}

// ReadFile copies the file out with docker cp (a tar stream).
func (c *dockerContainer) ReadFile(ctx context.Context, p string, max int64) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := c.d.command(ctx, "cp", "--follow-link", c.spec.ID+":"+p, "-")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if strings.Contains(stderr.String(), "No such container:path") || strings.Contains(stderr.String(), "Could not find the file") {
			return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("docker cp %s:%s: %w: %s", c.spec.ID, p, err, strings.TrimSpace(stderr.String()))
	}
	tr := tar.NewReader(&stdout)
	h, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("docker cp %s:%s: %w", c.spec.ID, p, err)
	}
	if h.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	if h.Size > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, max)
	}
	return io.ReadAll(io.LimitReader(tr, max))
}

func (c *dockerContainer) Logs(ctx context.Context) string {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	out := newBoundedOutput()
	cmd := c.d.command(lctx, "logs", "--tail", "200", c.spec.ID)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Run()
	return string(out.Bytes())
}

// Remove deletes the container (with its anonymous volumes) and the tag
// the run loaded.
func (c *dockerContainer) Remove(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	var errs []error
	if c.created {
		if _, err := c.d.run(ctx, "rm", "--force", "--volumes", c.spec.ID); err != nil && !strings.Contains(err.Error(), "No such container") {
			errs = append(errs, err)
		}
	}
	if c.loaded {
		if _, err := c.d.run(ctx, "image", "rm", c.tag); err != nil && !strings.Contains(err.Error(), "No such image") {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DetectRuntime picks Docker when an engine answers, else runc configured
// with opts; it says why neither can run.
func DetectRuntime(ctx context.Context, opts ...RuncOption) (Runtime, error) {
	d := NewDocker()
	derr := d.Available(ctx)
	if derr == nil {
		return d, nil
	}
	r := NewRunc(opts...)
	rerr := r.Available(ctx)
	if rerr == nil {
		return r, nil
	}
	return nil, fmt.Errorf("%w: %v; %v", ErrNoRuntime, derr, rerr)
}

// ErrNoRuntime is neither a Docker engine nor runc (as root).
var ErrNoRuntime = errors.New("no container runtime")
