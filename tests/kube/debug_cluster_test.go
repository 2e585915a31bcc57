package kube

import (
	"context"
	"fmt"
	"net/http"
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

// TestDebugClusterOnNode: imagectl debug --cluster on a RayCluster that
// runs with the sidecar on the node, started just after code-server in
// the sidecar exited. The kubelet restarts it, and the head Pod is Ready
// again before the new code-server listens (the sidecar has no readiness
// probe). The session's ready event comes only once code-server answers
// through the session's port-forward, so a browser opened at that event
// (here one GET, no retry) gets code-server, and the port-forward a
// refused connection would have ended is the one the URL names.
func TestDebugClusterOnNode(t *testing.T) {
	c := needCluster(t)
	n := needNode(t)
	ns := c.namespace(t, nil)
	dir := t.TempDir()
	kc := c.kubeconfigIn(t, dir, ns)
	const name = "dbgc"
	writeFile(t, filepath.Join(dir, "rc.yaml"), headOnlyCluster(name, n.rayImage))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, errs, err := run(ctx, dir, nil, nil, imagectlBin(t), "inject", "-f", "rc.yaml", "--image", n.sidecarImage, "--secret-file", "secret.yaml")
	if err != nil {
		t.Fatalf("imagectl inject: %v\n%s", err, errs)
	}
	if err := c.apply(t, ns, append(append(readFile(t, filepath.Join(dir, "secret.yaml")), "\n---\n"...), []byte(out)...)); err != nil {
		t.Fatal(err)
	}
	head := c.readyPod(t, ns, "ray.io/node-type=head,ray.io/cluster="+name, 3*time.Minute)
	restarts := func() int32 {
		for _, p := range c.pods(t, ns, "ray.io/node-type=head,ray.io/cluster="+name) {
			for _, s := range p.Status.ContainerStatuses {
				if p.Name == head.Name && s.Name == sidecarName {
					return s.RestartCount
				}
			}
		}
		t.Fatalf("head Pod %s has no container %s", head.Name, sidecarName)
		return 0
	}
	before := restarts()

	// SIGTERM to the sidecar's PID 1 ends the container (the stand-in
	// base's /init execs code-server, which exits on it; s6-overlay's
	// /init shuts its services down); exec may report that end as an
	// error. The restart count below says whether it ended.
	if _, err := c.exec(t, ns, head.Name, sidecarName, "sh", "-c", "kill -TERM 1"); err != nil {
		t.Logf("kubectl exec kill: %v (the container ended under it)", err)
	}
	answered := false
	r := imagectlDebug(t, dir, func(e debug.Event) bool {
		if e.Kind != debug.KindReady {
			return false
		}
		if err := healthz(e.CodeServerURL); err != nil {
			t.Errorf("code-server at the ready event: %v", err)
		} else {
			answered = true
		}
		return true // Ctrl-C: the session's end is not what this test is about
	}, "--kubeconfig", kc, "--cluster", name, "--ready-timeout", "3m")
	if !answered {
		c.dumpPods(t, ns)
		t.Fatalf("code-server did not answer at the ready event (exit %d):\n%s", r.code, r.stderr)
	}
	if r.code != 130 {
		t.Errorf("exit %d after Ctrl-C, want 130\n%s", r.code, r.stderr)
	}
	if after := restarts(); after <= before {
		t.Fatalf("the sidecar restarted %d times before the kill and %d after: code-server did not exit, so the session met no code-server starting", before, after)
	}
	waited := false
	for _, e := range r.events {
		waited = waited || e.Kind == debug.KindWaiting && strings.Contains(e.Message, "waiting for code-server to answer")
	}
	t.Logf("the session waited for code-server after the head Pod was Ready: %v; events %v", waited, r.kinds())
}

// healthz GETs code-server's /healthz at base (a URL, with or without its
// trailing slash) once: nil when it answers 200.
func healthz(base string) error {
	return getOK(strings.TrimSuffix(base, "/") + "/healthz")
}

// TestDebugFollowsNewHeadOnNode: a session on a RayCluster that follows no
// job outlives its head Pod. Deleted as a node drain or an eviction deletes
// it, the head Pod is named gone in a warning; KubeRay makes another, and
// the session serves it on the same URLs (code-server's and the
// dashboard's, or --local's dashboard proxy), which answer from the new
// head before the test's Ctrl-C.
func TestDebugFollowsNewHeadOnNode(t *testing.T) {
	c := needCluster(t)
	n := needNode(t)
	for _, tc := range []struct {
		name  string
		args  []string
		check func(e debug.Event) error // at each ready event
	}{
		{name: "sidecar", args: []string{"--image", n.sidecarImage},
			check: func(e debug.Event) error {
				if err := healthz(e.CodeServerURL); err != nil {
					return fmt.Errorf("code-server: %w", err)
				}
				return getOK(e.DashboardURL + "/api/gcs_healthz")
			}},
		{name: "local", args: []string{"--local", "--local-port", "0"},
			check: func(e debug.Event) error {
				if e.CodeServerURL != "" {
					return fmt.Errorf("--local's ready event has a code-server URL %s", e.CodeServerURL)
				}
				return getOK(e.DashboardURL + "/api/gcs_healthz")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := c.namespace(t, nil)
			dir := t.TempDir()
			kc := c.kubeconfigIn(t, dir, ns)
			const name = "dbgh"
			writeFile(t, filepath.Join(dir, "rc.yaml"), headOnlyCluster(name, n.rayImage))

			var first, second *debug.Event
			gone := false
			r := imagectlDebug(t, dir, func(e debug.Event) bool {
				switch {
				case e.Kind == debug.KindReady && first == nil:
					first = &e
					if err := tc.check(e); err != nil {
						t.Errorf("head Pod %s at the first ready event: %v", e.Pod, err)
						return true
					}
					// Not waited for: the session sees the Pod go.
					c.must(t, nil, "delete", "pod", "-n", ns, e.Pod, "--wait=false")
				case e.Kind == debug.KindWarning && first != nil && strings.Contains(e.Message, fmt.Sprintf("head Pod %s of RayCluster %s is gone", first.Pod, name)):
					gone = true
				case e.Kind == debug.KindReady:
					second = &e
					if err := tc.check(e); err != nil {
						t.Errorf("the new head Pod %s at the second ready event: %v", e.Pod, err)
					}
					return true // Ctrl-C
				}
				return false
			}, append([]string{"--kubeconfig", kc, "-f", "rc.yaml", "--ready-timeout", "3m", "--cleanup"}, tc.args...)...)
			if first == nil || second == nil {
				c.dumpPods(t, ns)
				t.Fatalf("want two ready events, one per head Pod; events %v (exit %d)\n%s", r.kinds(), r.code, r.stderr)
			}
			if !gone {
				t.Errorf("no warning named head Pod %s gone; events %v", first.Pod, r.kinds())
			}
			if second.Pod == first.Pod {
				t.Errorf("the second ready event names the deleted head Pod %s", first.Pod)
			}
			if got := c.must(t, nil, "get", "pod", "-n", ns, "-l", "ray.io/node-type=head,ray.io/cluster="+name, "-o", "jsonpath={.items[*].metadata.name}"); !strings.Contains(got, second.Pod) {
				t.Errorf("the second ready event names Pod %s; the RayCluster's head Pods are %q", second.Pod, got)
			}
			if second.CodeServerURL != first.CodeServerURL || second.DashboardURL != first.DashboardURL {
				t.Errorf("the new head is served on code-server %q, dashboard %q; want the first head's %q, %q", second.CodeServerURL, second.DashboardURL, first.CodeServerURL, first.DashboardURL)
			}
			if !strings.Contains(second.Message, "it replaces "+first.Pod) {
				t.Errorf("second ready event %q does not say which head Pod it replaces", second.Message)
			}
			if r.code != 130 {
				t.Errorf("exit %d after Ctrl-C, want 130\n%s", r.code, r.stderr)
			}
		})
	}
}

// getOK GETs u once: nil when it answers 200.
func getOK(u string) error {
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(u)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return nil
}

// headOnlyCluster is netClusterYAML's RayCluster name without its worker
// group: a head alone, with image.
func headOnlyCluster(name, image string) []byte {
	rc := fmt.Sprintf(netClusterYAML, name, image)
	return []byte(rc[:strings.Index(rc, "  workerGroupSpecs:\n")])
}
