package image

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	securejoin "github.com/cyphar/filepath-securejoin"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/imagectl/imagectl/imagespec"
)

// Runc runs containers with runc on a root filesystem unpacked from the
// image, in new PID, mount, IPC, UTS and network namespaces: the network
// namespace has only the loopback interface, so nothing a container
// listens on is reachable from outside the machine, and two smokes never
// compete for a port. It needs root.
type Runc struct {
	bin     string
	root    string
	workDir string
	limits  Limits
	adjust  func(*specs.Spec)
}

// RuncOption configures Runc.
type RuncOption func(*Runc)

// WithRuncBinary sets the runc executable (default "runc" on PATH).
func WithRuncBinary(p string) RuncOption { return func(r *Runc) { r.bin = p } }

// WithRuncRoot sets runc's --root state directory (default: runc's own).
func WithRuncRoot(p string) RuncOption { return func(r *Runc) { r.root = p } }

// WithRuncWorkDir sets where root filesystems are unpacked (default os.TempDir()).
func WithRuncWorkDir(p string) RuncOption { return func(r *Runc) { r.workDir = p } }

// WithLimits bounds unpacking (default DefaultLimits).
func WithLimits(l Limits) RuncOption { return func(r *Runc) { r.limits = l } }

// WithSpecAdjust changes each container's OCI runtime configuration after
// it is made and before runc sees it: other users, mounts, capabilities or
// a read-only root than the image's and Docker's defaults (the restricted
// modes a test boots a base in). The Docker runtime has no such option.
func WithSpecAdjust(f func(*specs.Spec)) RuncOption { return func(r *Runc) { r.adjust = f } }

// NewRunc returns the runc runtime.
func NewRunc(opts ...RuncOption) *Runc {
	r := &Runc{bin: "runc", workDir: os.TempDir(), limits: DefaultLimits}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Name is "runc".
func (r *Runc) Name() string { return "runc" }

// Available says why runc cannot run containers here, or nil.
func (r *Runc) Available(ctx context.Context) error {
	if _, err := exec.LookPath(r.bin); err != nil {
		return fmt.Errorf("runc not found (%s): install Debian's runc", r.bin)
	}
	if os.Geteuid() != 0 {
		return errors.New("runc needs root (this process runs as uid " + strconv.Itoa(os.Geteuid()) + ")")
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(cctx, r.bin, "--version").CombinedOutput(); err != nil {
		return fmt.Errorf("%s --version: %v: %s", r.bin, err, out)
	}
	return nil
}

func (r *Runc) args(a ...string) []string {
	if r.root != "" {
		return append([]string{"--root", r.root}, a...)
	}
	return a
}

func (r *Runc) command(ctx context.Context, a ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.bin, r.args(a...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Create unpacks p's root filesystem under a new directory of the work
// directory and creates (does not start) the container.
func (r *Runc) Create(ctx context.Context, p *Platform, spec Spec) (_ Container, err error) {
	dir, err := os.MkdirTemp(r.workDir, "imagectl-smoke-"+p.Arch()+"-")
	if err != nil {
		return nil, err
	}
	c := &runcContainer{r: r, id: spec.ID, dir: dir, rootfs: filepath.Join(dir, "rootfs")}
	defer func() {
		if err != nil {
			c.Remove(context.WithoutCancel(ctx))
		}
	}()
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Mkdir(c.rootfs, 0o755); err != nil {
		return nil, err
	}
	if err := unpack(ctx, p.Image, c.rootfs, r.limits); err != nil {
		return nil, fmt.Errorf("unpacking %s (%s): %w", p.Platform, p.Digest, err)
	}
	if err := os.Chmod(c.rootfs, 0o755); err != nil {
		return nil, err
	}
	read := func(p string) ([]byte, error) { return c.ReadFile(ctx, p, 4<<20) }
	uid, gid, err := lookupUser(read, p.Config.Config.User)
	if err != nil {
		return nil, err
	}
	passwd, _ := read("/etc/passwd")
	s, err := runcSpec(p, spec, dir, uid, gid, ImageEnv(p.Config, homeOf(passwd, uid)))
	if err != nil {
		return nil, err
	}
	if r.adjust != nil {
		r.adjust(s)
	}
	c.spec = s
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o600); err != nil {
		return nil, err
	}
	// The entrypoint's stdio is a pipe this process drains into a bounded
	// buffer: runc create detaches, and its children keep the descriptors
	// it was given.
	logR, logW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c.logR, c.log, c.logDone = logR, newBoundedOutput(), make(chan struct{})
	go func() {
		defer close(c.logDone)
		io.Copy(c.log, logR)
	}()
	cmd := r.command(ctx, "create", "--bundle", dir, "--pid-file", filepath.Join(dir, "init.pid"), spec.ID)
	cmd.Stdout, cmd.Stderr = logW, logW
	c.created = true // delete --force is harmless if create failed
	err = cmd.Run()
	logW.Close()
	if err != nil {
		select { // runc's own message, once read
		case <-c.logDone:
		case <-time.After(2 * time.Second):
		}
		return nil, fmt.Errorf("runc create %s: %w: %s", spec.ID, err, tail(c.Logs(ctx), 10))
	}
	return c, nil
}

// runcSpec is the OCI runtime configuration: the image's entrypoint, env,
// user and working directory, the securityContext inject writes for the
// sidecar (no_new_privs and imagespec.StartupCapabilities alone:
// sidecarCaps), and new namespaces (the network one with loopback only).
func runcSpec(p *Platform, spec Spec, dir string, uid, gid uint32, env []string) (*specs.Spec, error) {
	cfg := p.Config.Config
	args := append(append([]string{}, cfg.Entrypoint...), cfg.Cmd...)
	if len(args) == 0 {
		args = []string{"/.imagectl-smoke-no-entrypoint"} // never started (Hold)
	}
	cwd := cfg.WorkingDir
	if cwd == "" {
		cwd = "/"
	}
	for name, content := range map[string]string{
		"hosts":       "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\timagectl-smoke\n",
		"hostname":    "imagectl-smoke\n",
		"resolv.conf": "# imagectl smoke image: no network but loopback\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	mounts := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc"},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=262144k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
		{Destination: "/etc/hosts", Type: "bind", Source: filepath.Join(dir, "hosts"), Options: []string{"rbind", "ro"}},
		{Destination: "/etc/hostname", Type: "bind", Source: filepath.Join(dir, "hostname"), Options: []string{"rbind", "ro"}},
		{Destination: "/etc/resolv.conf", Type: "bind", Source: filepath.Join(dir, "resolv.conf"), Options: []string{"rbind", "ro"}},
	}
	if spec.Mount != "" {
		mounts = append(mounts, specs.Mount{Destination: MountPoint, Type: "bind", Source: spec.Mount, Options: []string{"rbind", "ro"}})
	}
	return &specs.Spec{
		Version: "1.0.2",
		Process: &specs.Process{
			Args: args, Env: env, Cwd: cwd,
			User:            specs.User{UID: uid, GID: gid},
			Capabilities:    sidecarCaps(),
			NoNewPrivileges: true,
			Rlimits:         nofile(),
		},
		Root:     &specs.Root{Path: "rootfs"},
		Hostname: "imagectl-smoke",
		Mounts:   mounts,
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}, {Type: specs.MountNamespace}},
			Resources:  &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}},
			MaskedPaths: []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
				"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}, nil
}

// nofile raises the open-files limit to this process's hard limit (runc
// cannot raise it beyond).
func nofile() []specs.POSIXRlimit {
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
		return nil
	}
	return []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: l.Max, Soft: l.Max}}
}

// sidecarCaps are the capabilities the sidecar runs with: inject drops
// every capability but imagespec.StartupCapabilities, and containerd puts
// what is left in the bounding, effective and permitted sets.
func sidecarCaps() *specs.LinuxCapabilities {
	var caps []string
	for _, c := range imagespec.StartupCapabilities {
		caps = append(caps, "CAP_"+c)
	}
	return &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps}
}

type runcContainer struct {
	r      *Runc
	id     string
	dir    string
	rootfs string
	spec   *specs.Spec
	// log keeps the entrypoint's output, read from logR until logDone.
	log     *boundedOutput
	logR    *os.File
	logDone chan struct{}
	created bool
}

func (c *runcContainer) Start(ctx context.Context) error {
	if out, err := c.r.command(ctx, "start", c.id).CombinedOutput(); err != nil {
		return fmt.Errorf("runc start %s: %w: %s", c.id, err, bytes.TrimSpace(out))
	}
	return nil
}

// Hold does nothing: a created runc container keeps its namespaces (runc
// init waits to be started), and runc exec joins them.
func (c *runcContainer) Hold(context.Context) error { return nil }

func (c *runcContainer) processFile(p Process) (string, error) {
	cwd := p.Cwd
	if cwd == "" {
		cwd = "/"
	}
	proc := specs.Process{
		Args: p.Args, Env: p.Env, Cwd: cwd,
		User:         specs.User{UID: p.UID, GID: p.GID},
		Capabilities: c.spec.Process.Capabilities,
		Rlimits:      c.spec.Process.Rlimits,
	}
	if p.UID != 0 {
		proc.Capabilities = &specs.LinuxCapabilities{} // as an unprivileged user would have
	}
	raw, err := json.Marshal(proc)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(c.dir, "process-*.json")
	if err != nil {
		return "", err
	}
	if _, err := f.Write(raw); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}

func (c *runcContainer) execCmd(ctx context.Context, p Process) (*exec.Cmd, error) {
	pf, err := c.processFile(p)
	if err != nil {
		return nil, err
	}
	return c.r.command(ctx, "exec", "--process", pf, c.id), nil
}

// startFailure recognises runc's message for a process that never started.
func startFailure(stderr []byte) error {
	s := string(stderr)
	if strings.Contains(s, "cannot exec in a stopped container") {
		return ErrStopped
	}
	if strings.Contains(s, "unable to start container process") || strings.Contains(s, "executable file not found") ||
		strings.Contains(s, "no such file or directory") && strings.Contains(s, "exec") {
		return fmt.Errorf("%w: %s", ErrExecStart, strings.TrimSpace(tail(s, 3)))
	}
	return nil
}

func (c *runcContainer) Exec(ctx context.Context, p Process) (*Result, error) {
	cmd, err := c.execCmd(ctx, p)
	if err != nil {
		return nil, err
	}
	stdout, stderr := newBoundedOutput(), newBoundedOutput()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	res := outputResult(stdout, stderr)
	return res, exitResult(ctx, res, err)
}

// outputResult is a Result of what stdout and stderr kept.
func outputResult(stdout, stderr *boundedOutput) *Result {
	return &Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Dropped: stdout.Dropped() + stderr.Dropped()}
}

// exitResult fills the exit code; a process that did not start, or a
// context that ended before the process (its output quoted), is an error.
func exitResult(ctx context.Context, res *Result, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		if out := tail(string(res.Stderr)+string(res.Stdout), 4); out != "" {
			return fmt.Errorf("%w before the process exited; its output: %s", ctx.Err(), out)
		}
		return fmt.Errorf("%w before the process exited, which printed nothing", ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.ExitCode = ee.ExitCode()
		if serr := startFailure(res.Stderr); serr != nil {
			return serr
		}
		return nil
	}
	return err
}

type cmdProc struct {
	cmd    *exec.Cmd
	ctx    context.Context
	out    *lineWriter
	errb   *boundedOutput
	done   chan struct{}
	res    *Result
	resErr error
}

func (p *cmdProc) Lines() <-chan string { return p.out.ch }
func (p *cmdProc) Kill() {
	if p.cmd.Process != nil {
		p.cmd.Process.Kill()
	}
}
func (p *cmdProc) Wait() (*Result, error) {
	<-p.done
	return p.res, p.resErr
}

func startProc(ctx context.Context, cmd *exec.Cmd) (Proc, error) {
	p := &cmdProc{cmd: cmd, ctx: ctx, out: newLineWriter(), errb: newBoundedOutput(), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.errb
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		err := cmd.Wait()
		p.out.close()
		p.res = outputResult(p.out.all, p.errb)
		p.resErr = exitResult(ctx, p.res, err)
		close(p.done)
	}()
	return p, nil
}

func (c *runcContainer) Spawn(ctx context.Context, p Process) (Proc, error) {
	cmd, err := c.execCmd(ctx, p)
	if err != nil {
		return nil, err
	}
	return startProc(ctx, cmd)
}

// initPID is the container's first process (runc init while created).
func (c *runcContainer) initPID(ctx context.Context) (int, error) {
	out, err := c.r.command(ctx, "state", c.id).Output()
	if err != nil {
		return 0, fmt.Errorf("runc state %s: %w", c.id, err)
	}
	var st struct {
		Pid    int    `json:"pid"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return 0, fmt.Errorf("runc state %s: %w", c.id, err)
	}
	if st.Pid <= 0 || st.Status == "stopped" {
		return 0, fmt.Errorf("container %s: %w", c.id, ErrStopped)
	}
	return st.Pid, nil
}

func (c *runcContainer) Dial(ctx context.Context, port int) (net.Conn, error) {
	pid, err := c.initPID(ctx)
	if err != nil {
		return nil, err
	}
	return dialInNetns(ctx, fmt.Sprintf("/proc/%d/ns/net", pid), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

func (c *runcContainer) ReadFile(_ context.Context, p string, max int64) ([]byte, error) {
	hp, err := securejoin.SecureJoin(c.rootfs, p)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(hp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, max)
	}
	return b, nil
}

func (c *runcContainer) Logs(context.Context) string {
	return string(c.log.Bytes())
}

// Remove kills and deletes the container (runc delete --force kills every
// process in its cgroup) and removes the bundle with the unpacked root.
func (c *runcContainer) Remove(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	var errs []error
	if c.created {
		if out, err := c.r.command(ctx, "delete", "--force", c.id).CombinedOutput(); err != nil &&
			!strings.Contains(string(out), "does not exist") && !strings.Contains(string(out), "not exist") {
			errs = append(errs, fmt.Errorf("runc delete --force %s: %w: %s", c.id, err, bytes.TrimSpace(out)))
		}
	}
	if c.logR != nil {
		// Every writer is gone with the container; a process that escaped
		// it gets EPIPE.
		c.logR.Close()
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", c.dir, err))
	}
	return errors.Join(errs...)
}
