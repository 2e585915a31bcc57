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
	plainRV := c.must(t, nil, "get", "raycluster", "plain", "-n", ns, "-o", "jsonpath={.metadata.resourceVersion}")

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
		if got := c.must(t, nil, "get", "raycluster", "plain", "-n", ns, "-o", "jsonpath={.metadata.resourceVersion}"); got != plainRV {
			t.Error("a refused --cluster session changed the RayCluster")
		}
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
		rv := c.must(t, nil, "get", "raycluster", "withsc", "-n", ns, "-o", "jsonpath={.metadata.resourceVersion}")
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
		if got := c.must(t, nil, "get", "raycluster", "withsc", "-n", ns, "-o", "jsonpath={.metadata.resourceVersion}"); got != rv {
			t.Error("the --cluster session changed the RayCluster")
		}
		if !c.exists(t, ns, "raycluster", "withsc") || !c.exists(t, ns, "secret", "code-server-password") {
			t.Error("the --cluster session with --cleanup deleted what existed before it")
		}
	})
}
