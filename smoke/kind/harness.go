package kind

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
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
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindcmd "sigs.k8s.io/kind/pkg/cmd"

	"github.com/imagectl/imagectl/smoke/probe"
	smoketest "github.com/imagectl/imagectl/tests/smoke"
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
	KubeRayVersion string // e.g. 1.4.2
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
	for _, hostport := range []string{"registry-1.docker.io:443", "github.com:443", "pypi.org:443"} {
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
	if cfg.KubeRayVersion == "" {
		cfg.KubeRayVersion = "1.4.2"
	}
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

	work, err := os.MkdirTemp("", "imagectl-smoke-")
	if err != nil {
		return nil, err
	}
	if cfg.LogDir == "" {
		cfg.LogDir = filepath.Join(work, "logs")
	}
	h := &harness{cfg: cfg, log: log, kubeconfig: filepath.Join(work, "kubeconfig"),
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
}

const jobName = "imagectl-smoke"

func (h *harness) run(ctx context.Context) (*Result, error) {
	if err := h.loadImage(ctx); err != nil {
		return nil, err
	}
	if err := h.installKubeRay(ctx); err != nil {
		return nil, err
	}
	pw := make([]byte, 18)
	if _, err := rand.Read(pw); err != nil {
		return nil, err
	}
	manifest, err := smoketest.Render(smoketest.Params{Name: jobName, Image: h.cfg.Image, RayVersion: h.cfg.RayVersion,
		Python: h.cfg.Python, Password: hex.EncodeToString(pw)})
	if err != nil {
		return nil, err
	}
	if _, err := h.kubectl(ctx, manifest, "apply", "-f", "-"); err != nil {
		return nil, fmt.Errorf("applying the smoke RayJob: %w", err)
	}
	if err := h.waitHeadPod(ctx); err != nil {
		return nil, err
	}
	if _, err := h.kubectl(ctx, nil, "cp", "-c", "code-server", h.cfg.ProbeBinary, h.headPod+":/tmp/imagectl"); err != nil {
		return nil, fmt.Errorf("copying the probe into the code-server sidecar: %w", err)
	}
	if _, err := h.kubectl(ctx, nil, "exec", h.headPod, "-c", "code-server", "--", "chmod", "0755", "/tmp/imagectl"); err != nil {
		return nil, err
	}
	res := &Result{}
	for i := 1; i <= smoketest.ExpectedPauses; i++ {
		h.log.Info("attaching from the code-server sidecar", "pause", i, "of", smoketest.ExpectedPauses)
		out, err := h.kubectl(ctx, nil, "exec", h.headPod, "-c", "code-server", "--", "/tmp/imagectl", "smoke", "attach",
			"--dashboard", "http://127.0.0.1:8265", "--timeout", "15m", "--task", smoketest.ExpectedFunction,
			"--expect-function", smoketest.ExpectedFunction, "--expect-file", smoketest.ExpectedFile,
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
	if !strings.Contains(logs, smoketest.ExpectedOutput) {
		return res, fmt.Errorf("RayJob %s SUCCEEDED but its output lacks %q:\n%s", jobName, smoketest.ExpectedOutput, tail(logs, 40))
	}
	res.Output = smoketest.ExpectedOutput
	return res, nil
}

func (h *harness) loadImage(ctx context.Context) error {
	if err := exec.CommandContext(ctx, "docker", "image", "inspect", h.cfg.Image).Run(); err != nil {
		h.log.Info("image not in the local Docker engine; the node will pull it", "image", h.cfg.Image)
		return nil
	}
	h.log.Info("loading the image into kind", "image", h.cfg.Image)
	tmp, err := os.CreateTemp("", "imagectl-smoke-image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	tmp.Close()
	if out, err := exec.CommandContext(ctx, "docker", "save", "-o", tmp.Name(), h.cfg.Image).CombinedOutput(); err != nil {
		return fmt.Errorf("docker save %s: %s", h.cfg.Image, firstLine(out, err))
	}
	nodes, err := h.provider.ListInternalNodes(h.cfg.ClusterName)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		f, err := os.Open(tmp.Name())
		if err != nil {
			return err
		}
		err = nodeutils.LoadImageArchive(n, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("loading %s into node %s: %w", h.cfg.Image, n.String(), err)
		}
	}
	return nil
}

func (h *harness) installKubeRay(ctx context.Context) error {
	v := strings.TrimPrefix(h.cfg.KubeRayVersion, "v")
	h.log.Info("installing the KubeRay operator", "version", v)
	src := "github.com/ray-project/kuberay/ray-operator/config/default?ref=v" + v
	if _, err := h.kubectl(ctx, nil, "apply", "--server-side", "-k", src); err != nil {
		return fmt.Errorf("installing KubeRay %s from %s: %w", v, src, err)
	}
	if _, err := h.kubectl(ctx, nil, "-n", "ray-system", "set", "image", "deployment/kuberay-operator", "kuberay-operator=quay.io/kuberay/operator:v"+v); err != nil {
		return err
	}
	if _, err := h.kubectl(ctx, nil, "-n", "ray-system", "rollout", "status", "deployment/kuberay-operator", "--timeout", "5m"); err != nil {
		return fmt.Errorf("KubeRay operator not available: %w", err)
	}
	return nil
}

func (h *harness) waitHeadPod(ctx context.Context) error {
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
	sel := "ray.io/cluster=" + h.rayCluster + ",ray.io/node-type=head"
	for {
		pod, err := h.kubectl(ctx, nil, "get", "pod", "-l", sel, "-o", "jsonpath={.items[0].metadata.name}")
		if err == nil && strings.TrimSpace(pod) != "" {
			h.headPod = strings.TrimSpace(pod)
			break
		}
		if err := sleep(ctx, 5*time.Second); err != nil {
			return fmt.Errorf("no head pod with labels %s: %w", sel, err)
		}
	}
	if _, err := h.kubectl(ctx, nil, "wait", "--for=condition=Ready", "pod/"+h.headPod, "--timeout", "20m"); err != nil {
		return fmt.Errorf("head pod %s not ready: %w", h.headPod, err)
	}
	return nil
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
	save("operator.log", "-n", "ray-system", "logs", "deployment/kuberay-operator", "--tail", "-1")
	if h.headPod != "" {
		save("head-ray.log", "logs", h.headPod, "-c", "ray-head", "--tail", "-1")
		save("head-code-server.log", "logs", h.headPod, "-c", "code-server", "--tail", "-1")
		save("head-describe.txt", "describe", "pod", h.headPod)
	}
	if h.rayCluster != "" {
		save("workers.log", "logs", "-l", "ray.io/cluster="+h.rayCluster+",ray.io/node-type=worker", "--tail", "-1", "--all-containers")
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
