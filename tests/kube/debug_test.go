package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/imagectl/imagectl/debug"
	injectpkg "github.com/imagectl/imagectl/inject"
)

// plainRayJob is a RayJob as a user keeps it (no sidecar yet) whose
// submissionMode is mode ("" leaves the field out: KubeRay's K8sJobMode).
func plainRayJob(name, mode string) []byte {
	m := ""
	if mode != "" {
		m = "\n  submissionMode: " + mode
	}
	return fmt.Appendf(nil, `apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: %s
spec:%s
  entrypoint: python sample_code.py
  rayClusterSpec:
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
`, name, m)
}

// debugRun is one imagectl debug run: its exit code, its JSON events and
// its stderr.
type debugRun struct {
	code   int
	events []debug.Event
	stderr string
}

func (r debugRun) kinds() []string {
	var ks []string
	for _, e := range r.events {
		if len(ks) == 0 || ks[len(ks)-1] != string(e.Kind) {
			ks = append(ks, string(e.Kind))
		}
	}
	return ks
}

func (r debugRun) find(k debug.Kind) *debug.Event {
	for i := range r.events {
		if r.events[i].Kind == k {
			return &r.events[i]
		}
	}
	return nil
}

// klogLine is the header of a klog line: severity, date, time, thread,
// file:line (E1129 23:16:06.167564    7140 portforward.go:522]).
var klogLine = regexp.MustCompile(`^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^ ]+:\d+\]`)

// imagectlDebug runs imagectl debug with -o json in dir; interrupt, when
// set, is called with each event and sends SIGINT when it returns true.
func imagectlDebug(t *testing.T, dir string, interrupt func(debug.Event) bool, args ...string) debugRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, imagectlBin(t), append([]string{"debug", "-o", "json"}, args...)...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var r debugRun
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	sent := false
	for sc.Scan() {
		var e debug.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Errorf("imagectl debug -o json printed a line that is not an event: %q: %v", sc.Text(), err)
			continue
		}
		r.events = append(r.events, e)
		if interrupt != nil && !sent && interrupt(e) {
			cmd.Process.Signal(syscall.SIGINT)
			sent = true
		}
	}
	err = cmd.Wait()
	r.stderr = stderr.String()
	for _, line := range strings.Split(r.stderr, "\n") {
		if klogLine.MatchString(line) {
			t.Errorf("imagectl debug wrote a klog line of client-go's on stderr (the session reports what it means as an event; -v shows client-go's errors as plain lines): %s", line)
		}
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("imagectl debug: %v\n%s", err, r.stderr)
	}
	t.Logf("imagectl debug %s: exit %d, events %v\nstderr: %s", strings.Join(args, " "), r.code, r.kinds(), r.stderr)
	return r
}

// exists reports whether kubectl finds the object.
func (c *cluster) exists(t *testing.T, ns, kind, name string) bool {
	t.Helper()
	out, err := c.kubectl(t, nil, "get", kind, name, "-n", ns, "--ignore-not-found", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out) != ""
}

// TestDebugOnControlPlane runs imagectl debug as a user types it against
// the real API server and operator, where no Pod can run: the head Pod
// stays Pending, so every session ends at its timeout or at an interrupt.
// What it checks: the namespace comes from the kubeconfig's context; the
// sidecar is injected and every document applied server-side by the
// field manager imagectl-debug; the password Secret is created once and
// then kept; the wait names what it waits for; --cleanup deletes exactly
// what the session created (an object that existed before stays); an
// existing RayJob is refused without --replace; a RayJob that KubeRay
// submits itself refuses --working-dir before anything is applied.
func TestDebugOnControlPlane(t *testing.T) {
	c := needCluster(t)
	ns := c.namespace(t, nil)
	dir := t.TempDir()
	kc := c.kubeconfigIn(t, dir, ns) // no -n below: the context's namespace
	base := []string{"--kubeconfig", kc, "--image", testImage}

	// A ConfigMap that exists before the session, and is in the manifest
	// too: applied, not created, so --cleanup must leave it.
	cm := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: job-config\ndata:\n  k: v\n")
	if err := c.apply(t, ns, cm); err != nil {
		t.Fatal(err)
	}
	manifest := append(append(append([]byte{}, cm...), "---\n"...), plainRayJob("dbg", "InteractiveMode")...)
	writeFile(t, filepath.Join(dir, "job.yaml"), manifest)

	t.Run("timeout and cleanup", func(t *testing.T) {
		// 30 s: the message names the head Pod once the operator has named
		// the RayJob's RayCluster, which a queue of other tests' objects can
		// delay.
		r := imagectlDebug(t, dir, nil, append(base, "-f", "job.yaml", "--ready-timeout", "30s", "--cleanup")...)
		if r.code != 1 {
			t.Fatalf("exit %d, want 1 (the head never gets ready without a node)", r.code)
		}
		if want := "timed out after 30s waiting for the head Pod of RayCluster"; !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
		}
		var applied []string
		for _, e := range r.events {
			if e.Kind == debug.KindApplied {
				applied = append(applied, fmt.Sprintf("%s created=%v", e.Object, e.Created))
			}
			if e.Namespace != ns {
				t.Errorf("event %q in namespace %q, want the context's %q", e.Message, e.Namespace, ns)
			}
		}
		wantApplied := []string{"Secret/code-server-password created=true", "ConfigMap/job-config created=false", "RayJob/dbg created=true"}
		if strings.Join(applied, "\n") != strings.Join(wantApplied, "\n") {
			t.Errorf("applied events:\n%s\nwant:\n%s", strings.Join(applied, "\n"), strings.Join(wantApplied, "\n"))
		}
		waiting := r.find(debug.KindWaiting)
		if waiting == nil {
			t.Fatal("no waiting event")
		}
		cl := r.find(debug.KindCleanup)
		if cl == nil {
			t.Fatal("no cleanup event")
		}
		if got, want := strings.Join(cl.Deleted, ","), "RayJob/dbg,Secret/code-server-password"; got != want {
			t.Errorf("deleted %s, want %s", got, want)
		}
		if ks := r.kinds(); ks[len(ks)-1] != "cleanup" {
			t.Errorf("events %v: want cleanup last", ks)
		}
		c.waitFor(t, 60*time.Second, "RayJob dbg deleted", func() (bool, error) { return !c.exists(t, ns, "rayjob", "dbg"), nil })
		if c.exists(t, ns, "secret", "code-server-password") {
			t.Error("the Secret the session created is still there after --cleanup")
		}
		if !c.exists(t, ns, "configmap", "job-config") {
			t.Error("--cleanup deleted the ConfigMap that existed before the session")
		}
	})

	t.Run("interrupt leaves what it created, and the sidecar is there", func(t *testing.T) {
		r := imagectlDebug(t, dir, func(e debug.Event) bool {
			return e.Kind == debug.KindWaiting && strings.HasPrefix(e.Object, "Pod/")
		}, append(base, "-f", "job.yaml", "--ready-timeout", "3m")...)
		if r.code != 130 {
			t.Fatalf("exit %d after SIGINT, want 130", r.code)
		}
		cl := r.find(debug.KindCleanup)
		if cl == nil || len(cl.Deleted) != 0 || strings.Join(cl.Left, ",") != "Secret/code-server-password,RayJob/dbg" {
			t.Fatalf("cleanup event %+v: want Secret and RayJob left, nothing deleted", cl)
		}
		if !c.exists(t, ns, "rayjob", "dbg") || !c.exists(t, ns, "secret", "code-server-password") {
			t.Fatal("without --cleanup the RayJob and Secret must stay")
		}
		// The head Pod KubeRay wrote carries the sidecar as inject adds it.
		pods := c.pods(t, ns, "ray.io/node-type=head")
		if len(pods) != 1 {
			t.Fatalf("%d head Pods, want 1", len(pods))
		}
		if got := names(pods[0].Spec.Containers); strings.Join(got, ",") != "ray-head,code-server" {
			t.Errorf("head Pod containers %v, want ray-head then code-server", got)
		}
		mf := c.must(t, nil, "get", "rayjob", "dbg", "-n", ns, "-o", "jsonpath={.metadata.managedFields[*].manager}")
		if !strings.Contains(mf, debug.FieldManager) {
			t.Errorf("RayJob managers %q do not include %s", mf, debug.FieldManager)
		}
	})

	t.Run("an existing RayJob is refused, kept, and replaced with --replace", func(t *testing.T) {
		pw := c.must(t, nil, "get", "secret", "code-server-password", "-n", ns, "-o", "jsonpath={.data.password}")
		uid := c.must(t, nil, "get", "rayjob", "dbg", "-n", ns, "-o", "jsonpath={.metadata.uid}")
		r := imagectlDebug(t, dir, nil, append(base, "-f", "job.yaml", "--ready-timeout", "5s")...)
		if r.code != 1 || !strings.Contains(r.stderr, "RayJob dbg already exists in namespace "+ns+": pass --replace") {
			t.Fatalf("exit %d, stderr %q: want 1 and the refusal naming --replace", r.code, r.stderr)
		}
		if got := c.must(t, nil, "get", "rayjob", "dbg", "-n", ns, "-o", "jsonpath={.metadata.uid}"); got != uid {
			t.Fatal("a refused session changed the existing RayJob")
		}
		r = imagectlDebug(t, dir, func(e debug.Event) bool {
			return e.Kind == debug.KindApplied && e.Object == "RayJob/dbg"
		}, append(base, "-f", "job.yaml", "--ready-timeout", "3m", "--replace", "--cleanup")...)
		if r.code != 130 {
			t.Fatalf("exit %d, want 130", r.code)
		}
		if got := c.must(t, nil, "get", "secret", "code-server-password", "-n", ns, "-o", "jsonpath={.data.password}"); got != pw {
			t.Error("the existing password Secret was not kept")
		}
		cl := r.find(debug.KindCleanup)
		if cl == nil || strings.Join(cl.Deleted, ",") != "RayJob/dbg" {
			t.Fatalf("cleanup event %+v: want only the recreated RayJob deleted (the Secret existed before)", cl)
		}
	})

	t.Run("a RayJob KubeRay submits refuses --working-dir before applying", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "k8sjob.yaml"), plainRayJob("k8sjob", ""))
		r := imagectlDebug(t, dir, nil, append(base, "-f", "k8sjob.yaml", "--working-dir", dir, "--ready-timeout", "5s")...)
		if r.code != 1 || !strings.Contains(r.stderr, "submissionMode K8sJobMode: KubeRay submits its spec.entrypoint itself") {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		for _, e := range r.events {
			if e.Kind != debug.KindWarning {
				t.Errorf("a refused session went on: event %s %q", e.Kind, e.Message)
			}
		}
		if c.exists(t, ns, "rayjob", "k8sjob") {
			t.Error("a refused session applied the RayJob")
		}
	})
}

// TestDebugWaitsForDeletionOnControlPlane: a RayCluster still being
// deleted (a finalizer of the test's holds it, as KubeRay's Pods hold one
// an earlier session's --cleanup deleted in the foreground) is not
// "configured" and then lost: --cluster refuses it, -f waits for it to go
// (a waiting event naming the finalizer), says so at --ready-timeout
// having applied nothing, and creates it again once it has gone.
func TestDebugWaitsForDeletionOnControlPlane(t *testing.T) {
	c := needCluster(t)
	ns := c.namespace(t, nil)
	dir := t.TempDir()
	kc := c.kubeconfigIn(t, dir, ns)
	const name, hold = "gone", "imagectl.test/hold"
	rc := fmt.Sprintf(plainRayCluster, name)
	writeFile(t, filepath.Join(dir, "rc.yaml"), []byte(rc))
	held := strings.Replace(rc, "  name: "+name+"\n", "  name: "+name+"\n  finalizers: ["+hold+"]\n", 1)
	if err := c.apply(t, ns, []byte(held)); err != nil {
		t.Fatal(err)
	}
	oldUID := c.must(t, nil, "get", "raycluster", name, "-n", ns, "-o", "jsonpath={.metadata.uid}")
	c.must(t, nil, "delete", "raycluster", name, "-n", ns, "--wait=false")
	release := func() {
		c.must(t, nil, "patch", "raycluster", name, "-n", ns, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	}
	t.Cleanup(func() {
		c.kubectl(t, nil, "patch", "raycluster", name, "-n", ns, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	})
	base := []string{"--kubeconfig", kc, "--image", testImage}

	t.Run("--cluster refuses it", func(t *testing.T) {
		r := imagectlDebug(t, dir, nil, "--kubeconfig", kc, "--cluster", name, "--ready-timeout", "5s")
		if want := "RayCluster " + name + " in namespace " + ns + " is being deleted (since "; r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr %q: want 1 and %q", r.code, r.stderr, want)
		}
	})

	t.Run("at --ready-timeout it says so, having applied nothing", func(t *testing.T) {
		r := imagectlDebug(t, dir, nil, append(base, "-f", "rc.yaml", "--ready-timeout", "5s")...)
		want := "RayCluster/" + name + " in namespace " + ns + " is still being deleted after 5s (since "
		if r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "finalizers "+hold) {
			t.Errorf("exit %d, stderr %q: want 1, %q and the finalizer %s", r.code, r.stderr, want, hold)
		}
		if e := r.find(debug.KindApplied); e != nil {
			t.Errorf("applied %s: want nothing applied", e.Message)
		}
		if c.exists(t, ns, "secret", "code-server-password") {
			t.Error("the session created the password Secret although it applied nothing")
		}
		if got := c.must(t, nil, "get", "raycluster", name, "-n", ns, "-o", "jsonpath={.metadata.uid}"); got != oldUID {
			t.Errorf("RayCluster %s has UID %s, want the held one %s", name, got, oldUID)
		}
	})

	t.Run("it waits, then creates it again", func(t *testing.T) {
		released := false
		r := imagectlDebug(t, dir, func(e debug.Event) bool {
			if e.Kind == debug.KindWaiting && e.Object == "RayCluster/"+name && strings.Contains(e.Message, "is being deleted") && !released {
				if !strings.Contains(e.Message, hold) {
					t.Errorf("waiting event %q does not name the finalizer %s", e.Message, hold)
				}
				release()
				released = true
			}
			return e.Kind == debug.KindApplied && e.Object == "RayCluster/"+name
		}, append(base, "-f", "rc.yaml", "--ready-timeout", "2m", "--cleanup")...)
		if !released {
			t.Fatalf("no waiting event for the RayCluster being deleted (exit %d, events %v)\n%s", r.code, r.kinds(), r.stderr)
		}
		if r.code != 130 {
			t.Errorf("exit %d after Ctrl-C, want 130\n%s", r.code, r.stderr)
		}
		var applied []string
		for _, e := range r.events {
			if e.Kind == debug.KindApplied {
				applied = append(applied, fmt.Sprintf("%s created=%v", e.Object, e.Created))
			}
		}
		if want := []string{"Secret/code-server-password created=true", "RayCluster/" + name + " created=true"}; strings.Join(applied, "\n") != strings.Join(want, "\n") {
			t.Errorf("applied events:\n%s\nwant:\n%s", strings.Join(applied, "\n"), strings.Join(want, "\n"))
		}
		// --cleanup deleted what it created, the new RayCluster among them.
		cl := r.find(debug.KindCleanup)
		if cl == nil || strings.Join(cl.Deleted, ",") != "RayCluster/"+name+",Secret/code-server-password" {
			t.Errorf("cleanup event %+v: want the new RayCluster and the Secret deleted", cl)
		}
	})
}

// limitedKubeconfigIn writes, as dir/limited.kubeconfig, a copy of the
// kubeconfig of with-kube.sh's user without rights, its context's
// namespace ns; it returns the file and the user's name.
func limitedKubeconfigIn(t *testing.T, dir, ns string) (string, string) {
	t.Helper()
	src, user := os.Getenv("IMAGECTL_KUBE_LIMITED_KUBECONFIG"), os.Getenv("IMAGECTL_KUBE_LIMITED_USER")
	if src == "" || user == "" {
		t.Fatal("IMAGECTL_KUBE_LIMITED_KUBECONFIG or IMAGECTL_KUBE_LIMITED_USER is not set: tests/e2e/with-kube.sh exports both with IMAGECTL_KUBE_KUBECONFIG")
	}
	kc := filepath.Join(dir, "limited.kubeconfig")
	writeFile(t, kc, readFile(t, src))
	if _, _, err := run(context.Background(), dir, nil, nil, "kubectl", "--kubeconfig", kc, "config", "set-context", "--current", "--namespace", ns); err != nil {
		t.Fatal(err)
	}
	return kc, user
}

// TestDebugRBACOnControlPlane runs imagectl debug as a user who may read
// the namespace but not create in it, against the API server's real RBAC
// authorizer (with-kube.sh runs it with --authorization-mode RBAC): the
// session fails (exit 1) with the API server's Forbidden message, which
// names the verb, the resource, the namespace and the user, and creates
// nothing — not even the password Secret it is allowed to create, since
// the server-side dry run of every document comes first.
func TestDebugRBACOnControlPlane(t *testing.T) {
	c := needCluster(t)
	ns := c.namespace(t, nil)
	dir := t.TempDir()
	kc, user := limitedKubeconfigIn(t, dir, ns)
	writeFile(t, filepath.Join(dir, "job.yaml"), plainRayJob("dbg", "InteractiveMode"))
	args := []string{"--kubeconfig", kc, "--image", testImage, "-f", "job.yaml", "--ready-timeout", "15s", "--cleanup"}

	// grant binds user a Role of the test's own in ns, with rules, and
	// waits until the authorizer has it (can-i, as the admin impersonating
	// the user).
	grant := func(t *testing.T, rules string, verb, resource string) {
		t.Helper()
		role := fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: debug-test}
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: [get, list, watch]}
%s---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: debug-test}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: debug-test}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: %q}
`, rules, user)
		if err := c.apply(t, ns, []byte(role)); err != nil {
			t.Fatal(err)
		}
		c.waitFor(t, 30*time.Second, user+" may "+verb+" "+resource, func() (bool, error) {
			out, _ := c.kubectl(t, nil, "auth", "can-i", verb, resource, "-n", ns, "--as", user)
			return strings.TrimSpace(out) == "yes", nil
		})
	}
	// refused runs the session and checks that it failed naming want and
	// left nothing in ns.
	var refusedWith func(t *testing.T, args []string, want ...string)
	refused := func(t *testing.T, want ...string) {
		t.Helper()
		refusedWith(t, args, want...)
	}
	refusedWith = func(t *testing.T, args []string, want ...string) {
		t.Helper()
		r := imagectlDebug(t, dir, nil, args...)
		if r.code != 1 {
			t.Fatalf("exit %d, want 1", r.code)
		}
		for _, w := range want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("stderr does not say %q:\n%s", w, r.stderr)
			}
		}
		for _, e := range r.events {
			if e.Kind != debug.KindWarning {
				t.Errorf("a refused session went on: event %s %q", e.Kind, e.Message)
			}
		}
		for _, kind := range []string{"rayjob", "secret/code-server-password", "raycluster"} {
			if out := c.must(t, nil, "get", kind, "-n", ns, "-o", "name", "--ignore-not-found"); strings.TrimSpace(out) != "" {
				t.Errorf("a refused session left %s", strings.TrimSpace(out))
			}
		}
	}

	t.Run("read only", func(t *testing.T) {
		grant(t, "", "get", "rayjobs.ray.io")
		refused(t,
			"apply (server-side dry run) Secret/code-server-password in namespace "+ns+": forbidden by the cluster's RBAC or admission",
			`(ask for "create" and "patch" on secrets in namespace "`+ns+`")`,
			`secrets "code-server-password" is forbidden: User "`+user+`" cannot patch resource "secrets" in API group "" in the namespace "`+ns+`"`,
			"(nothing was applied)")
	})
	t.Run("may create Secrets, not RayJobs", func(t *testing.T) {
		grant(t, "- {apiGroups: [\"\"], resources: [secrets], verbs: [create, patch, delete]}\n", "create", "secrets")
		refused(t,
			"apply (server-side dry run) RayJob/dbg in namespace "+ns+": forbidden by the cluster's RBAC or admission",
			`(ask for "create" and "patch" on rayjobs.ray.io in namespace "`+ns+`")`,
			`rayjobs.ray.io "dbg" is forbidden: User "`+user+`" cannot patch resource "rayjobs" in API group "ray.io" in the namespace "`+ns+`"`,
			"(nothing was applied)")
	})
	t.Run("may patch RayJobs, not create them", func(t *testing.T) {
		// A server-side apply of a new object is a patch that the API
		// server also authorizes as a create.
		grant(t, "- {apiGroups: [\"\"], resources: [secrets], verbs: [create, patch, delete]}\n- {apiGroups: [ray.io], resources: [rayjobs], verbs: [patch]}\n", "patch", "rayjobs.ray.io")
		refused(t,
			`rayjobs.ray.io "dbg" is forbidden: User "`+user+`" cannot create resource "rayjobs" in API group "ray.io" in the namespace "`+ns+`"`,
			"(nothing was applied)")
	})
	t.Run("--local may port-forward, not exec", func(t *testing.T) {
		// --local asks the API server (SelfSubjectAccessReview) for what it
		// needs before it applies anything, and names what is missing.
		grant(t, "- {apiGroups: [ray.io], resources: [rayjobs], verbs: [create, patch, delete]}\n- {apiGroups: [\"\"], resources: [pods/portforward], verbs: [create]}\n", "create", "rayjobs.ray.io")
		refusedWith(t, []string{"--kubeconfig", kc, "-f", "job.yaml", "--local", "--local-port", "0", "--ready-timeout", "15s", "--cleanup"},
			"debug --local: in namespace "+ns+` you may not "create" on pods/exec (the relay to a paused task's debugpy`,
			"(nothing was applied)")
	})
}

// TestDebugPrepullOnControlPlane: --prepull applies inject.Prepull's
// DaemonSet of the injected manifest (every Ray image of the head and the
// worker groups, the sidecar image, the Pods' imagePullSecrets) in the
// session's namespace after the Secret and before the RayJob, reports it,
// does not wait for it, and deletes it with --cleanup.
func TestDebugPrepullOnControlPlane(t *testing.T) {
	c := needCluster(t)
	ns := c.namespace(t, nil)
	dir := t.TempDir()
	kc := c.kubeconfigIn(t, dir, ns)
	job := string(plainRayJob("pp", "InteractiveMode")) + `    workerGroupSpecs:
    - groupName: gpu
      replicas: 1
      rayStartParams: {}
      template:
        spec:
          imagePullSecrets: [{name: regcred}]
          containers:
          - name: ray-worker
            image: rayproject/ray:2.46.0-py312-gpu
`
	writeFile(t, filepath.Join(dir, "job.yaml"), []byte(job))
	var ds struct {
		Spec struct {
			Template struct {
				Spec corev1.PodSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	var managers string
	r := imagectlDebug(t, dir, func(e debug.Event) bool {
		if e.Kind != debug.KindWaiting {
			return false
		}
		// Applied, not waited for: the session waits for the head already.
		out := c.must(t, nil, "get", "daemonset", injectpkg.PrepullName, "-n", ns, "-o", "json")
		if err := json.Unmarshal([]byte(out), &ds); err != nil {
			t.Errorf("DaemonSet %s: %v", injectpkg.PrepullName, err)
		}
		managers = c.must(t, nil, "get", "daemonset", injectpkg.PrepullName, "-n", ns, "-o", "jsonpath={.metadata.managedFields[*].manager}")
		return true
	}, "--kubeconfig", kc, "--image", testImage, "-f", "job.yaml", "--prepull", "--ready-timeout", "3m", "--cleanup")
	if r.code != 130 {
		t.Fatalf("exit %d after SIGINT, want 130", r.code)
	}
	var applied []string
	for _, e := range r.events {
		if e.Kind == debug.KindApplied {
			applied = append(applied, fmt.Sprintf("%s created=%v", e.Object, e.Created))
			if e.Object == "DaemonSet/"+injectpkg.PrepullName {
				for _, img := range []string{"rayproject/ray:2.46.0-py312", "rayproject/ray:2.46.0-py312-gpu", testImage} {
					if !strings.Contains(e.Message, img) {
						t.Errorf("the DaemonSet's event does not name image %s: %q", img, e.Message)
					}
				}
			}
		}
	}
	wantApplied := []string{"Secret/code-server-password created=true", "DaemonSet/" + injectpkg.PrepullName + " created=true", "RayJob/pp created=true"}
	if diff := cmp.Diff(wantApplied, applied); diff != "" {
		t.Errorf("applied events (-want +got):\n%s", diff)
	}
	var images []string
	for _, ic := range ds.Spec.Template.Spec.InitContainers {
		images = append(images, ic.Name+"="+ic.Image)
	}
	wantImages := []string{"ray=rayproject/ray:2.46.0-py312", "ray-2=rayproject/ray:2.46.0-py312-gpu", "code-server=" + testImage}
	if diff := cmp.Diff(wantImages, images); diff != "" {
		t.Errorf("the DaemonSet's init containers on the server (-want +got):\n%s", diff)
	}
	if got := fmt.Sprint(ds.Spec.Template.Spec.ImagePullSecrets); got != "[{regcred}]" {
		t.Errorf("the DaemonSet's imagePullSecrets %s, want [{regcred}]", got)
	}
	if !strings.Contains(managers, debug.FieldManager) {
		t.Errorf("DaemonSet managers %q do not include %s", managers, debug.FieldManager)
	}
	cl := r.find(debug.KindCleanup)
	if cl == nil {
		t.Fatal("no cleanup event")
	}
	if diff := cmp.Diff([]string{"RayJob/pp", "DaemonSet/" + injectpkg.PrepullName, "Secret/code-server-password"}, cl.Deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	c.waitFor(t, 60*time.Second, "DaemonSet "+injectpkg.PrepullName+" deleted", func() (bool, error) {
		return !c.exists(t, ns, "daemonset", injectpkg.PrepullName), nil
	})
}

// TestDebugAPIWarningsOnControlPlane: the API server's warnings (here
// PodSecurity's "would violate" for a Pod of the manifest, in a namespace
// that warns at "restricted") are warning events of the session naming
// the object, each once, and not client-go's klog lines on stderr
// (imagectlDebug refuses those in every test).
func TestDebugAPIWarningsOnControlPlane(t *testing.T) {
	c := needCluster(t)
	ns := c.namespace(t, map[string]string{"pod-security.kubernetes.io/warn": "restricted"})
	dir := t.TempDir()
	kc := c.kubeconfigIn(t, dir, ns)
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: loose\nspec:\n  containers:\n  - name: c\n    image: registry.example/busybox:1\n"
	writeFile(t, filepath.Join(dir, "job.yaml"), append([]byte(pod+"---\n"), plainRayJob("warned", "InteractiveMode")...))
	r := imagectlDebug(t, dir, func(e debug.Event) bool {
		return e.Kind == debug.KindApplied && e.Object == "RayJob/warned"
	}, "--kubeconfig", kc, "--image", testImage, "-f", "job.yaml", "--prepull", "--ready-timeout", "1m")
	if r.code != 130 {
		t.Errorf("exit %d after Ctrl-C, want 130\n%s", r.code, r.stderr)
	}
	var warned []string
	for _, e := range r.events {
		if e.Kind == debug.KindWarning && strings.Contains(e.Message, "the API server says") {
			warned = append(warned, e.Object+": "+e.Message)
		}
	}
	t.Logf("the API server's warnings:\n%s", strings.Join(warned, "\n"))
	n := 0
	for _, w := range warned {
		if strings.HasPrefix(w, "Pod/loose: warning: the API server says, of Pod/loose: would violate PodSecurity \"restricted:latest\"") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d warning events of Pod/loose's PodSecurity violation, want 1 (the dry run's and the apply's are the same warning)", n)
	}
}

// TestDebugPrepullRestrictedOnControlPlane: in a namespace that enforces
// PodSecurity "restricted", debug --prepull restricts the sidecar and the
// pre-pull DaemonSet alike: the API server, which warns of a workload
// whose Pods the namespace would refuse, has nothing to say of the
// DaemonSet (the DaemonSet's Pods running there is TestDebugRestrictedOnNode's).
func TestDebugPrepullRestrictedOnControlPlane(t *testing.T) {
	c := needCluster(t)
	ns := c.namespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	dir := t.TempDir()
	kc := c.kubeconfigIn(t, dir, ns)
	writeFile(t, filepath.Join(dir, "job.yaml"), plainRayJob("pre", "InteractiveMode"))
	r := imagectlDebug(t, dir, func(e debug.Event) bool {
		return e.Kind == debug.KindApplied && e.Object == "RayJob/pre"
	}, "--kubeconfig", kc, "--image", testImage, "-f", "job.yaml", "--prepull", "--ready-timeout", "1m")
	if r.code != 130 {
		t.Errorf("exit %d after Ctrl-C, want 130\n%s", r.code, r.stderr)
	}
	applied := false
	for _, e := range r.events {
		applied = applied || e.Kind == debug.KindApplied && e.Object == "DaemonSet/"+injectpkg.PrepullName
		if e.Kind == debug.KindWarning && strings.Contains(e.Message, "PodSecurity") && strings.Contains(e.Message, "would violate") {
			t.Errorf("warning: %s", e.Message)
		}
	}
	if !applied {
		t.Fatalf("no applied event for DaemonSet/%s: events %v", injectpkg.PrepullName, r.kinds())
	}
	sc := c.must(t, nil, "get", "daemonset", injectpkg.PrepullName, "-n", ns, "-o", "jsonpath={.spec.template.spec.securityContext.runAsNonRoot}")
	if sc != "true" {
		t.Errorf("DaemonSet %s: runAsNonRoot %q, want true", injectpkg.PrepullName, sc)
	}
}
