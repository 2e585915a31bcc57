package kind

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/imagectl/imagectl/debug"
	"github.com/imagectl/imagectl/internal/syncbuf"
	"github.com/imagectl/imagectl/smoke/probe"
)

// SkipError says why the harness cannot run on this machine.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return e.Reason }

// Config is one smoke run.
type Config struct {
	Image          string // the code-server image under test (required)
	RayVersion     string // e.g. 2.46.0
	Python         string // e.g. 3.12
	KindNodeImage  string // kindest/node image; empty: kind's default
	KubeRayVersion string // X.Y.Z, "oldest" or "newest" (default): see KubeRayNewest
	ProbeBinary    string // static linux imagectl copied into the sidecar
	// Imagectl is the imagectl run on this machine for the guide's inject
	// step; empty: ProbeBinary (a static linux build runs here too).
	Imagectl    string
	ClusterName string // default imagectl-smoke
	Keep        bool   // keep the cluster (and print how to reach it)
	LogDir      string // where logs go on failure; default a temp dir
	Timeout     time.Duration
	Logger      *slog.Logger
	// Debug: after the manual steps, run `imagectl debug` (DebugCommand)
	// with Imagectl on the same cluster, attach from the sidecar to each
	// task it reports paused, and require it to exit 0 with the job
	// SUCCEEDED (Result.Debug).
	Debug bool
}

// Result is what a successful run saw.
type Result struct {
	Attaches   []*probe.Report `json:"attaches"`
	PostMortem *probe.Report   `json:"postMortem,omitempty"`
	JobStatus  string          `json:"jobStatus"`
	Output     []string        `json:"outputLines"`
	LogDir     string          `json:"logDir,omitempty"`
	// Debug is the imagectl debug session's, with Config.Debug.
	Debug *DebugResult `json:"debug,omitempty"`
}

// DebugResult is what the imagectl debug session of Config.Debug saw.
type DebugResult struct {
	// Events are the kinds of its -o json events, in order, each run of
	// one kind once.
	Events []string `json:"events"`
	// Paused counts its paused events: at least one (a worker that pauses
	// again between two of its 2 s polls, on the same debugpy port, is one
	// pause to it, so not one per task).
	Paused     int             `json:"paused"`
	Attaches   []*probe.Report `json:"attaches"`
	PostMortem *probe.Report   `json:"postMortem,omitempty"`
	JobStatus  string          `json:"jobStatus"`
	// FirstPaused is the time from its start to its first paused event.
	FirstPaused time.Duration `json:"firstPaused"`
}

// Preflight checks what the harness needs and returns a *SkipError naming
// the first thing missing.
func Preflight(ctx context.Context) error {
	if _, err := exec.LookPath("docker"); err != nil {
		return &SkipError{"no Docker: the docker client is not on PATH"}
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(cctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		return &SkipError{"no Docker engine: docker info failed: " + firstLine(out, err)}
	}
	for _, tool := range []struct{ name, why string }{
		{"kind", "kind creates the cluster (go install sigs.k8s.io/kind@" + KindVersion + ")"},
		{"kubectl", "kubectl drives the cluster"},
		{"git", "git fetches the KubeRay kustomization"},
		{"kubectl-ray", "the kubectl ray plugin submits the RayJob (README step 4)"},
		{"ray", "the plugin runs the local Ray CLI's `ray job submit`"},
	} {
		if _, err := exec.LookPath(tool.name); err != nil {
			return &SkipError{"no " + tool.name + " on PATH (" + tool.why + ")"}
		}
	}
	for _, hostport := range []string{"registry-1.docker.io:443", "quay.io:443", "github.com:443", "pypi.org:443"} {
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err := d.DialContext(ctx, "tcp", hostport)
		if err != nil {
			return &SkipError{"no network: cannot reach " + hostport + " (images, the KubeRay kustomization and debugpy from PyPI are fetched): " + err.Error()}
		}
		c.Close()
	}
	return nil
}

func firstLine(out []byte, err error) string {
	s := strings.TrimSpace(string(out))
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return err.Error()
}

// Run runs the smoke test end to end.
func Run(ctx context.Context, cfg Config) (res *Result, err error) {
	if cfg.Image == "" {
		return nil, errors.New("smoke: an image to test is required")
	}
	if cfg.ClusterName == "" {
		cfg.ClusterName = "imagectl-smoke"
	}
	kuberay, err := KubeRayVersion(cfg.KubeRayVersion)
	if err != nil {
		return nil, err
	}
	cfg.KubeRayVersion = kuberay
	if cfg.Python == "" {
		cfg.Python = "3.12"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 45 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.ProbeBinary == "" {
		return nil, errors.New("smoke: a static linux imagectl binary to copy into the sidecar is required (build with CGO_ENABLED=0 GOOS=linux)")
	}
	if err := Preflight(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	log := cfg.Logger
	// Before any cluster: the image must be readable, by this machine's
	// docker config when it is private.
	access, err := ResolvePullAccess(ctx, cfg.Image)
	if err != nil {
		return nil, err
	}

	work, err := os.MkdirTemp("", "imagectl-smoke-")
	if err != nil {
		return nil, err
	}
	if cfg.LogDir == "" {
		cfg.LogDir = filepath.Join(work, "logs")
	}
	guideDir := filepath.Join(work, "guide")
	if err := os.MkdirAll(guideDir, 0o700); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(work, "kubeconfig")
	h := &harness{cfg: cfg, log: log, kubeconfig: kubeconfig, dir: guideDir, access: access,
		cluster: &kindCluster{name: cfg.ClusterName, kubeconfig: kubeconfig, nodeImage: cfg.KindNodeImage}}

	log.Info("creating kind cluster", "name", cfg.ClusterName, "node_image", cfg.KindNodeImage)
	if err := h.cluster.create(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			h.collectLogs(context.WithoutCancel(ctx))
			err = fmt.Errorf("%w (logs in %s)", err, cfg.LogDir)
		}
		if cfg.Keep {
			log.Info("keeping the cluster", "name", cfg.ClusterName, "kubeconfig", h.kubeconfig)
			return
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		if derr := h.cluster.delete(dctx); derr != nil {
			log.Warn("deleting kind cluster", "name", cfg.ClusterName, "err", derr)
		}
		os.Remove(h.kubeconfig)
		os.RemoveAll(guideDir) // secret.yaml holds the password
	}()
	return h.run(ctx)
}

// Stopped is where RunUntilPods stopped: the RayCluster the operator made
// for the smoke RayJob and its head Pod, found by the guide's lookup.
type Stopped struct {
	RayCluster string `json:"rayCluster"`
	HeadPod    string `json:"headPod"`
}

// RunUntilPods runs the harness's steps against the cluster of kubeconfig,
// where a KubeRay operator already runs, in the namespace its context
// names, and stops where a Pod would have to run. It writes the guide's
// inputs into dir and runs, as Run does: imagectl inject (with --image
// cfg.Image: nothing pulls it, so it is not looked up), the apply of the
// password Secret, the pre-pull DaemonSet's apply, rollout wait and delete
// (on a cluster without nodes the wait has nothing to wait for), then,
// for the kubectl ray plugin's submit (which needs a running cluster), what
// the plugin does first with -f: `kubectl create -f rayjob-debug.yaml`.
// Then it waits, as Run does, for the RayJob's RayCluster and the guide's
// head-pod lookup, and returns before the guide's Ready wait. The operator
// install and its wait are skipped (the operator runs already).
func RunUntilPods(ctx context.Context, cfg Config, kubeconfig, dir string) (*Stopped, error) {
	switch {
	case cfg.Image == "":
		return nil, errors.New("smoke: an image to test is required")
	case kubeconfig == "":
		return nil, errors.New("smoke: a kubeconfig is required")
	case dir == "":
		return nil, errors.New("smoke: a directory for the guide's files is required")
	case cfg.Imagectl == "":
		return nil, errors.New("smoke: an imagectl to run the guide's inject step with is required")
	}
	if cfg.Python == "" {
		cfg.Python = "3.12"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	kuberay, err := KubeRayVersion(cfg.KubeRayVersion)
	if err != nil {
		return nil, err
	}
	cfg.KubeRayVersion = kuberay
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	h := &harness{cfg: cfg, log: cfg.Logger, kubeconfig: kubeconfig, dir: dir, access: &PullAccess{Pinned: cfg.Image}, untilPods: true}
	if _, err := h.run(ctx); err != nil {
		return nil, err
	}
	return &Stopped{RayCluster: h.rayCluster, HeadPod: h.headPod}, nil
}

type harness struct {
	cfg        Config
	log        *slog.Logger
	kubeconfig string
	dir        string       // where the guide's commands run: its files are here
	cluster    *kindCluster // the kind cluster Run created; nil for RunUntilPods
	headPod    string
	rayCluster string
	namespace  string // the kubeconfig context's, the guide's $NS
	operator   string // namespace/name of the operator's Deployment
	access     *PullAccess
	submit     *background // kubectl ray job submit, while it runs
	// untilPods: stop before the first step that needs a running Pod
	// (RunUntilPods).
	untilPods bool
}

const jobName = "imagectl-smoke"

func (h *harness) run(ctx context.Context) (*Result, error) {
	guide := Guide(h.cfg.KubeRayVersion)
	ns, err := contextNamespace(h.kubeconfig)
	if err != nil {
		return nil, err
	}
	h.namespace = ns
	if h.dir == "" {
		dir, err := os.MkdirTemp("", "imagectl-smoke-guide-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		h.dir = dir
	}
	// No image is loaded into kind: the node pulls the image under test by
	// digest from the registry it was pushed to, with an imagePullSecret
	// made from this machine's docker config when the repository is private.
	access := h.access
	if access == nil {
		var err error
		if access, err = ResolvePullAccess(ctx, h.cfg.Image); err != nil {
			return nil, err
		}
	}
	h.log.Info("the node pulls the image by digest", "image", access.Pinned, "pull_secret", access.Secret != nil)
	if !h.untilPods {
		if err := h.installKubeRay(ctx, guide); err != nil {
			return nil, err
		}
	}
	if err := h.writeInputs(); err != nil {
		return nil, err
	}
	extra := []string{"--image", access.Pinned}
	if access.Secret != nil {
		if _, err := h.kubectl(ctx, access.Secret, "apply", "--server-side", "-f", "-"); err != nil {
			return nil, fmt.Errorf("creating the imagePullSecret %s: %w", PullSecretName, err)
		}
		extra = append(extra, "--image-pull-secret", PullSecretName)
	}
	if err := h.inject(ctx, guide[stepInject], extra); err != nil {
		return nil, err
	}
	if _, err := h.kubectl(ctx, nil, h.args(guide[stepApplySecret])...); err != nil {
		return nil, fmt.Errorf("applying the password Secret: %w", err)
	}
	if err := h.prepull(ctx, guide, access); err != nil {
		return nil, err
	}
	if h.untilPods {
		// The plugin's -f creates the RayJob from the file, then waits for
		// a running cluster.
		h.log.Info("creating the RayJob as the kubectl ray plugin does first", "command", guide[stepSubmit].String())
		if _, err := h.kubectl(ctx, nil, "create", "-n", h.namespace, "-f", InjectedFile); err != nil {
			return nil, fmt.Errorf("creating the RayJob of %s: %w", InjectedFile, err)
		}
		if err := h.waitHeadPod(ctx, guide); err != nil {
			return nil, err
		}
		return &Result{}, nil
	}
	h.log.Info("submitting with the kubectl ray plugin", "command", guide[stepSubmit].String())
	sub, err := h.startPlugin(ctx, h.args(guide[stepSubmit]))
	if err != nil {
		return nil, err
	}
	h.submit = sub
	defer sub.stop()
	if err := h.waitHeadPod(ctx, guide); err != nil {
		return nil, err
	}
	if _, err := h.kubectl(ctx, nil, "cp", "-c", "code-server", h.cfg.ProbeBinary, h.headPod+":/tmp/imagectl"); err != nil {
		return nil, fmt.Errorf("copying the probe into the code-server sidecar: %w", err)
	}
	if _, err := h.kubectl(ctx, nil, "exec", h.headPod, "-c", "code-server", "--", "chmod", "0755", "/tmp/imagectl"); err != nil {
		return nil, err
	}
	res := &Result{}
	for i := 1; i <= ExpectedPauses; i++ {
		h.log.Info("attaching from the code-server sidecar", "pause", i, "of", ExpectedPauses)
		rep, err := h.attach(ctx, ExpectedFunction)
		if rep != nil {
			res.Attaches = append(res.Attaches, rep)
		}
		if err != nil {
			return res, fmt.Errorf("attach %d: %w", i, err)
		}
	}
	h.log.Info("attaching post-mortem from the code-server sidecar", "task", PostMortemFunction)
	rep, err := h.attach(ctx, PostMortemFunction, "--post-mortem")
	res.PostMortem = rep
	if err != nil {
		return res, fmt.Errorf("post-mortem attach: %w", err)
	}
	out, err := h.waitPlugin(ctx)
	if err != nil {
		return res, err
	}
	for _, want := range []string{ExpectedOutput, ExpectedPostMortem} {
		if !strings.Contains(out, want) {
			return res, fmt.Errorf("kubectl ray job submit ended but the job's output lacks %q:\n%s", want, tail(out, 40))
		}
		res.Output = append(res.Output, want)
	}
	status, err := h.waitJob(ctx)
	res.JobStatus = status
	if err != nil || !h.cfg.Debug {
		return res, err
	}
	res.Debug, err = h.runDebug(ctx, access)
	return res, err
}

// runDebug runs DebugCommand after the manual steps: it deletes the
// plugin's RayJob (debug refuses an existing one without --replace; the
// password Secret stays, and debug keeps it), starts imagectl debug in the
// guide's directory with KUBECONFIG, reads its events, attaches from the
// sidecar of the head Pod its ready event names once the first task is
// reported paused (each breakpoint, then post-mortem), and requires it to
// exit 0 with a finished event SUCCEEDED.
func (h *harness) runDebug(ctx context.Context, access *PullAccess) (*DebugResult, error) {
	if _, err := h.kubectl(ctx, nil, "delete", "-n", h.namespace, "rayjob", jobName, "--ignore-not-found", "--wait=true", "--timeout=5m"); err != nil {
		return nil, fmt.Errorf("deleting the plugin's RayJob before imagectl debug: %w", err)
	}
	bin := h.cfg.Imagectl
	if bin == "" {
		bin = h.cfg.ProbeBinary
	}
	c := DebugCommand()
	dash := slices.Index(c.Args, "--")
	args := append([]string{}, c.Args[1:dash]...)
	args = append(args, "--image", access.Pinned)
	if access.Secret != nil {
		args = append(args, "--image-pull-secret", PullSecretName)
	}
	args = append(args, c.Args[dash:]...)
	h.log.Info("running imagectl debug", "command", "imagectl "+strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = h.dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+h.kubeconfig)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("imagectl %s: %w", strings.Join(args, " "), err)
	}
	events := make(chan debug.Event)
	readErr := make(chan error, 1)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e debug.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				readErr <- fmt.Errorf("imagectl debug -o json printed a line that is not an event: %q: %w", sc.Text(), err)
				return
			}
			events <- e
		}
		readErr <- sc.Err()
	}()
	res := &DebugResult{}
	var finished *debug.Event
	record := func(e debug.Event) {
		if n := len(res.Events); n == 0 || res.Events[n-1] != string(e.Kind) {
			res.Events = append(res.Events, string(e.Kind))
		}
		switch e.Kind {
		case debug.KindReady:
			h.headPod = e.Pod
		case debug.KindPaused:
			if res.Paused == 0 {
				res.FirstPaused = time.Since(start).Round(time.Second)
			}
			res.Paused++
		case debug.KindFinished:
			finished = &e
		}
		h.log.Info("imagectl debug", "event", e.Kind, "message", e.Message)
	}
	// fail stops the session and says what it printed.
	fail := func(err error) (*DebugResult, error) {
		cmd.Process.Signal(os.Interrupt)
		for e := range events {
			record(e)
		}
		cmd.Wait()
		return res, fmt.Errorf("imagectl debug: %w (events %v; stderr: %s)", err, res.Events, tail(stderr.String(), 20))
	}
	// Until the first paused task.
	for res.Paused == 0 {
		e, ok := <-events
		if !ok {
			return fail(errors.New("it ended before a task was paused"))
		}
		record(e)
	}
	if h.headPod == "" {
		return fail(errors.New("a paused event came before the ready event that names the head Pod"))
	}
	// Meanwhile the events go on: keep reading them.
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for e := range events {
			record(e)
		}
	}()
	attachAll := func() error {
		if _, err := h.kubectl(ctx, nil, "cp", "-c", "code-server", h.cfg.ProbeBinary, h.headPod+":/tmp/imagectl"); err != nil {
			return fmt.Errorf("copying the probe into the code-server sidecar: %w", err)
		}
		if _, err := h.kubectl(ctx, nil, "exec", h.headPod, "-c", "code-server", "--", "chmod", "0755", "/tmp/imagectl"); err != nil {
			return err
		}
		for i := 1; i <= ExpectedPauses; i++ {
			h.log.Info("imagectl debug: attaching from the code-server sidecar", "pause", i, "of", ExpectedPauses)
			rep, err := h.attach(ctx, ExpectedFunction)
			if rep != nil {
				res.Attaches = append(res.Attaches, rep)
			}
			if err != nil {
				return fmt.Errorf("attach %d: %w", i, err)
			}
		}
		rep, err := h.attach(ctx, PostMortemFunction, "--post-mortem")
		res.PostMortem = rep
		if err != nil {
			return fmt.Errorf("post-mortem attach: %w", err)
		}
		return nil
	}
	if err := attachAll(); err != nil {
		cmd.Process.Signal(os.Interrupt)
		<-drained
		cmd.Wait()
		return res, fmt.Errorf("imagectl debug session: %w (events %v; stderr: %s)", err, res.Events, tail(stderr.String(), 20))
	}
	<-drained
	werr := cmd.Wait()
	if err := <-readErr; err != nil {
		return res, err
	}
	if finished != nil {
		res.JobStatus = finished.JobStatus
	}
	switch {
	case werr != nil:
		return res, fmt.Errorf("imagectl debug: %w (events %v; stderr: %s)", werr, res.Events, tail(stderr.String(), 20))
	case res.JobStatus != "SUCCEEDED":
		return res, fmt.Errorf("imagectl debug exited 0 without a finished event SUCCEEDED (events %v)", res.Events)
	}
	for _, want := range []debug.Kind{debug.KindReady, debug.KindSubmitted, debug.KindPaused, debug.KindFinished, debug.KindCleanup} {
		if !slices.Contains(res.Events, string(want)) {
			return res, fmt.Errorf("imagectl debug printed no %s event (events %v)", want, res.Events)
		}
	}
	return res, nil
}

// writeInputs writes what the user has before the guide starts: the plain
// RayJob and the job's script in its working directory.
func (h *harness) writeInputs() error {
	plain, err := RenderPlain(Params{Name: jobName, RayVersion: h.cfg.RayVersion, Python: h.cfg.Python})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(h.dir, PlainFile), plain, 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(h.dir, WorkingDir), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(h.dir, WorkingDir, ScriptFile), []byte(TaskScript), 0o644)
}

// inject runs the guide's `imagectl inject ... > rayjob-debug.yaml` with
// extra flags (the image under test), with this machine's imagectl.
func (h *harness) inject(ctx context.Context, c Command, extra []string) error {
	bin := h.cfg.Imagectl
	if bin == "" {
		bin = h.cfg.ProbeBinary
	}
	args := append(append([]string{}, c.Args[1:]...), extra...)
	out, err := os.OpenFile(filepath.Join(h.dir, c.Stdout), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = h.dir
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("imagectl %s > %s: %w: %s", strings.Join(args, " "), c.Stdout, err, tail(stderr.String(), 20))
	}
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if l != "" {
			h.log.Warn("imagectl inject", "stderr", l)
		}
	}
	return out.Close()
}

// prepull writes prepull.yaml with the two images of rayjob-debug.yaml and
// runs the guide's apply, rollout wait and delete.
func (h *harness) prepull(ctx context.Context, guide []Command, access *PullAccess) error {
	injected, err := os.ReadFile(filepath.Join(h.dir, InjectedFile))
	if err != nil {
		return err
	}
	secret := ""
	if access.Secret != nil {
		secret = PullSecretName
	}
	ds, err := Prepull(injected, secret)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(h.dir, PrepullFile), ds, 0o644); err != nil {
		return err
	}
	h.log.Info("pulling the Ray and sidecar images onto the node", "daemonset", PrepullName)
	for _, step := range []int{stepPrepull, stepWaitPrepull, stepDeletePrepull} {
		if _, err := h.kubectl(ctx, nil, h.args(guide[step])...); err != nil {
			return fmt.Errorf("pre-pulling the images (%s): %w", guide[step], err)
		}
	}
	return nil
}

// attach runs `imagectl smoke attach` inside the sidecar for task fn.
func (h *harness) attach(ctx context.Context, fn string, flags ...string) (*probe.Report, error) {
	args := append([]string{"exec", h.headPod, "-c", "code-server", "--", "/tmp/imagectl", "smoke", "attach",
		"--dashboard", "http://127.0.0.1:8265", "--pause-timeout", "15m", "--task", fn,
		"--expect-function", fn, "--expect-file", ExpectedFile,
		"--action", "continue", "--output", "json"}, flags...)
	out, err := h.kubectl(ctx, nil, args...)
	var rep probe.Report
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
		return nil, fmt.Errorf("from the sidecar: %w; output: %s", errors.Join(err, jerr), out)
	}
	if err != nil || !rep.OK {
		return &rep, fmt.Errorf("from the sidecar failed (%s): %s", rep.ErrorKind, rep.Error)
	}
	return &rep, nil
}

// background is a command the harness runs while it does other work.
type background struct {
	cmd  *exec.Cmd
	out  *syncbuf.Buffer
	done chan struct{}
	err  error // set when done is closed
}

// exited reports the plugin's end as an error while it should still run.
func (b *background) exited() error {
	if b == nil {
		return nil
	}
	select {
	case <-b.done:
		return fmt.Errorf("kubectl ray job submit exited early (%v):\n%s", b.err, tail(b.out.String(), 40))
	default:
		return nil
	}
}

func (b *background) stop() {
	select {
	case <-b.done:
	default:
		b.cmd.Process.Kill()
		<-b.done
	}
}

// startPlugin starts `kubectl ray ...` (args after kubectl) in the guide's
// directory; the plugin reads the cluster from KUBECONFIG.
func (h *harness) startPlugin(ctx context.Context, args []string) (*background, error) {
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Dir = h.dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+h.kubeconfig)
	b := &background{cmd: cmd, out: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = b.out, b.out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	go func() {
		b.err = cmd.Wait()
		close(b.done)
	}()
	return b, nil
}

// waitPlugin waits for the submit to end (it follows the job's logs until
// the job ends) and returns its output; it must exit 0.
func (h *harness) waitPlugin(ctx context.Context) (string, error) {
	select {
	case <-ctx.Done():
		return h.submit.out.String(), fmt.Errorf("kubectl ray job submit did not end: %w:\n%s", ctx.Err(), tail(h.submit.out.String(), 40))
	case <-h.submit.done:
	}
	out := h.submit.out.String()
	if h.submit.err != nil {
		return out, fmt.Errorf("kubectl ray job submit: %w:\n%s", h.submit.err, tail(out, 40))
	}
	return out, nil
}

// installKubeRay runs the user guide's install and wait, then finds the
// operator by its labels, wherever it runs.
func (h *harness) installKubeRay(ctx context.Context, guide []Command) error {
	h.log.Info("installing the KubeRay operator", "version", h.cfg.KubeRayVersion, "from", KubeRayKustomization(h.cfg.KubeRayVersion))
	if _, err := h.kubectl(ctx, nil, guide[stepInstall].Args[1:]...); err != nil {
		return fmt.Errorf("installing KubeRay %s: %w", h.cfg.KubeRayVersion, err)
	}
	if _, err := h.kubectl(ctx, nil, guide[stepWaitOperator].Args[1:]...); err != nil {
		return fmt.Errorf("KubeRay operator not available: %w", err)
	}
	op, err := h.findOperator(ctx)
	if err != nil {
		return err
	}
	h.operator = op
	h.log.Info("KubeRay operator running", "deployment", op)
	return nil
}

// findOperator is namespace/name of the operator's Deployment, found by
// OperatorSelectors in every namespace.
func (h *harness) findOperator(ctx context.Context) (string, error) {
	for _, sel := range OperatorSelectors {
		out, err := h.kubectl(ctx, nil, "get", "deployments", "-A", "-l", sel,
			"-o", `jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}`)
		if err != nil {
			return "", err
		}
		if lines := strings.Fields(out); len(lines) > 0 {
			if len(lines) > 1 {
				h.log.Warn("more than one KubeRay operator", "deployments", lines)
			}
			return lines[0], nil
		}
	}
	return "", fmt.Errorf("no KubeRay operator Deployment labelled %s in any namespace", strings.Join(OperatorSelectors, " or "))
}

func (h *harness) waitHeadPod(ctx context.Context, guide []Command) error {
	h.log.Info("waiting for the Ray head pod (image pulls can take minutes)")
	for {
		name, err := h.kubectl(ctx, nil, h.args(guide[stepCluster])...)
		if err == nil && strings.TrimSpace(name) != "" {
			h.rayCluster = strings.TrimSpace(name)
			break
		}
		if err := h.submit.exited(); err != nil {
			return err
		}
		if err := sleep(ctx, 5*time.Second); err != nil {
			return fmt.Errorf("RayJob %s never reported a RayCluster: %w", jobName, err)
		}
	}
	for {
		pod, err := h.kubectl(ctx, nil, h.args(guide[stepHeadPod])...)
		if err == nil && strings.TrimSpace(pod) != "" {
			h.headPod = strings.TrimSpace(pod)
			break
		}
		if err := h.submit.exited(); err != nil {
			return err
		}
		if err := sleep(ctx, 5*time.Second); err != nil {
			return fmt.Errorf("no head pod (%s): %w", guide[stepHeadPod], err)
		}
	}
	if h.untilPods {
		h.log.Info("stopping before the head pod's Ready wait", "pod", h.headPod, "command", guide[stepWaitHead].String())
		return nil
	}
	if _, err := h.kubectl(ctx, nil, h.args(guide[stepWaitHead])...); err != nil {
		return fmt.Errorf("head pod %s not ready: %w", h.headPod, err)
	}
	return nil
}

// args are c's arguments after kubectl with the guide's variables
// expanded: $NS, and $CLUSTER and $HEAD once found.
func (h *harness) args(c Command) []string {
	return expand(c.Args[1:], map[string]string{"NS": h.namespace, "CLUSTER": h.rayCluster, "HEAD": h.headPod})
}

// expand replaces $NAME in args.
func expand(args []string, vars map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = os.Expand(a, func(k string) string {
			if v, ok := vars[k]; ok {
				return v
			}
			return "$" + k
		})
	}
	return out
}

func (h *harness) waitJob(ctx context.Context) (string, error) {
	for {
		st, err := h.kubectl(ctx, nil, "get", "rayjob", jobName, "-o", "jsonpath={.status.jobStatus}")
		st = strings.TrimSpace(st)
		if err == nil {
			switch st {
			case "SUCCEEDED":
				return st, nil
			case "FAILED", "STOPPED":
				return st, fmt.Errorf("RayJob %s ended %s", jobName, st)
			}
		}
		if err := sleep(ctx, 5*time.Second); err != nil {
			return st, fmt.Errorf("RayJob %s did not reach SUCCEEDED (last jobStatus %q): %w", jobName, st, err)
		}
	}
}

func (h *harness) collectLogs(ctx context.Context) {
	dir := h.cfg.LogDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.log.Warn("log dir", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	save := func(name string, args ...string) {
		out, err := h.kubectl(ctx, nil, args...)
		if err != nil {
			out += "\n" + err.Error()
		}
		os.WriteFile(filepath.Join(dir, name), []byte(out), 0o644)
	}
	save("resources.txt", "get", "all,rayjobs,rayclusters,events", "-A", "-o", "wide")
	save("rayjob.yaml", "get", "rayjob", jobName, "-o", "yaml")
	if h.submit != nil {
		os.WriteFile(filepath.Join(dir, "kubectl-ray-job-submit.log"), []byte(h.submit.out.String()), 0o644)
	}
	if ns, name, ok := strings.Cut(h.operator, "/"); ok {
		save("operator.log", "-n", ns, "logs", "deployment/"+name, "--tail", "-1")
	}
	if h.headPod != "" {
		save("head-ray.log", "logs", h.headPod, "-c", "ray-head", "--tail", "-1")
		save("head-code-server.log", "logs", h.headPod, "-c", "code-server", "--tail", "-1")
		save("head-describe.txt", "describe", "pod", h.headPod)
	}
	if h.rayCluster != "" {
		save("workers.log", "logs", "-l", "ray.io/cluster="+h.rayCluster+",ray.io/node-type=worker", "--tail", "-1", "--all-containers")
	}
	if b, err := os.ReadFile(filepath.Join(h.dir, InjectedFile)); err == nil {
		os.WriteFile(filepath.Join(dir, InjectedFile), redactSecrets(b), 0o644)
	}
	if h.cluster == nil {
		return
	}
	if err := h.cluster.exportLogs(ctx, filepath.Join(dir, "kind")); err != nil {
		h.log.Warn("kind export logs", "err", err)
	}
}

// kubectl runs kubectl against the smoke cluster and returns its stdout; a
// failure names the command and carries stderr.
func (h *harness) kubectl(ctx context.Context, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", h.kubeconfig}, args...)...)
	cmd.Dir = h.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, tail(stderr.String(), 20))
	}
	return stdout.String(), nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"... (" + strconv.Itoa(len(lines)-n) + " lines cut)"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// redactSecrets replaces every Secret document of a manifest with a
// comment, so logs never carry a password.
func redactSecrets(manifest []byte) []byte {
	var b strings.Builder
	for i, doc := range strings.Split(string(manifest), "\n---") {
		if i > 0 {
			b.WriteString("\n---")
		}
		if strings.Contains(doc, "\nkind: Secret\n") {
			b.WriteString("\n# a Secret (redacted)\n")
			continue
		}
		b.WriteString(doc)
	}
	return []byte(b.String())
}
