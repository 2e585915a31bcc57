package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagectl/imagectl/debug"
	"github.com/imagectl/imagectl/smoke/kind"
)

// localTasks is the working_dir module of the --local tests: two tasks,
// each paused at breakpoint() with a line to step to after it.
const localTasks = `"""Two tasks for imagectl debug --local: one runs on the head Pod, one on
the worker Pod (the driver asks for the worker group's custom resource)."""


def on_head(x):
    breakpoint()  # paused on the head Pod
    y = x * x
    return y


def on_worker(x):
    breakpoint()  # paused on the worker Pod
    y = x + 1
    return y
`

// restrictedRayJob is the smoke RayJob with the stand-in Ray image, its
// worker group offering the custom resource worker_slot, and both Pods as
// PodSecurity "restricted" wants them (non-root, no privilege escalation,
// every capability dropped, RuntimeDefault seccomp): no sidecar.
func restrictedRayJob(t *testing.T, name, rayImage string) []byte {
	t.Helper()
	p := kind.Params{Name: name, RayVersion: "2.46.0", Python: "3.12"}
	plain, err := kind.RenderPlain(p)
	if err != nil {
		t.Fatal(err)
	}
	plain = replaceAll(t, plain, p.RayImage(), rayImage, 2)
	plain = replaceAll(t, plain, "      RAY_DEBUG_POST_MORTEM: \"1\"\n", "", 1)
	plain = replaceAll(t, plain, "        num-cpus: \"1\"\n", "        num-cpus: \"1\"\n        resources: '\"{\\\"worker_slot\\\": 1}\"'\n", 1)
	plain = replaceAll(t, plain, "            fsGroup: 100\n", "            fsGroup: 100\n            seccompProfile: {type: RuntimeDefault}\n", 2)
	plain = replaceAll(t, plain, "              allowPrivilegeEscalation: false\n", "              allowPrivilegeEscalation: false\n              capabilities: {drop: [ALL]}\n", 2)
	return plain
}

// localSession is what every --local node test starts from: a namespace
// that enforces PodSecurity "restricted", a kubeconfig in it, a working
// directory with the tasks and the stand-in's driver, and job.yaml, the
// restricted RayJob named job.
type localSession struct {
	c           *cluster
	dir, ns, kc string
	wd          string
}

func newLocalSession(t *testing.T, job string) localSession {
	t.Helper()
	c := needCluster(t)
	n := needNode(t)
	dir := t.TempDir()
	ns := c.namespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"})
	ls := localSession{c: c, dir: dir, ns: ns, kc: c.kubeconfigIn(t, dir, ns), wd: filepath.Join(dir, "working_dir")}
	if err := os.MkdirAll(ls.wd, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ls.wd, "tasks.py"), []byte(localTasks))
	writeFile(t, filepath.Join(ls.wd, "driver.py"), readFile(t, filepath.Join(repoRoot(t), "tests", "kube", "standin", "driver.py")))
	writeFile(t, filepath.Join(dir, "job.yaml"), restrictedRayJob(t, job, n.rayImage))
	return ls
}

// TestDebugLocalOnNode runs imagectl debug --local on the node, in a
// namespace that enforces PodSecurity "restricted", with no sidecar in any
// Pod: one job whose driver runs two tasks at once, one paused on the head
// Pod and one on the worker Pod. When both are reported paused, two
// probes run on the host (imagectl smoke attach, the extension's queries,
// outside any Pod) against the session's local dashboard proxy, one per
// task, at the same time: each finds its task at the rewritten address,
// attaches through the session's tunnel, stops in the task with the frame
// mapped to the local working directory by real debugpy's path mapping
// (the extension's pathMappings, localRoot the local directory), opens
// the source from there, steps over the paused line, and continues; the
// job succeeds. The launch.json the session keeps has an attach
// configuration per paused task at its tunnel.
func TestDebugLocalOnNode(t *testing.T) {
	ls := newLocalSession(t, "dbg-l")
	c, dir, ns, kc, wd := ls.c, ls.dir, ls.ns, ls.kc, ls.wd
	launch := filepath.Join(dir, ".vscode", "launch.json")
	if err := os.MkdirAll(filepath.Dir(launch), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, launch, []byte(`{"version": "0.2.0", "configurations": [{"name": "mine", "type": "debugpy", "request": "launch", "program": "x.py"}]}`))
	entrypoint := "python3 driver.py tasks on_head 7 & h=$!; python3 driver.py tasks on_worker 8 worker_slot=1; w=$?; wait $h && exit $w"

	start := time.Now()
	var proxy string
	paused := map[string]*debug.PausedTask{}
	var mu sync.Mutex
	reports := map[string]localAttach{}
	attached := false
	r := imagectlDebug(t, dir, func(e debug.Event) bool {
		switch e.Kind {
		case debug.KindReady:
			proxy = e.DashboardURL
			if e.CodeServerURL != "" || e.LocalRoot != wd {
				t.Errorf("ready event %+v: want no code-server and localRoot %s", e, wd)
			}
		case debug.KindPaused:
			if e.Task == nil || e.Task.Local == "" || e.Launch == nil {
				t.Errorf("paused event %+v: want the task, its local address and its launch configuration", e)
				return true
			}
			paused[e.Task.Name] = e.Task
			t.Logf("%s after %s: %s, here at %s", e.Task.Name, time.Since(start).Round(time.Second), e.Task, e.Task.Local)
			if len(paused) < 2 || attached {
				return false
			}
			attached = true
			checkLaunch(t, launch, wd, paused)
			// No sidecar in any Pod: the Ray containers alone.
			for _, p := range c.pods(t, ns, "ray.io/node-type") {
				if cs := names(p.Spec.Containers); len(cs) != 1 || !strings.HasPrefix(cs[0], "ray-") {
					t.Errorf("Pod %s has containers %v, want its Ray container alone", p.Name, cs)
				}
			}
			// Both tasks are paused: attach to both at once, from the host.
			var wg sync.WaitGroup
			for _, fn := range []string{"on_head", "on_worker"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a := hostAttach(t, dir, proxy, wd, fn)
					mu.Lock()
					reports[fn] = a
					mu.Unlock()
				}()
			}
			wg.Wait()
		}
		return false
	}, "-f", "job.yaml", "--kubeconfig", kc, "--local", "--local-port", "0", "--working-dir", wd,
		"--write-launch", launch, "--ready-timeout", "4m", "--cleanup", "--logs", "--", entrypoint)
	if r.code != 0 {
		c.dumpPods(t, ns)
		t.Fatalf("imagectl debug --local exited %d, want 0\nstderr: %s", r.code, r.stderr)
	}
	if !attached {
		t.Fatalf("the two tasks were never both paused: %v", paused)
	}
	for fn, pod := range map[string]string{"on_head": "head", "on_worker": "worker"} {
		p := paused[fn]
		if p.NodeType != pod {
			t.Errorf("task %s paused on %s (%s), want the %s Pod", fn, p.Pod, p.NodeType, pod)
		}
		a := reports[fn]
		wantPath := filepath.Join(wd, "tasks.py")
		if !a.OK || a.Attach.Frame.Name != fn || a.Attach.Frame.Path != wantPath || a.Attach.Source.Opened != "path" || !a.Attach.Source.BreakpointVerified {
			t.Errorf("attach to %s: %+v: want a stop in %s at %s (mapped by debugpy to the local working_dir), opened by path, a breakpoint there verified", fn, a, fn, wantPath)
		}
		if s := a.Attach.Stepped; s == nil || s.Name != fn || s.Line != a.Attach.Frame.Line+1 {
			t.Errorf("attach to %s: stepped to %+v, want the next line of %s (%d)", fn, s, fn, a.Attach.Frame.Line+1)
		}
		if a.Attach.Address != p.Local {
			t.Errorf("attach to %s dialled %s, want the session's tunnel %s (the proxy's rewritten address)", fn, a.Attach.Address, p.Local)
		}
	}
	fin := r.find(debug.KindFinished)
	if fin == nil || fin.JobStatus != "SUCCEEDED" {
		t.Fatalf("finished event %+v: want the job SUCCEEDED", fin)
	}
	var logs []string
	for _, e := range r.events {
		if e.Kind == debug.KindLog {
			logs = append(logs, e.Message)
		}
	}
	for _, want := range []string{"RESULT 49", "RESULT 9"} {
		if !strings.Contains(strings.Join(logs, "\n"), want) {
			t.Errorf("--logs printed %q, want a line with %q", logs, want)
		}
	}
	want := []string{"applied", "ready", "submitted", "paused", "resumed", "finished", "cleanup"}
	if got := withoutKinds(r.kinds(), "log", "waiting", "warning"); strings.Join(withoutKinds(got, "paused", "resumed"), " ") != strings.Join(withoutKinds(want, "paused", "resumed"), " ") || !contains(got, "paused") || !contains(got, "resumed") {
		t.Errorf("events %v, want (waiting, warnings and logs aside) %v", r.kinds(), want)
	}
	for _, e := range r.events {
		if e.Kind == debug.KindWarning {
			t.Errorf("warning: %s", e.Message)
		}
	}
	// The launch.json has only the user's configuration once the tasks
	// resumed.
	checkLaunch(t, launch, wd, nil)
}

// localAttach is the JSON report of imagectl smoke attach.
type localAttach struct {
	OK     bool `json:"ok"`
	Attach struct {
		Address string `json:"address"`
		Frame   struct {
			Name string `json:"name"`
			Path string `json:"path"`
			Line int    `json:"line"`
		} `json:"frame"`
		Source struct {
			Opened             string `json:"opened"`
			BreakpointVerified bool   `json:"breakpointVerified"`
		} `json:"source"`
		Stepped *struct {
			Name string `json:"name"`
			Line int    `json:"line"`
		} `json:"stepped"`
	} `json:"attach"`
}

// hostAttach runs imagectl smoke attach on the host against the session's
// proxy for the task fn, with the local working directory as localRoot.
func hostAttach(t *testing.T, dir, proxy, wd, fn string) localAttach {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, stderr, err := run(ctx, dir, nil, nil, imagectlBin(t), "smoke", "attach", "--dashboard", proxy, "--local-root", wd,
		"--task", fn, "--expect-function", fn, "--hold", "6s", "--step", "--pause-timeout", "60s", "--output", "json")
	var a localAttach
	if jerr := json.Unmarshal([]byte(out), &a); jerr != nil {
		t.Errorf("smoke attach --task %s: %v; its report is not JSON (%v):\n%s\n%s", fn, err, jerr, out, stderr)
		return a
	}
	if err != nil {
		t.Errorf("smoke attach --task %s: %v\n%s\n%s", fn, err, out, stderr)
	}
	t.Logf("host attach %s: %s", fn, oneLineJSON(out))
	return a
}

func oneLineJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// checkLaunch checks the launch.json --write-launch keeps: the user's own
// configuration, then one debugpy attach per paused task at its tunnel,
// its pathMappings from the worker's cwd to the local working directory.
func checkLaunch(t *testing.T, path, wd string, paused map[string]*debug.PausedTask) {
	t.Helper()
	var doc struct {
		Configurations []struct {
			Name    string `json:"name"`
			Type    string `json:"type"`
			Request string `json:"request"`
			Connect struct {
				Host string
				Port int
			}
			PathMappings []struct{ LocalRoot, RemoteRoot string }
		} `json:"configurations"`
	}
	if err := json.Unmarshal(readFile(t, path), &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(doc.Configurations) != 1+len(paused) || doc.Configurations[0].Name != "mine" {
		t.Errorf("%s: %d configurations (%+v), want the user's \"mine\" and one per paused task (%d)", path, len(doc.Configurations), doc.Configurations, len(paused))
		return
	}
	for _, p := range paused {
		found := false
		for _, cf := range doc.Configurations[1:] {
			if fmt.Sprintf("%s:%d", cf.Connect.Host, cf.Connect.Port) == p.Local {
				found = true
				if cf.Type != "debugpy" || cf.Request != "attach" || len(cf.PathMappings) == 0 || cf.PathMappings[0].LocalRoot != wd || cf.PathMappings[0].RemoteRoot != "." || !strings.HasPrefix(cf.Name, debug.LaunchPrefix) {
					t.Errorf("%s: configuration %+v: want a debugpy attach mapping \".\" to %s", path, cf, wd)
				}
			}
		}
		if !found {
			t.Errorf("%s: no configuration attaches to %s (task %s)", path, p.Local, p.Name)
		}
	}
}

// TestDebugLocalInterruptOnNode: Ctrl-C while a client holds a tunnel to
// a task paused on the worker Pod. debug exits 130; its proxy and tunnel
// no longer listen; and no relay is left running in any Pod (the exec's
// end ends it), so the paused task can be attached again.
func TestDebugLocalInterruptOnNode(t *testing.T) {
	ls := newLocalSession(t, "dbg-i")
	c, dir, ns, kc, wd := ls.c, ls.dir, ls.ns, ls.kc, ls.wd

	var proxy, tunnel string
	var held net.Conn
	r := imagectlDebug(t, dir, func(e debug.Event) bool {
		switch e.Kind {
		case debug.KindReady:
			proxy = e.DashboardURL
		case debug.KindPaused:
			if e.Task == nil || e.Task.Local == "" {
				t.Errorf("paused event %+v: want a local address", e)
				return true
			}
			tunnel = e.Task.Local
			// A client on the tunnel: a relay runs in the worker Pod.
			conn, err := net.DialTimeout("tcp", tunnel, 10*time.Second)
			if err != nil {
				t.Errorf("dialling the tunnel %s: %v", tunnel, err)
				return true
			}
			held = conn
			pod := e.Task.Pod
			c.waitFor(t, 60*time.Second, "the relay in Pod "+pod, func() (bool, error) {
				return len(relays(t, c, ns, pod)) > 0, nil
			})
			return true
		}
		return false
	}, "-f", "job.yaml", "--kubeconfig", kc, "--local", "--local-port", "0", "--working-dir", wd, "--ready-timeout", "4m",
		"--", "python3 driver.py tasks on_worker 8 worker_slot=1")
	if held != nil {
		defer held.Close()
	}
	if r.code != 130 {
		c.dumpPods(t, ns)
		t.Fatalf("imagectl debug exited %d after Ctrl-C, want 130\nstderr: %s", r.code, r.stderr)
	}
	if tunnel == "" {
		t.Fatal("no task was reported paused")
	}
	for _, addr := range []string{strings.TrimPrefix(proxy, "http://"), tunnel} {
		if conn, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
			conn.Close()
			t.Errorf("%s still accepts connections after imagectl debug exited", addr)
		}
	}
	// What debugpy sent before may still be unread: the connection must
	// end (EOF or a reset), not time out.
	held.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, held); err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		t.Error("the held connection is still open 10s after imagectl debug exited")
	}
	for _, p := range c.pods(t, ns, "ray.io/node-type") {
		c.waitFor(t, 30*time.Second, "no relay left in Pod "+p.Name, func() (bool, error) {
			return len(relays(t, c, ns, p.Name)) == 0, nil
		})
	}
}

// relays lists the PIDs of the tunnel relays running in a Pod's Ray
// container (their command line holds the relay's socket.create_connection).
func relays(t *testing.T, c *cluster, ns, pod string) []string {
	t.Helper()
	out, _ := c.kubectl(t, nil, "exec", "-n", ns, pod, "--", "sh", "-c", `for f in /proc/[0-9]*/cmdline; do if grep -q "create_connectio[n]" "$f" 2>/dev/null; then p=${f#/proc/}; echo "${p%/cmdline}"; fi; done`)
	return strings.Fields(out) // the pattern's brackets keep this shell out
}

// TestDebugLocalWorkerPodGoneOnNode: a task is paused on the worker Pod,
// then the Pod is deleted. A client on the task's tunnel is not left
// hanging (the relay's exec fails and the connection closes), and the
// session names the Pod in a warning; Ctrl-C then ends it.
func TestDebugLocalWorkerPodGoneOnNode(t *testing.T) {
	ls := newLocalSession(t, "dbg-g")
	c, dir, ns, kc, wd := ls.c, ls.dir, ls.ns, ls.kc, ls.wd

	var pod string
	var closedAfter time.Duration
	deleted := false
	r := imagectlDebug(t, dir, func(e debug.Event) bool {
		switch {
		case e.Kind == debug.KindPaused && !deleted:
			if e.Task == nil || e.Task.Local == "" || e.Task.NodeType != "worker" {
				t.Errorf("paused event %+v: want a task on the worker Pod with a local address", e)
				return true
			}
			pod = e.Task.Pod
			c.must(t, nil, "delete", "pod", "-n", ns, pod, "--grace-period=0", "--force", "--wait=true")
			deleted = true
			start := time.Now()
			conn, err := net.DialTimeout("tcp", e.Task.Local, 10*time.Second)
			if err != nil {
				t.Errorf("dialling the tunnel %s: %v", e.Task.Local, err)
				return true
			}
			defer conn.Close()
			conn.SetReadDeadline(time.Now().Add(60 * time.Second))
			if _, err := io.Copy(io.Discard, conn); errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("a client on the tunnel of the deleted Pod %s still hangs after 60s", pod)
			}
			closedAfter = time.Since(start)
		case e.Kind == debug.KindWarning && deleted:
			t.Logf("warning: %s", e.Message)
			return strings.Contains(e.Message, "Pod "+pod)
		}
		return false
	}, "-f", "job.yaml", "--kubeconfig", kc, "--local", "--local-port", "0", "--working-dir", wd, "--ready-timeout", "4m",
		"--", "python3 driver.py tasks on_worker 8 worker_slot=1")
	if !deleted {
		c.dumpPods(t, ns)
		t.Fatalf("no task was reported paused on the worker Pod (exit %d)\nstderr: %s", r.code, r.stderr)
	}
	t.Logf("the client's connection to the deleted Pod's tunnel closed after %s", closedAfter.Round(time.Millisecond))
	var named bool
	for _, e := range r.events {
		if e.Kind == debug.KindWarning && strings.Contains(e.Message, "Pod "+pod) && strings.Contains(e.Message, "not found") {
			named = true
		}
	}
	if !named {
		t.Errorf("no warning names the deleted Pod %s as not found: events %v", pod, r.kinds())
	}
	// Ctrl-C follows the warning, but the job may end first: its task was
	// on the deleted Pod, so the driver fails, and a session that sees the
	// job FAILED before it handles the signal exits 8 (ExitJobFailed).
	// Either way it ends, and says why.
	switch f := r.find(debug.KindFinished); {
	case r.code == 130:
	case r.code == 8 && f != nil && f.JobStatus == "FAILED":
		t.Logf("the job ended FAILED (its task's Pod deleted) before the session handled Ctrl-C: exit 8")
	default:
		t.Errorf("exit %d after Ctrl-C, want 130 (or 8 with the job FAILED first)\nstderr: %s", r.code, r.stderr)
	}
}

// cutter is a TCP proxy of the test's own in front of the API server: the
// session's kubeconfig points at it, so the test can drop every
// connection and refuse new ones for a while, as an API server restart
// does (TLS passes through: the server's certificate names 127.0.0.1).
type cutter struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]bool
	refuse time.Time
}

func newCutter(t *testing.T, target string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); c.cut(0) })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			refused := time.Now().Before(c.refuse)
			c.mu.Unlock()
			if refused {
				in.Close()
				continue
			}
			out, err := net.DialTimeout("tcp", target, 10*time.Second)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns[in], c.conns[out] = true, true
			c.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return c
}

// cut closes every open connection and refuses new ones for d.
func (c *cutter) cut(d time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refuse = time.Now().Add(d)
	n := len(c.conns)
	for conn := range c.conns {
		conn.Close()
	}
	c.conns = map[net.Conn]bool{}
	return n
}

// TestDebugLocalAPIServerLostOnNode: while a task is paused, every
// connection of the session to the API server is dropped and new ones are
// refused for 10 s, as an API server restart does. The session brings the
// dashboard's port-forward back on the same local port (saying so), the
// proxy's address stays good, an attach from the host through it then
// succeeds (a new tunnel connection is a new exec), and the job ends.
func TestDebugLocalAPIServerLostOnNode(t *testing.T) {
	ls := newLocalSession(t, "dbg-a")
	c, dir, ns, kc, wd := ls.c, ls.dir, ls.ns, ls.kc, ls.wd
	config := func(args ...string) string {
		out, stderr, err := run(context.Background(), dir, nil, nil, "kubectl", append([]string{"--kubeconfig", kc, "config"}, args...)...)
		if err != nil {
			t.Fatalf("kubectl config %v: %v\n%s", args, err, stderr)
		}
		return strings.TrimSpace(out)
	}
	server := config("view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
	cut := newCutter(t, strings.TrimPrefix(server, "https://"))
	// The server's address, and nothing else of the kubeconfig, changes.
	writeFile(t, kc, replaceAll(t, readFile(t, kc), "server: "+server+"\n", "server: https://"+cut.ln.Addr().String()+"\n", 1))

	var proxy string
	var back bool
	var a localAttach
	r := imagectlDebug(t, dir, func(e debug.Event) bool {
		switch {
		case e.Kind == debug.KindReady:
			proxy = e.DashboardURL
		case e.Kind == debug.KindPaused && proxy != "" && a.Attach.Address == "" && !back:
			dropped := cut.cut(10 * time.Second)
			t.Logf("dropped %d connections to the API server; refusing new ones for 10s", dropped)
		case e.Kind == debug.KindWarning:
			t.Logf("warning: %s", e.Message)
			if strings.Contains(e.Message, "is back on") && !back {
				back = true
				a = hostAttach(t, dir, proxy, wd, "on_worker")
			}
		}
		return false
	}, "-f", "job.yaml", "--kubeconfig", kc, "--local", "--local-port", "0", "--working-dir", wd, "--ready-timeout", "4m", "--cleanup",
		"--", "python3 driver.py tasks on_worker 8 worker_slot=1")
	if !back {
		c.dumpPods(t, ns)
		t.Fatalf("the session never said its port-forward was back (exit %d)\nstderr: %s", r.code, r.stderr)
	}
	if !a.OK || a.Attach.Frame.Name != "on_worker" || a.Attach.Source.Opened != "path" {
		t.Errorf("the attach after the API server came back: %+v", a)
	}
	if r.code != 0 {
		t.Errorf("exit %d, want 0 (the job succeeds)\nstderr: %s", r.code, r.stderr)
	}
	if fin := r.find(debug.KindFinished); fin == nil || fin.JobStatus != "SUCCEEDED" {
		t.Errorf("finished event %+v: want the job SUCCEEDED", fin)
	}
}
