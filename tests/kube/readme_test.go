package kube

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/smoke/kind"
)

const readmeSection = "## Debug a RayJob on KubeRay"

// readmeLines are the shell lines of README's section, in order (python
// blocks skipped, continuation lines joined).
func readmeLines(t *testing.T) []string {
	t.Helper()
	lines, err := testutil.ShellLines(string(readFile(t, filepath.Join(repoRoot(t), "README.md"))), readmeSection)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	return lines
}

// readmeScript turns README's section into the bash lines that run
// against this control plane up to the head-Pod lookup, which it checks
// (echo "head pod: $HEAD"). Lines this control plane cannot run are
// replaced or skipped by rule, each named in the log. rest are README's
// lines from `kubectl wait --for=condition=Ready` on, as written.
//
// With a node (n non-nil) inject's line also takes --image with the
// sidecar image the node has.
func readmeScript(t *testing.T, n *node) (script, rest []string) {
	t.Helper()
	lines := readmeLines(t)
	ran := map[string]bool{}
	for i, l := range lines {
		switch {
		case strings.Contains(l, "kubectl apply --server-side -k ") && strings.Contains(l, "github.com/ray-project/kuberay"):
			t.Logf("skipped (the operator of this control plane runs from its Go module, not from GitHub): %s", l)
			continue
		case strings.HasPrefix(l, "kubectl wait") && strings.Contains(l, "kuberay-operator"):
			t.Logf("skipped (the operator runs as a process here, not a Deployment): %s", l)
			continue
		case strings.HasPrefix(l, "pip install"):
			t.Logf("skipped (no Ray CLI needed before a Pod runs): %s", l)
			continue
		case strings.HasPrefix(l, "kubectl ray job submit -f "):
			// The plugin's -f creates the RayJob from the file's first
			// document, then needs a running cluster: create it the same way.
			f := strings.Fields(l)[5]
			t.Logf("replaced by `kubectl create -f %s` (what the plugin does with -f before it needs a running cluster): %s", f, l)
			script = append(script, "kubectl create -f "+f)
			ran["submit"] = true
			continue
		case strings.HasPrefix(l, "kubectl wait --for=condition=Ready"):
			script = append(script, "echo \"head pod: $HEAD\"", `test -n "$HEAD"`)
			ran["head"] = true
		}
		if ran["head"] {
			rest = lines[i:]
			break
		}
		if strings.HasPrefix(l, "kubectl ") || strings.HasPrefix(l, "imagectl ") || strings.HasPrefix(l, "HEAD=$(kubectl ") {
			if strings.HasPrefix(l, "HEAD=$(") {
				// The Pod appears once the operator has reconciled the RayJob.
				script = append(script, "for i in $(seq 1 120); do "+strings.TrimSuffix(strings.TrimPrefix(l, "HEAD=$("), ")")+" >/dev/null 2>&1 && break; sleep 0.5; done")
				ran["lookup"] = true
			}
			if l == "kubectl apply --server-side -f secret.yaml" {
				ran["secret"] = true
			}
			if strings.HasPrefix(l, "imagectl inject ") {
				// README's line, offline: the tag listing would time out.
				l = strings.Replace(l, "imagectl inject ", "imagectl inject --no-resolve ", 1)
				if n != nil {
					l = strings.Replace(l, "imagectl inject ", "imagectl inject --image "+n.sidecarImage+" ", 1)
					t.Logf("with --image %s: the image the node has", n.sidecarImage)
				}
				ran["inject"] = true
			}
			script = append(script, l)
		}
	}
	for _, step := range []string{"inject", "secret", "submit", "lookup", "head"} {
		if !ran[step] {
			t.Fatalf("README's section has no %s step this test recognises; its shell lines:\n%s", step, strings.Join(readmeLines(t), "\n"))
		}
	}
	return script, rest
}

// TestReadmeDebugFlow runs the kubectl and imagectl lines of README's
// "Debug a RayJob on KubeRay" from the README text, with bash, in a
// directory holding the smoke harness's rayjob.yaml and prepull.yaml and a
// kubeconfig whose namespace is the test's own, up to the wait for the
// head Pod to be Ready (a Pod would have to run). Lines this control plane
// cannot run are replaced or skipped by rule, each named in the log; any
// other line that fails fails the test.
func TestReadmeDebugFlow(t *testing.T) {
	c := needCluster(t)
	dir := t.TempDir()
	ns := c.namespace(t, nil)
	kc := c.kubeconfigIn(t, dir, ns)
	plain, err := kind.RenderPlain(kind.Params{Name: "readme", RayVersion: "2.46.0", Python: "3.12"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, kind.PlainFile), plain)
	writeFile(t, filepath.Join(dir, kind.PrepullFile), readFile(t, filepath.Join(repoRoot(t), "examples", "prepull.yaml")))
	bin := filepath.Dir(imagectlBin(t))
	env := []string{"KUBECONFIG=" + kc, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "DOCKER_CONFIG=" + filepath.Join(dir, ".docker")}

	script, rest := readmeScript(t, nil)
	t.Logf("stopping before: %s (the Pod would have to run: TestReadmeDebugFlowOnNode runs it)", rest[0])
	text := "set -euxo pipefail\n" + strings.Join(script, "\n") + "\n"
	t.Logf("running:\n%s", text)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, stderr, err := run(ctx, dir, env, []byte(text), "bash", "-s")
	t.Logf("output:\n%s\n%s", out, stderr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "head pod: readme-") {
		t.Errorf("the README's head-pod lookup found no head Pod of RayJob readme")
	}
	// The Pod it found is the operator's, with the sidecar.
	o := rayObjects(t, readFile(t, filepath.Join(dir, kind.InjectedFile)))[0]
	pod := c.headPod(t, ns, o)
	c.checkHeadPod(t, ns, o, pod, "")
}
