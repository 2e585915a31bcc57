package kube

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imagectl/imagectl/debug"
)

// plainRayCluster is a RayCluster as a user keeps it (no sidecar).
const plainRayCluster = `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: %s
spec:
  rayVersion: "2.46.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0-py312
          resources:
            requests: {cpu: "1", memory: 1Gi}
`

// TestDebugClusterOnControlPlane: imagectl debug --cluster NAME attaches
// to a RayCluster that runs already. One without the sidecar is refused
// with what to do (inject the manifest and apply it, or debug -f), one that
// does not exist names the namespace and where it came from, and neither
// writes anything; one whose head has the sidecar (applied by the test
// after imagectl inject, as a user would) adds nothing and goes on to wait
// for its head Pod (which never gets ready without a node: the session
// ends at --ready-timeout).
func TestDebugClusterOnControlPlane(t *testing.T) {
	c := needCluster(t)
	ns := c.namespace(t, nil)
	dir := t.TempDir()
	kc := c.kubeconfigIn(t, dir, ns)
	base := []string{"--kubeconfig", kc} // no sidecar flags: --cluster applies nothing

	plain := []byte(strings.ReplaceAll(plainRayCluster, "%s", "plain"))
	if err := c.apply(t, ns, plain); err != nil {
		t.Fatal(err)
	}
	plainGen := c.untouched(t, ns, "plain", "")

	t.Run("no sidecar", func(t *testing.T) {
		r := imagectlDebug(t, dir, nil, append(base, "--cluster", "plain", "--ready-timeout", "5s")...)
		if r.code != 1 {
			t.Fatalf("exit %d, want 1", r.code)
		}
		for _, want := range []string{"RayCluster plain in namespace " + ns, debug.ErrNoSidecar.Error(), "imagectl inject -f FILE -i", "imagectl debug -f FILE"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
			}
		}
		c.untouched(t, ns, "plain", plainGen)
		if c.exists(t, ns, "secret", "code-server-password") {
			t.Error("a refused --cluster session created the password Secret")
		}
	})

	t.Run("not found", func(t *testing.T) {
		r := imagectlDebug(t, dir, nil, append(base, "--cluster", "nosuch", "--ready-timeout", "5s")...)
		if r.code != 1 || !strings.Contains(r.stderr, "RayCluster nosuch not found in namespace "+ns+" (the namespace came from the context; pass -n)") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})

	t.Run("with the sidecar", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "rc.yaml"), []byte(strings.ReplaceAll(plainRayCluster, "%s", "withsc")))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, errs, err := run(ctx, dir, nil, nil, imagectlBin(t), "inject", "-f", "rc.yaml", "--image", testImage, "--secret-file", "secret.yaml")
		if err != nil {
			t.Fatalf("imagectl inject: %v\n%s", err, errs)
		}
		if err := c.apply(t, ns, append(append(readFile(t, filepath.Join(dir, "secret.yaml")), "\n---\n"...), []byte(out)...)); err != nil {
			t.Fatal(err)
		}
		gen := c.untouched(t, ns, "withsc", "")
		r := imagectlDebug(t, dir, nil, append(base, "--cluster", "withsc", "--ready-timeout", "10s", "--cleanup")...)
		if r.code != 1 || !strings.Contains(r.stderr, "timed out after 10s waiting for the head Pod of RayCluster withsc") {
			t.Fatalf("exit %d, stderr %q: want the wait for the head to time out", r.code, r.stderr)
		}
		ap := r.find(debug.KindApplied)
		if ap == nil || ap.Object != "RayCluster/withsc" || ap.Created || !strings.Contains(ap.Message, "nothing to apply") {
			t.Errorf("applied event %+v: want RayCluster/withsc, nothing applied", ap)
		}
		if cl := r.find(debug.KindCleanup); cl != nil && len(cl.Deleted) != 0 {
			t.Errorf("--cleanup of a --cluster session deleted %v: it created nothing", cl.Deleted)
		}
		c.untouched(t, ns, "withsc", gen)
		if !c.exists(t, ns, "raycluster", "withsc") || !c.exists(t, ns, "secret", "code-server-password") {
			t.Error("the --cluster session with --cleanup deleted what existed before it")
		}
	})
}

// untouched checks that no imagectl debug session wrote RayCluster name:
// none of its field managers is debug.FieldManager (a server-side apply
// records its manager even when it changes no value, a patch when it
// changes one) and its generation (which any change of the spec bumps) is
// still gen, unless gen is "". It returns the generation. The
// resourceVersion cannot tell: the operator writes the status whenever it
// reconciles, at a time of its own.
func (c *cluster) untouched(t *testing.T, ns, name, gen string) string {
	t.Helper()
	out := c.must(t, nil, "get", "raycluster", name, "-n", ns, "-o", `jsonpath={.metadata.generation}{"\n"}{range .metadata.managedFields[*]}{.manager}{"\n"}{end}`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, m := range lines[1:] {
		if m == debug.FieldManager {
			t.Errorf("RayCluster %s has a field manager %s: a --cluster session wrote it (managers %q)", name, m, lines[1:])
		}
	}
	if gen != "" && lines[0] != gen {
		t.Errorf("RayCluster %s: generation %s, was %s before the --cluster session: its spec changed", name, lines[0], gen)
	}
	return lines[0]
}
