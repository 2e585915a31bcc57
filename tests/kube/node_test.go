package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/smoke/kind"
)

// node is the kubelet tests/e2e/with-kube.sh runs with IMAGECTL_KUBE_NODE=1,
// and the images it imported (nothing is pulled).
type node struct {
	rayImage     string // the Ray stand-in (tests/kube/standin) on the sidecar image
	sidecarImage string // the image the e2e built, linux/amd64
}

// needNode returns the script's node, or skips: only make test's node run
// (IMAGECTL_KUBE_REQUIRE_NODE=1) requires it, since every other run of
// these tests has a control plane without one.
func needNode(t *testing.T) *node {
	t.Helper()
	if os.Getenv("IMAGECTL_KUBE_NODE") == "" {
		msg := "IMAGECTL_KUBE_NODE is not set: this test needs the kubelet, containerd and images that IMAGECTL_KUBE_NODE=1 IMAGECTL_KUBE_SIDECAR=<the e2e image's OCI archive> bash tests/e2e/with-kube.sh starts (make test does)"
		if os.Getenv("IMAGECTL_KUBE_REQUIRE_NODE") == "1" {
			t.Fatal(msg + "; IMAGECTL_KUBE_REQUIRE_NODE=1 requires it")
		}
		t.Skip(msg)
	}
	n := &node{rayImage: os.Getenv("IMAGECTL_KUBE_RAY_IMAGE"), sidecarImage: os.Getenv("IMAGECTL_KUBE_SIDECAR_IMAGE")}
	if n.rayImage == "" || n.sidecarImage == "" {
		t.Fatalf("IMAGECTL_KUBE_NODE is set but not IMAGECTL_KUBE_RAY_IMAGE and IMAGECTL_KUBE_SIDECAR_IMAGE (%+v)", *n)
	}
	return n
}

// staticImagectl puts imagectlBin and the probe beside it where
// docs/smoke.md copies them into the sidecar from (static linux builds):
// dir/bin/imagectl and dir/bin/imagectl-probe.
func staticImagectl(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"imagectl", "imagectl-probe"} {
		writeFile(t, filepath.Join(dir, "bin", name), readFile(t, filepath.Join(filepath.Dir(imagectlBin(t)), name)))
		if err := os.Chmod(filepath.Join(dir, "bin", name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadmeDebugFlowOnNode runs docs/inject.md's manual steps (the
// alternative to imagectl debug that README's "Debug a RayJob on KubeRay"
// links to) for real on the node, from the doc's text, with NS set to the
// test's namespace: the smoke harness's RayJob (its
// Ray image the stand-in, with RAY_DEBUG_POST_MORTEM=1 and
// IMAGECTL_STANDIN_STARTUP_TASKS=1 on the head, so it runs its tasks at
// start) is
// injected and created as the plugin would, examples/prepull.yaml (its images
// set to the job's, as the doc says) rolls out, the RayCluster's and
// head-Pod lookups find the Pod the operator made,
// `kubectl wait … --for=condition=Ready` returns, `kubectl port-forward …
// pod/… 8443:8443` (to a free local port) is answered by code-server,
// which takes the Secret's password (as the doc's password line reads it)
// and refuses another, and docs/smoke.md's lines copy imagectl into the sidecar and run
// `imagectl smoke attach` there against 127.0.0.1:8265: it finds the task
// paused at breakpoint(), dials the task's debugpy at the head Pod's IP
// (not loopback), stops in f with its file open under the image's shipped
// settings, continues, and the task returns; then the same for the task
// frozen on its uncaught exception (--post-mortem), which then fails as it
// would have.
//
// Not exercised here: the kubectl ray plugin (`kubectl create -f` stands for
// its -f), the job's runtimeEnvYAML (the stand-in starts its tasks itself,
// IMAGECTL_STANDIN_STARTUP_TASKS=1 and RAY_DEBUG_POST_MORTEM=1 being the
// head container's env), and an attach to a
// worker Pod (the RayJob has no worker group; the stand-in runs its tasks in
// the head Pod, in the Ray container's network namespace, which the sidecar
// shares). That a worker Pod starts on the node, through the cluster DNS,
// is TestWorkerJoinsThroughServicesOnNode's.
func TestReadmeDebugFlowOnNode(t *testing.T) {
	c := needCluster(t)
	n := needNode(t)
	dir := t.TempDir()
	ns := c.namespace(t, nil)
	kc := c.kubeconfigIn(t, dir, ns)

	p := kind.Params{Name: "readme", RayVersion: "2.46.0", Python: "3.12"}
	plain, err := kind.RenderPlain(p)
	if err != nil {
		t.Fatal(err)
	}
	plain = replaceAll(t, plain, p.RayImage(), n.rayImage, 2)
	plain = replaceAll(t, plain, "          - name: ray-head\n", "          - name: ray-head\n            env: [{name: RAY_DEBUG_POST_MORTEM, value: \"1\"}, {name: IMAGECTL_STANDIN_STARTUP_TASKS, value: \"1\"}]\n", 1)
	writeFile(t, filepath.Join(dir, kind.PlainFile), plain)
	prepull := readFile(t, filepath.Join(repoRoot(t), "examples", "prepull.yaml"))
	prepull = replaceAll(t, prepull, "rayproject/ray:2.46.0-py312", n.rayImage, 1)
	prepull = setImage(t, prepull, "code-server", n.sidecarImage)
	prepull = setImage(t, prepull, "hold", n.sidecarImage)
	writeFile(t, filepath.Join(dir, kind.PrepullFile), prepull)
	staticImagectl(t, dir)

	bin := filepath.Dir(imagectlBin(t))
	env := []string{"KUBECONFIG=" + kc, "NS=" + ns, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "DOCKER_CONFIG=" + filepath.Join(dir, ".docker")}
	script, rest := readmeScript(t, n)
	if len(rest) < 2 || !strings.HasPrefix(rest[0], "kubectl wait ") || !strings.Contains(rest[0], " --for=condition=Ready ") || !strings.HasPrefix(rest[1], "kubectl port-forward ") {
		t.Fatalf("docs/inject.md's manual steps after the head-Pod lookup: want `kubectl wait … --for=condition=Ready …` then `kubectl port-forward …`, have:\n%s", strings.Join(rest, "\n"))
	}
	passwordLine := ""
	for _, l := range rest[2:] {
		if strings.HasPrefix(l, "kubectl get secret ") && strings.Contains(l, "| base64 -d") {
			passwordLine = l
			continue
		}
		t.Logf("not run (after the port-forward; the attach runs docs/smoke.md's lines below): %s", l)
	}
	if passwordLine == "" {
		t.Fatalf("docs/inject.md's manual steps read no password (`kubectl get secret … | base64 -d`) after the port-forward:\n%s", strings.Join(rest, "\n"))
	}
	script = append(script, rest[0])
	text := "set -euxo pipefail\n" + strings.Join(script, "\n") + "\n"
	t.Logf("running:\n%s", text)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	out, stderr, err := run(ctx, dir, env, []byte(text), "bash", "-s")
	cancel()
	t.Logf("output:\n%s\n%s", out, stderr)
	if err != nil {
		c.dumpPods(t, ns)
		t.Fatal(err)
	}
	head := ""
	for _, l := range strings.Split(out, "\n") {
		if h, ok := strings.CutPrefix(l, "head pod: "); ok {
			head = h
		}
	}
	if !strings.HasPrefix(head, "readme-") {
		t.Fatalf("the doc's head-pod lookup printed %q, want a head Pod of RayJob readme", head)
	}
	o := rayObjects(t, readFile(t, filepath.Join(dir, kind.InjectedFile)))[0]
	pod := c.headPod(t, ns, o)
	c.checkHeadPod(t, ns, o, pod, n.sidecarImage)
	if pod.Status.PodIP == "" || pod.Status.PodIP == "127.0.0.1" {
		t.Fatalf("head Pod's IP is %q: want one on the run's pod network", pod.Status.PodIP)
	}
	env = append(env, "HEAD="+head)

	// The doc's password line prints the Secret's password.
	password := c.secretPassword(t, ns)
	pwCtx, pwCancel := context.WithTimeout(context.Background(), time.Minute)
	pwOut, pwErr, err := run(pwCtx, dir, env, []byte("set -euo pipefail\n"+passwordLine+"\n"), "bash", "-s")
	pwCancel()
	if err != nil || pwOut != password {
		t.Fatalf("the doc's password line %q printed %d bytes that are not the Secret's password (%v): %s", passwordLine, len(pwOut), err, pwErr)
	}

	// The port-forward, as the doc writes it but to a free local port.
	t.Run("port-forward", func(t *testing.T) {
		local := freePort(t)
		line := strings.Replace(rest[1], " 8443:8443", " "+strconv.Itoa(local)+":8443", 1)
		if line == rest[1] {
			t.Fatalf("the doc's port-forward line %q has no 8443:8443", rest[1])
		}
		t.Logf("the doc's %q, to local port %d (no fixed ports here): %s", rest[1], local, line)
		forwarding := "Forwarding from 127.0.0.1:" + strconv.Itoa(local)
		stop := background(t, dir, env, line, forwarding)
		defer func() { stop() }()
		// code-server may still be starting when the Pod is Ready: a
		// connection refused in the Pod ends kubectl's port-forward ("lost
		// connection to pod"), and the doc says to run it again. So does
		// the test, until code-server answers (90 s).
		base := "http://127.0.0.1:" + strconv.Itoa(local)
		deadline := time.Now().Add(90 * time.Second)
		for {
			err := healthz(base)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("code-server through the doc's port-forward: %v after 90s", err)
			}
			if errors.Is(err, syscall.ECONNREFUSED) {
				t.Logf("the port-forward ended (%v): running it again, as the doc says", err)
				stop()
				stop = background(t, dir, env, line, forwarding)
				continue
			}
			time.Sleep(time.Second)
		}
		checkCodeServerLogin(t, base, password, envValue(t, pod.Spec, sidecarName, "DEFAULT_WORKSPACE"))
	})

	// docs/smoke.md's lines, from the sidecar.
	lines, err := testutil.ShellLines(string(readFile(t, filepath.Join(repoRoot(t), "docs", "smoke.md"))), "## Checking it without a browser: `imagectl smoke attach`")
	if err != nil {
		t.Fatalf("docs/smoke.md: %v", err)
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "kubectl cp bin/imagectl-probe ") || !strings.Contains(lines[1], "/tmp/imagectl-probe attach") || !strings.Contains(lines[1], "--expect-function f") {
		t.Fatalf("docs/smoke.md: want `kubectl cp bin/imagectl-probe …` then `kubectl exec … /tmp/imagectl-probe attach … --expect-function f`, have:\n%s", strings.Join(lines, "\n"))
	}
	cases := []struct {
		name, line, function, log string
	}{
		{"breakpoint", lines[1], "f", "IMAGECTL-STANDIN RESULT 49"},
		{"post-mortem", strings.Replace(lines[1], "--expect-function f", "--post-mortem --expect-function g", 1), "g", "IMAGECTL-STANDIN TASK-ERROR ZeroDivisionError"},
	}
	text = "set -euxo pipefail\n" + lines[0] + "\n"
	cpCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, stderr, err := run(cpCtx, dir, env, []byte(text), "bash", "-s"); err != nil {
		t.Fatalf("%s\n%s\n%s", text, out, stderr)
	}
	for _, tc := range cases {
		t.Logf("%s: %s", tc.name, tc.line)
		// smoke attach's own bounds: --pause-timeout 2m, then 30 s steps.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		out, stderr, err := run(ctx, dir, env, []byte("set -euo pipefail\n"+tc.line+"\n"), "bash", "-s")
		cancel()
		if err != nil {
			t.Logf("stdout:\n%s", out)
			c.dumpPods(t, ns)
			t.Fatalf("%s: %v\n%s", tc.name, err, stderr)
		}
		var rep struct {
			OK     bool `json:"ok"`
			Target struct {
				IP           string `json:"ip"`
				DebuggerPort int    `json:"debuggerPort"`
				TaskName     string `json:"taskName"`
			} `json:"target"`
			Attach struct {
				AttachArguments struct {
					PathMappings []struct {
						LocalRoot string `json:"localRoot"`
					} `json:"pathMappings"`
				} `json:"attachArguments"`
				StopReason string `json:"stopReason"`
				Frame      struct {
					Name string `json:"name"`
					Path string `json:"path"`
				} `json:"frame"`
				Source struct {
					Opened             string `json:"opened"`
					BreakpointVerified bool   `json:"breakpointVerified"`
				} `json:"source"`
			} `json:"attach"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: the report is not JSON: %v\n%s", tc.name, err, out)
		}
		t.Logf("%s: %s:%d task %s, stopped (%s) in %s at %s", tc.name, rep.Target.IP, rep.Target.DebuggerPort, rep.Target.TaskName, rep.Attach.StopReason, rep.Attach.Frame.Name, rep.Attach.Frame.Path)
		switch {
		case !rep.OK:
			t.Errorf("%s: report not ok:\n%s", tc.name, out)
		case rep.Target.IP != pod.Status.PodIP:
			t.Errorf("%s: attached to %s, want the task's debugpy on the head Pod's IP %s", tc.name, rep.Target.IP, pod.Status.PodIP)
		case rep.Target.TaskName != tc.function:
			t.Errorf("%s: attached to task %q, want %q", tc.name, rep.Target.TaskName, tc.function)
		case !strings.HasPrefix(rep.Attach.Frame.Path, "/tmp/ray/session_"):
			t.Errorf("%s: the paused frame's file is %q, want the task's working_dir copy under /tmp/ray", tc.name, rep.Attach.Frame.Path)
		case len(rep.Attach.AttachArguments.PathMappings) == 0 || rep.Attach.AttachArguments.PathMappings[0].LocalRoot != imagespec.DebuggerLocalRoot:
			t.Errorf("%s: attached with pathMappings %+v, want the localRoot %q of the image's shipped settings", tc.name, rep.Attach.AttachArguments.PathMappings, imagespec.DebuggerLocalRoot)
		case rep.Attach.Source.Opened != "path" || !rep.Attach.Source.BreakpointVerified:
			t.Errorf("%s: the paused frame's source opened as %q (breakpoint verified: %v), want the file itself, seen from the sidecar through the shared /tmp/ray", tc.name, rep.Attach.Source.Opened, rep.Attach.Source.BreakpointVerified)
		}
		c.waitFor(t, 60*time.Second, tc.name+" task's end in the Ray container's log", func() (bool, error) {
			logs, err := c.kubectl(t, nil, "logs", "-n", ns, head, "-c", pod.Spec.Containers[0].Name)
			return strings.Contains(logs, tc.log), err
		})
	}
}

// envValue is the value of env var name of spec's container ct.
func envValue(t *testing.T, spec corev1.PodSpec, ct, name string) string {
	t.Helper()
	_, c := container(spec, ct)
	if c == nil {
		t.Fatalf("no container %s", ct)
	}
	for _, e := range c.Env {
		if e.Name == name && e.Value != "" {
			return e.Value
		}
	}
	t.Fatalf("container %s has no %s value", ct, name)
	return ""
}

// replaceAll replaces old with new in b, which must hold old n times.
func replaceAll(t *testing.T, b []byte, old, new string, n int) []byte {
	t.Helper()
	if got := bytes.Count(b, []byte(old)); got != n {
		t.Fatalf("want %q %d times, found it %d times in:\n%s", old, n, got, b)
	}
	return bytes.ReplaceAll(b, []byte(old), []byte(new))
}

// setImage sets the image of the container named name in a manifest
// written as examples/prepull.yaml is (`- name: X` then `image: Y`).
func setImage(t *testing.T, b []byte, name, image string) []byte {
	t.Helper()
	lines := strings.SplitAfter(string(b), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "- name: "+name && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "image: ") {
			indent := lines[i+1][:len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " "))]
			lines[i+1] = indent + "image: " + image + "\n"
			return []byte(strings.Join(lines, ""))
		}
	}
	t.Fatalf("no container %q with an image line in:\n%s", name, b)
	return nil
}

// secretPassword is the password of README's Secret code-server-password.
func (c *cluster) secretPassword(t *testing.T, ns string) string {
	t.Helper()
	out := c.must(t, nil, "get", "secret", "code-server-password", "-n", ns, "-o", "jsonpath={.data.password}")
	b, err := base64.StdEncoding.DecodeString(out)
	if err != nil || len(b) == 0 {
		t.Fatalf("the Secret's password %q does not decode: %v", out, err)
	}
	return string(b)
}

// freePort is a TCP port free on 127.0.0.1 right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// background runs line with bash until stop is called, once its output
// has a line starting with ready.
func background(t *testing.T, dir string, env []string, line, ready string) (stop func()) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); pw.Close(); close(done) }()
	stop = func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		<-done
	}
	seen := make(chan string, 1)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(pr)
		found := false
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if !found && strings.HasPrefix(sc.Text(), ready) {
				found = true
				seen <- ""
			}
		}
		if !found {
			seen <- all.String()
		}
		io.Copy(io.Discard, pr) // a line too long for the scanner: keep draining
	}()
	select {
	case msg := <-seen:
		if msg != "" {
			stop()
			t.Fatalf("%s ended before %q:\n%s", line, ready, msg)
		}
	case <-time.After(60 * time.Second):
		stop()
		t.Fatalf("%s: no %q within 60s", line, ready)
	}
	return stop
}

// checkCodeServerLogin logs into code-server at base as a browser does: a
// wrong password is refused without a session, the Secret's gives one, and
// the session opens the workbench on workspace.
func checkCodeServerLogin(t *testing.T, base, password, workspace string) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, cookie *http.Cookie) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s%s: %v", base, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	login := func(pw string) (*http.Response, string) {
		resp, err := client.PostForm(base+"/login", url.Values{"password": {pw}})
		if err != nil {
			t.Fatalf("POST %s/login: %v", base, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	session := func(resp *http.Response) *http.Cookie {
		for _, ck := range resp.Cookies() {
			if ck.Name == "code-server-session" && ck.Value != "" {
				return ck
			}
		}
		return nil
	}
	// The sidecar has no readiness probe (KubeRay would wait for it): the
	// Pod is Ready before code-server listens. Wait for it as a user
	// retrying the browser would.
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := client.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("code-server through the port-forward: %v after 90s", err)
		}
		time.Sleep(time.Second)
	}
	if resp, body := get("/", nil); resp.StatusCode != http.StatusFound || !strings.Contains(resp.Header.Get("Location"), "login") {
		t.Fatalf("GET / without a session: %s Location %q, want a redirect to the login page\n%.300s", resp.Status, resp.Header.Get("Location"), body)
	}
	if resp, body := get("/login", nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, `name="password"`) {
		t.Fatalf("GET /login: %s, want code-server's login form\n%.300s", resp.Status, body)
	}
	if resp, body := login(password + "x"); session(resp) != nil || !strings.Contains(body, "Incorrect password") {
		t.Fatalf("a wrong password: %s, session %v, want code-server's \"Incorrect password\" and no session\n%.300s", resp.Status, session(resp), body)
	}
	resp, body := login(password)
	ck := session(resp)
	if resp.StatusCode != http.StatusFound || ck == nil {
		t.Fatalf("the Secret's password: %s, session %v, want a redirect with a code-server-session cookie\n%.300s", resp.Status, ck, body)
	}
	// code-server opens the sidecar's DEFAULT_WORKSPACE, then the workbench.
	resp, body = get("/", ck)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || loc != "./?folder="+workspace {
		t.Fatalf("GET / with the session: %s Location %q, want a redirect to ./?folder=%s (the sidecar's DEFAULT_WORKSPACE)\n%.300s", resp.Status, loc, workspace, body)
	}
	if resp, body := get("/"+strings.TrimPrefix(loc, "./"), ck); resp.StatusCode != http.StatusOK || !strings.Contains(body, "workbench") {
		t.Fatalf("GET %s with the session: %s, want the workbench page\n%.300s", loc, resp.Status, body)
	}
	t.Logf("code-server at %s: login form, wrong password refused, the Secret's accepted, workbench served on %s", base, loc)
}

// dumpPods logs the Pods of ns with their events and containers' logs.
func (c *cluster) dumpPods(t *testing.T, ns string) {
	t.Helper()
	out, _ := c.kubectl(t, nil, "get", "pods", "-n", ns, "-o", "wide")
	t.Logf("pods in %s:\n%s", ns, out)
	out, _ = c.kubectl(t, nil, "get", "events", "-n", ns, "--sort-by", ".lastTimestamp")
	t.Logf("events in %s:\n%s", ns, out)
	for _, p := range c.pods(t, ns, "ray.io/node-type=head") {
		for _, ct := range p.Spec.Containers {
			out, _ := c.kubectl(t, nil, "logs", "-n", ns, p.Name, "-c", ct.Name, "--tail", "40")
			t.Logf("%s/%s log:\n%s", p.Name, ct.Name, out)
		}
	}
}
