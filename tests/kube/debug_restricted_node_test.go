package kube

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/imagectl/imagectl/debug"
	injectpkg "github.com/imagectl/imagectl/inject"
)

// TestDebugRestrictedOnNode runs imagectl debug, on the node, in a
// namespace that enforces PodSecurity "restricted", with a RayJob whose
// Pods "restricted" admits: debug reads the namespace's label and makes the
// sidecar restricted without being told (--restricted, which the
// PodSecurity test passes to inject, is the same option), saying so; the
// API server admits the head Pod with that sidecar, the kubelet runs it as the Ray
// container's user with a read-only root (the init container having copied
// the image's /config), code-server answers through debug's port-forward,
// and docs/smoke.md's attach from the sidecar stops in the paused task with
// its source opened. The sidecar's base is the tests' stand-in, whose
// startup takes linuxserver's non-root branches on LSIO_NON_ROOT_USER;
// smoke/image's TestFaithfulInjectRestricted boots linuxserver's real
// startup the same way (with -tags faithful, where that base exists).
func TestDebugRestrictedOnNode(t *testing.T) {
	c := needCluster(t)
	n := needNode(t)
	dir := t.TempDir()
	ns := c.namespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	kc := c.kubeconfigIn(t, dir, ns)
	staticImagectl(t, dir)
	wd := standinWorkingDir(t, dir)
	writeFile(t, filepath.Join(dir, "job.yaml"), restrictedRayJob(t, "dbg-r", n.rayImage))

	var head string
	attached, answered := false, false
	r := imagectlDebug(t, dir, func(e debug.Event) bool {
		switch e.Kind {
		case debug.KindReady:
			head = e.Pod
			if err := healthz(e.CodeServerURL); err != nil {
				t.Errorf("code-server through debug's port-forward: %v", err)
				return true
			}
			answered = true
		case debug.KindPaused:
			if attached = c.attachFromSidecar(t, dir, kc, head, "f", false); !attached {
				return true
			}
		}
		return false
	}, debugArgsAsDocumented(t, map[string]string{"-f": "job.yaml", "--working-dir": wd},
		[]string{"--kubeconfig", kc, "--image", n.sidecarImage, "--ready-timeout", "4m", "--logs", "--prepull"},
		[]string{"python3", "driver.py", "sample_code", "f", "7"})...)
	if r.code != 0 {
		c.dumpPods(t, ns)
		t.Fatalf("imagectl debug exited %d, want 0\nstderr: %s", r.code, r.stderr)
	}
	noticed := false
	for _, e := range r.events {
		noticed = noticed || e.Kind == debug.KindWarning && strings.Contains(e.Message, `enforces PodSecurity "restricted"`) && strings.Contains(e.Message, "the sidecar is restricted")
	}
	if !noticed {
		t.Errorf("no warning that the namespace's level made the sidecar restricted: events %v", r.kinds())
	}
	if !answered || !attached {
		t.Fatalf("code-server answered %v, the task was attached to %v: want both", answered, attached)
	}
	// --prepull's DaemonSet is restricted like the sidecar: the namespace
	// admits its Pod, and the kubelet runs it as the sidecar's user (checked
	// below with the head Pod's): the init containers' true in the Ray and
	// the sidecar image, then sleep in the sidecar's image, Ready.
	var prepull corev1.Pod
	c.waitFor(t, 2*time.Minute, "the pre-pull DaemonSet's Pod to be Ready", func() (bool, error) {
		pods := c.pods(t, ns, "app.kubernetes.io/name="+injectpkg.PrepullName)
		if len(pods) != 1 {
			return false, nil
		}
		prepull = pods[0]
		for _, st := range append(append([]corev1.ContainerStatus{}, prepull.Status.InitContainerStatuses...), prepull.Status.ContainerStatuses...) {
			if w := st.State.Waiting; w != nil && w.Reason != "PodInitializing" && w.Reason != "ContainerCreating" {
				return false, fmt.Errorf("pre-pull container %s waits: %s: %s", st.Name, w.Reason, w.Message)
			}
		}
		ready := len(prepull.Status.ContainerStatuses) == 1 && prepull.Status.ContainerStatuses[0].Ready
		return ready, nil
	})
	for _, st := range prepull.Status.InitContainerStatuses {
		if st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 {
			t.Errorf("pre-pull init container %s: %+v, want terminated with 0", st.Name, st.State)
		}
	}
	// What the kubelet ran: the /config copy made by the init container,
	// which ended with 0, and the sidecar as the Ray container's user.
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(c.must(t, nil, "get", "pod", head, "-n", ns, "-o", "json")), &pod); err != nil {
		t.Fatal(err)
	}
	for _, st := range pod.Status.InitContainerStatuses {
		if st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 {
			t.Errorf("init container %s: %+v, want terminated with 0", st.Name, st.State)
		}
	}
	if len(pod.Status.InitContainerStatuses) != 1 {
		t.Errorf("init containers %+v, want the /config copy", pod.Status.InitContainerStatuses)
	}
	// The sidecar's user is the Ray container's (inject's runAsUser and
	// runAsGroup, from the stand-in RayJob's securityContext).
	var uid, gid int64 = -1, -1
	for _, ct := range pod.Spec.Containers {
		if ct.Name == sidecarName && ct.SecurityContext != nil && ct.SecurityContext.RunAsUser != nil && ct.SecurityContext.RunAsGroup != nil {
			uid, gid = *ct.SecurityContext.RunAsUser, *ct.SecurityContext.RunAsGroup
		}
	}
	var rayUID int64 = -1
	if p := pod.Spec.SecurityContext; p != nil && p.RunAsUser != nil {
		rayUID = *p.RunAsUser
	}
	if r := pod.Spec.Containers[0].SecurityContext; r != nil && r.RunAsUser != nil {
		rayUID = *r.RunAsUser
	}
	if uid <= 0 || uid != rayUID {
		t.Errorf("sidecar runAsUser %d, want the Ray container's non-root runAsUser %d", uid, rayUID)
	}
	if p := prepull.Spec.SecurityContext; p == nil || p.RunAsUser == nil || *p.RunAsUser != uid || p.RunAsGroup == nil || *p.RunAsGroup != gid {
		t.Errorf("pre-pull Pod securityContext %+v: want the sidecar's runAsUser %d and runAsGroup %d", p, uid, gid)
	}
	got := strings.TrimSpace(c.must(t, nil, "exec", head, "-n", ns, "-c", sidecarName, "--", "sh", "-c", "id -u; id -g; stat -c %u /config/extensions; touch /config/w && echo config-writable; touch /opt/x 2>/dev/null || echo root-read-only"))
	if want := fmt.Sprintf("%d\n%d\n%d\nconfig-writable\nroot-read-only", uid, gid, uid); got != want {
		t.Errorf("in the sidecar: %q, want %q: its uid and gid, /config/extensions the user's and writable, the root read-only", got, want)
	}
}
