package kube

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// cluster is the control plane tests/e2e/with-kube.sh started.
type cluster struct {
	kubeconfig string
	kuberay    string // the operator's version, vX.Y.Z
}

// needCluster returns the script's control plane, or skips (fails under
// IMAGECTL_REQUIRE_TOOLS=1) when the test runs outside the script.
func needCluster(t *testing.T) *cluster {
	t.Helper()
	kc := os.Getenv("IMAGECTL_KUBE_KUBECONFIG")
	if kc == "" {
		msg := "IMAGECTL_KUBE_KUBECONFIG is not set: these tests need the control plane and KubeRay operator that tests/e2e/with-kube.sh starts (bash tests/e2e/with-kube.sh go test ./tests/kube)"
		if os.Getenv("IMAGECTL_REQUIRE_TOOLS") == "1" {
			t.Fatal(msg + "; IMAGECTL_REQUIRE_TOOLS=1 requires it")
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(kc); err != nil {
		t.Fatalf("IMAGECTL_KUBE_KUBECONFIG: %v", err)
	}
	v := os.Getenv("IMAGECTL_KUBE_KUBERAY")
	if v == "" {
		t.Fatal("IMAGECTL_KUBE_KUBERAY is not set: with-kube.sh exports it with IMAGECTL_KUBE_KUBECONFIG")
	}
	return &cluster{kubeconfig: kc, kuberay: v}
}

// repoRoot is the repository's top directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "..", "..")
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// imagectlBin builds cmd/imagectl once per test binary (static).
func imagectlBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "imagectl-kube-bin")
		if buildErr != nil {
			return
		}
		// Static, as make build makes it: the node's test copies it into
		// the sidecar.
		for _, name := range []string{"imagectl", "imagectl-probe"} {
			cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(binDir, name), "./cmd/"+name)
			cmd.Dir = repoRoot(t)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build ./cmd/%s: %w\n%s", name, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "imagectl")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// run runs a command with stdin, returning stdout, stderr and the error.
func run(ctx context.Context, dir string, env []string, stdin []byte, name string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	// A deadline stops the whole process group (bash and what it runs,
	// which holds the pipes), not only the command.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), stderr.String(), err
}

// kubectl runs kubectl against the script's cluster.
func (c *cluster) kubectl(t *testing.T, stdin []byte, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, _, err := run(ctx, "", nil, stdin, "kubectl", append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	return out, err
}

// must is kubectl that fails the test on error.
func (c *cluster) must(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	out, err := c.kubectl(t, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// apply applies manifest server-side with strict field validation in ns,
// as the README does (kubectl apply --server-side) plus --validate=strict:
// an unknown or duplicate field is an error, not a warning.
func (c *cluster) apply(t *testing.T, ns string, manifest []byte) error {
	t.Helper()
	_, err := c.kubectl(t, manifest, "apply", "--server-side", "--validate=strict", "-n", ns, "-f", "-")
	return err
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// namespace makes a namespace of the test's own (deleted at the end), with
// labels, and waits for its default ServiceAccount, without which Pods are
// refused.
func (c *cluster) namespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	var b [3]byte
	rand.Read(b[:])
	base := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 50 {
		base = base[len(base)-50:]
	}
	ns := strings.Trim(base, "-") + "-" + hex.EncodeToString(b[:])
	doc := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns, "labels": labels}}
	j, _ := json.Marshal(doc)
	c.must(t, j, "apply", "--server-side", "--validate=strict", "-f", "-")
	t.Cleanup(func() { c.kubectl(t, nil, "delete", "namespace", ns, "--wait=false") })
	c.waitFor(t, 60*time.Second, "ServiceAccount default in "+ns, func() (bool, error) {
		_, err := c.kubectl(t, nil, "get", "serviceaccount", "default", "-n", ns)
		return err == nil, nil
	})
	return ns
}

// kubeconfigIn writes, as dir/kubeconfig, a copy of the cluster's
// kubeconfig whose context's namespace is ns, for commands that name no
// namespace (README's, the smoke harness's).
func (c *cluster) kubeconfigIn(t *testing.T, dir, ns string) string {
	t.Helper()
	kc := filepath.Join(dir, "kubeconfig")
	writeFile(t, kc, readFile(t, c.kubeconfig))
	if _, _, err := run(context.Background(), dir, nil, nil, "kubectl", "--kubeconfig", kc, "config", "set-context", "--current", "--namespace", ns); err != nil {
		t.Fatal(err)
	}
	return kc
}

// waitFor polls cond every 300 ms until it is true or timeout passes.
func (c *cluster) waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not there after %s", what, timeout)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// pods lists the Pods of ns matching selector.
func (c *cluster) pods(t *testing.T, ns, selector string) []corev1.Pod {
	t.Helper()
	var l corev1.PodList
	if err := json.Unmarshal([]byte(c.must(t, nil, "get", "pods", "-n", ns, "-l", selector, "-o", "json")), &l); err != nil {
		t.Fatalf("pods %s in %s: %v", selector, ns, err)
	}
	return l.Items
}

// event is what tests read of an Event.
type event struct {
	Reason, Message string
}

// events lists the Events of ns with reason.
func (c *cluster) events(t *testing.T, ns, reason string) []event {
	t.Helper()
	var l struct {
		Items []event `json:"items"`
	}
	if err := json.Unmarshal([]byte(c.must(t, nil, "get", "events", "-n", ns, "--field-selector", "reason="+reason, "-o", "json")), &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}
