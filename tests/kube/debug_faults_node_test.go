package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imagectl/imagectl/debug"
	"github.com/imagectl/imagectl/smoke/kind"
)

// TestDebugFaultsOnNode runs imagectl debug as a user types it, on the
// node, with a head Pod that cannot get ready, and checks that the session
// names why before its --ready-timeout, then stops there naming it again
// (exit 1), and that --cleanup deletes the RayJob:
//   - a sidecar image that does not exist (the node pulls through a closed
//     proxy, so any image it was not given fails to pull): ErrImagePull or
//     ImagePullBackOff, with the image and the node;
//   - a head that asks for more CPU than the node has: Unschedulable, with
//     the scheduler's "Insufficient cpu" and what the head requests;
//   - a Ray container that prints two lines and exits 3: CrashLoopBackOff,
//     the exit code and those lines.
//
// The RayJob is the smoke harness's (kind.RenderPlain) with the Ray
// stand-in as its image and no worker group (the faults are the head's).
func TestDebugFaultsOnNode(t *testing.T) {
	c := needCluster(t)
	n := needNode(t)
	dir := t.TempDir()
	ns := c.namespace(t, nil)
	kc := c.kubeconfigIn(t, dir, ns)
	nodeName := os.Getenv("IMAGECTL_KUBE_NODE")

	const missing = "registry.invalid/imagectl-test/no-such-sidecar:1"
	cases := []struct {
		name    string
		edit    func(t *testing.T, plain []byte) []byte
		image   string
		timeout string
		reasons []string // the head Pod's waiting reason, one of
		problem []string // what the problem and the error say
	}{{
		name:    "image",
		image:   missing,
		timeout: "150s", // named after 42 s to 93 s on a loaded 2-core machine
		reasons: []string{"ErrImagePull", "ImagePullBackOff"},
		problem: []string{"container code-server of Pod ", "cannot pull image " + missing + " on node " + nodeName},
	}, {
		name: "unschedulable",
		edit: func(t *testing.T, plain []byte) []byte {
			return replaceAll(t, plain, "requests: {cpu: 500m, memory: 2Gi}\n              limits: {cpu: \"2\", memory: 4Gi}",
				"requests: {cpu: \"64\", memory: 2Gi}\n              limits: {cpu: \"64\", memory: 4Gi}", 1)
		},
		timeout: "45s",
		reasons: []string{"Unschedulable"},
		problem: []string{"cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu", "the Pod requests cpu=64500m memory=3Gi in all", "ray-head: cpu=64 memory=2Gi", "code-server: cpu=500m memory=1Gi"},
	}, {
		name: "crash",
		edit: func(t *testing.T, plain []byte) []byte {
			// KubeRay runs the Ray container's args before its own ray
			// start (pod.go, BuildPod: "cmd && ulimit …; ray start …"):
			// exit 3 ends the shell first.
			return replaceAll(t, plain, "          - name: ray-head\n            image: "+n.rayImage+"\n",
				"          - name: ray-head\n            image: "+n.rayImage+"\n            args: [\"echo imagectl-fault-line-1; echo imagectl-fault-line-2 >&2; exit 3\"]\n", 1)
		},
		timeout: "75s", // named after 7 s (the kubelet's first restart back-off is 10 s)
		reasons: []string{"CrashLoopBackOff"},
		problem: []string{"container ray-head of Pod ", "keeps exiting", "last exit code 3 (Error)", "its last log lines:", "imagectl-fault-line-1", "imagectl-fault-line-2"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := kind.Params{Name: "fault-" + tc.name, RayVersion: "2.46.0", Python: "3.12"}
			plain, err := kind.RenderPlain(p)
			if err != nil {
				t.Fatal(err)
			}
			plain = replaceAll(t, plain, p.RayImage(), n.rayImage, 2)
			// No worker group: the faults are the head's.
			i := strings.Index(string(plain), "    workerGroupSpecs:\n")
			if i < 0 {
				t.Fatal("the smoke RayJob has no workerGroupSpecs")
			}
			plain = plain[:i]
			if tc.edit != nil {
				plain = tc.edit(t, plain)
			}
			job := tc.name + ".yaml"
			writeFile(t, filepath.Join(dir, job), plain)
			image := n.sidecarImage
			if tc.image != "" {
				image = tc.image
			}

			start := time.Now()
			var seen time.Duration
			r := imagectlDebug(t, dir, func(e debug.Event) bool {
				if seen == 0 && e.Kind == debug.KindWaiting && e.Problem != "" && contains(tc.reasons, e.Reason) {
					seen = time.Since(start)
				}
				return false
			}, "--kubeconfig", kc, "-f", job, "--image", image, "--ready-timeout", tc.timeout, "--cleanup", "--", "python3", "-c", "pass")
			if r.code != 1 {
				c.dumpPods(t, ns)
				t.Fatalf("exit %d, want 1 (the head never gets ready)", r.code)
			}
			// The head Pod's waiting event names the fault.
			var ev *debug.Event
			for i := range r.events {
				e := &r.events[i]
				if e.Kind == debug.KindWaiting && strings.HasPrefix(e.Object, "Pod/"+p.Name) && contains(tc.reasons, e.Reason) && e.Problem != "" {
					ev = e
				}
			}
			if ev == nil {
				c.dumpPods(t, ns)
				t.Fatalf("no waiting event of the head Pod with reason %v and a problem", tc.reasons)
			}
			t.Logf("%s: named after %s (--ready-timeout %s): %s", tc.name, seen.Round(time.Second), tc.timeout, ev.Problem)
			for _, w := range tc.problem {
				if !strings.Contains(ev.Problem, w) {
					t.Errorf("the waiting event's problem does not say %q:\n%s", w, ev.Problem)
				}
				if !strings.Contains(r.stderr, w) {
					t.Errorf("the error does not say %q:\n%s", w, r.stderr)
				}
			}
			if !strings.Contains(r.stderr, "timed out after "+durationString(t, tc.timeout)+" waiting for the head Pod of RayCluster ") {
				t.Errorf("the error does not name the wait it timed out in:\n%s", r.stderr)
			}
			cl := r.find(debug.KindCleanup)
			if cl == nil || !contains(cl.Deleted, "RayJob/"+p.Name) {
				t.Fatalf("cleanup event %+v: want RayJob/%s deleted", cl, p.Name)
			}
			c.waitFor(t, 2*time.Minute, "RayJob "+p.Name+" deleted", func() (bool, error) {
				return !c.exists(t, ns, "rayjob", p.Name), nil
			})
		})
	}
}

func contains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

// durationString is d as Go prints a time.Duration ("45s", "3m0s").
func durationString(t *testing.T, d string) string {
	t.Helper()
	v, err := time.ParseDuration(d)
	if err != nil {
		t.Fatal(err)
	}
	return v.String()
}
