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

// readmeSection is the section of docs/inject.md holding the manual steps
// (kubectl and the kubectl ray plugin), the alternative to imagectl debug
// that README's "Debug a RayJob on KubeRay" links to.
const readmeSection = "## The manual steps: kubectl and the kubectl ray plugin"

// readmeLines are the shell lines of the manual steps, in order (python
// blocks skipped, continuation lines joined).
func readmeLines(t *testing.T) []string {
	t.Helper()
	lines, err := testutil.ShellLines(string(readFile(t, filepath.Join(repoRoot(t), "docs", "inject.md"))), readmeSection)
	if err != nil {
		t.Fatalf("docs/inject.md: %v", err)
	}
	return lines
}

// readmeScript turns the manual steps into the bash lines that run
// against this control plane up to the head-Pod lookup, which it checks
// (echo "head pod: $HEAD"). Lines this control plane cannot run are
// replaced or skipped by rule, each named in the log; the namespace's
// assignment (NS=…) is skipped: the caller sets NS to the test's. rest are
// the lines from `kubectl wait … --for=condition=Ready` on, as written.
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
		case strings.HasPrefix(l, "NS="):
			t.Logf("skipped (NS is the test's namespace): %s", l)
			ran["namespace"] = true
			continue
		case strings.HasPrefix(l, "kubectl ray job submit "):
			// The plugin's -f creates the RayJob from the file's first
			// document, then needs a running cluster: create it the same way.
			f, ns := flagValue(l, "-f"), flagValue(l, "-n")
			if f == "" || ns != `"$NS"` {
				t.Fatalf("the plugin's line %q: want -n \"$NS\" and -f FILE", l)
			}
			t.Logf("replaced by `kubectl create -n %s -f %s` (what the plugin does with -f before it needs a running cluster): %s", ns, f, l)
			script = append(script, "kubectl create -n "+ns+" -f "+f)
			ran["submit"] = true
			continue
		case strings.HasPrefix(l, "kubectl wait ") && strings.Contains(l, " --for=condition=Ready "):
			script = append(script, "echo \"head pod: $HEAD\"", `test -n "$HEAD"`)
			ran["head"] = true
		}
		if ran["head"] {
			rest = lines[i:]
			break
		}
		if strings.HasPrefix(l, "kubectl ") || strings.HasPrefix(l, "imagectl ") || strings.HasPrefix(l, "HEAD=$(kubectl ") || strings.HasPrefix(l, "CLUSTER=$(kubectl ") {
			if v, _, ok := strings.Cut(l, "=$("); ok && (v == "HEAD" || v == "CLUSTER") {
				// The RayCluster's name, then its Pod, appear once the
				// operator has reconciled the RayJob: until then the
				// lookup prints nothing (or fails).
				script = append(script, "for i in $(seq 1 120); do "+l+" && test -n \"$"+v+"\" && break; sleep 0.5; done")
				ran[map[string]string{"HEAD": "lookup", "CLUSTER": "cluster"}[v]] = true
			}
			if strings.HasPrefix(l, "kubectl apply --server-side ") && strings.HasSuffix(l, " -f secret.yaml") {
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
	for _, step := range []string{"namespace", "inject", "secret", "submit", "cluster", "lookup", "head"} {
		if !ran[step] {
			t.Fatalf("docs/inject.md's manual steps have no %s step this test recognises; their shell lines:\n%s", step, strings.Join(readmeLines(t), "\n"))
		}
	}
	return script, rest
}

// flagValue is the word after flag in a shell line ("" if none).
func flagValue(line, flag string) string {
	w := strings.Fields(line)
	for i := 0; i+1 < len(w); i++ {
		if w[i] == flag {
			return w[i+1]
		}
	}
	return ""
}

// TestReadmeDebugFlow runs the kubectl and imagectl lines of
// docs/inject.md's manual steps (the alternative to imagectl debug) from
// the doc's text, with bash, with NS set to the test's namespace and a
// kubeconfig context naming another (that does not exist), in a directory
// holding the smoke harness's rayjob.yaml and prepull.yaml, up to the wait
// for the head Pod to be Ready (a Pod would have to run). Lines this
// control plane cannot run are replaced or skipped by rule, each named in
// the log; any other line that fails fails the test.
func TestReadmeDebugFlow(t *testing.T) {
	c := needCluster(t)
	dir := t.TempDir()
	ns := c.namespace(t, nil)
	// The context names a namespace that does not exist: a line without
	// the doc's -n "$NS" fails or finds nothing.
	kc := c.kubeconfigIn(t, dir, "imagectl-readme-no-such-namespace")
	plain, err := kind.RenderPlain(kind.Params{Name: "readme", RayVersion: "2.46.0", Python: "3.12"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, kind.PlainFile), plain)
	writeFile(t, filepath.Join(dir, kind.PrepullFile), readFile(t, filepath.Join(repoRoot(t), "examples", "prepull.yaml")))
	bin := filepath.Dir(imagectlBin(t))
	env := []string{"KUBECONFIG=" + kc, "NS=" + ns, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "DOCKER_CONFIG=" + filepath.Join(dir, ".docker")}

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
		t.Errorf("the manual steps' head-pod lookup found no head Pod of RayJob readme")
	}
	// The Pod it found is the operator's, with the sidecar.
	o := rayObjects(t, readFile(t, filepath.Join(dir, kind.InjectedFile)))[0]
	pod := c.headPod(t, ns, o)
	c.checkHeadPod(t, ns, o, pod, "")
}
