package kind

import (
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
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/kind/pkg/cluster"
	kindcmd "sigs.k8s.io/kind/pkg/cmd"

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
	ClusterName    string // default imagectl-smoke
	Keep           bool   // keep the cluster (and print how to reach it)
	LogDir         string // where logs go on failure; default a temp dir
	Timeout        time.Duration
	Logger         *slog.Logger
}

// Result is what a successful run saw.
type Result struct {
	Attaches  []*probe.Report `json:"attaches"`
	JobStatus string          `json:"job_status"`
	Output    string          `json:"output_line"`
	LogDir    string          `json:"log_dir,omitempty"`
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
	for _, tool := range []string{"kubectl", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			return &SkipError{"no " + tool + " on PATH (kubectl drives the cluster; git fetches the KubeRay kustomization)"}
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
	h := &harness{cfg: cfg, log: log, kubeconfig: filepath.Join(work, "kubeconfig"), access: access,
		provider: cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(kindcmd.NewLogger()))}

	log.Info("creating kind cluster", "name", cfg.ClusterName, "node_image", cfg.KindNodeImage)
	opts := []cluster.CreateOption{cluster.CreateWithWaitForReady(5 * time.Minute), cluster.CreateWithKubeconfigPath(h.kubeconfig),
		cluster.CreateWithDisplayUsage(false), cluster.CreateWithDisplaySalutation(false)}
	if cfg.KindNodeImage != "" {
		opts = append(opts, cluster.CreateWithNodeImage(cfg.KindNodeImage))
	}
	if err := h.provider.Create(cfg.ClusterName, opts...); err != nil {
		return nil, fmt.Errorf("creating kind cluster %s: %w", cfg.ClusterName, err)
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
		if derr := h.provider.Delete(cfg.ClusterName, h.kubeconfig); derr != nil {
			log.Warn("deleting kind cluster", "name", cfg.ClusterName, "err", derr)
		}
		os.Remove(h.kubeconfig)
	}()
	return h.run(ctx)
}

type harness struct {
	cfg        Config
	log        *slog.Logger
	kubeconfig string
	provider   *cluster.Provider
	headPod    string
	rayCluster string
	operator   string // namespace/name of the operator's Deployment
	manifest   []byte // what was applied
	access     *PullAccess
}

const jobName = "imagectl-smoke"

func (h *harness) run(ctx context.Context) (*Result, error) {
	guide := Guide(h.cfg.KubeRayVersion)
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
	if err := h.installKubeRay(ctx, guide); err != nil {
		return nil, err
	}
	args := append(append([]string{}, InjectArgs...), "--image", access.Pinned)
	if access.Secret != nil {
		if _, err := h.kubectl(ctx, access.Secret, "apply", "-f", "-"); err != nil {
			return nil, fmt.Errorf("creating the imagePullSecret %s: %w", PullSecretName, err)
		}
		args = append(args, "--image-pull-secret", PullSecretName)
	}
	manifest, warnings, err := Manifest(ctx, Params{Name: jobName, RayVersion: h.cfg.RayVersion, Python: h.cfg.Python}, args)
	if err != nil {
		return nil, fmt.Errorf("imagectl inject %s: %w", strings.Join(args, " "), err)
	}
	for _, w := range warnings {
		h.log.Warn("imagectl inject", "warning", w)
	}
	h.manifest = manifest
	if _, err := h.kubectl(ctx, manifest, guide[stepInject].Pipe[1:]...); err != nil {
		return nil, fmt.Errorf("applying the smoke RayJob: %w", err)
	}
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
		out, err := h.kubectl(ctx, nil, "exec", h.headPod, "-c", "code-server", "--", "/tmp/imagectl", "smoke", "attach",
			"--dashboard", "http://127.0.0.1:8265", "--timeout", "15m", "--task", ExpectedFunction,
			"--expect-function", ExpectedFunction, "--expect-file", ExpectedFile,
			"--action", "continue", "--output", "json")
		var rep probe.Report
		if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
			return res, fmt.Errorf("attach %d from the sidecar: %w; output: %s", i, errors.Join(err, jerr), out)
		}
		res.Attaches = append(res.Attaches, &rep)
		if err != nil || !rep.OK {
			return res, fmt.Errorf("attach %d from the sidecar failed (%s): %s", i, rep.ErrorKind, rep.Error)
		}
	}
	status, err := h.waitJob(ctx)
	res.JobStatus = status
	if err != nil {
		return res, err
	}
	logs, err := h.kubectl(ctx, nil, "logs", "job/"+jobName, "--tail", "-1")
	if err != nil {
		return res, fmt.Errorf("reading the submitter's logs: %w", err)
	}
	if !strings.Contains(logs, ExpectedOutput) {
		return res, fmt.Errorf("RayJob %s SUCCEEDED but its output lacks %q:\n%s", jobName, ExpectedOutput, tail(logs, 40))
	}
	res.Output = ExpectedOutput
	return res, nil
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
		name, err := h.kubectl(ctx, nil, "get", "rayjob", jobName, "-o", "jsonpath={.status.rayClusterName}")
		if err == nil && strings.TrimSpace(name) != "" {
			h.rayCluster = strings.TrimSpace(name)
			break
		}
		if err := sleep(ctx, 5*time.Second); err != nil {
			return fmt.Errorf("RayJob %s never reported a RayCluster: %w", jobName, err)
		}
	}
	for {
		pod, err := h.kubectl(ctx, nil, guide[stepHeadPod].Args[1:]...)
		if err == nil && strings.TrimSpace(pod) != "" {
			h.headPod = strings.TrimSpace(pod)
			break
		}
		if err := sleep(ctx, 5*time.Second); err != nil {
			return fmt.Errorf("no head pod (%s): %w", guide[stepHeadPod], err)
		}
	}
	wait := expand(guide[stepWaitHead].Args[1:], map[string]string{"HEAD": h.headPod})
	if _, err := h.kubectl(ctx, nil, wait...); err != nil {
		return fmt.Errorf("head pod %s not ready: %w", h.headPod, err)
	}
	return nil
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
	save("submitter.log", "logs", "job/"+jobName, "--tail", "-1")
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
	if h.manifest != nil {
		os.WriteFile(filepath.Join(dir, "applied.yaml"), redactSecrets(h.manifest), 0o644)
	}
	if h.provider == nil {
		return
	}
	if err := h.provider.CollectLogs(h.cfg.ClusterName, filepath.Join(dir, "kind")); err != nil {
		h.log.Warn("kind export logs", "err", err)
	}
}

// kubectl runs kubectl against the smoke cluster and returns its stdout; a
// failure names the command and carries stderr.
func (h *harness) kubectl(ctx context.Context, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", h.kubeconfig}, args...)...)
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
