package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/debug/dashboard/dashboardtest"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/rayjobs"
	"github.com/imagectl/imagectl/smoke/probe"
)

// shellWords is what /bin/sh makes of flags, as the Ray container's
// `bash -lc "ulimit …; ray start FLAGS"` passes them to ray.
func shellWords(t *testing.T, flags string) []string {
	t.Helper()
	out, err := exec.Command("/bin/sh", "-c", "set -- "+flags+`; printf '%s\0' "$@"`).Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestParseStartAsKubeRayWritesIt reads `ray start`'s flags as KubeRay
// v1.3.0 and v1.5.0 write them for a worker group (convertParamMap:
// " --key=value " for each rayStartParams entry in key order, --address
// and --block added, num-cpus and memory from the container's limits) and
// the shell passes them on: rayStartParams.resources is pasted as written,
// so it needs its own quotes.
func TestParseStartAsKubeRayWritesIt(t *testing.T) {
	const kuberay = ` --address=dbg-f-abcde-head-svc.ns1.svc.cluster.local:6379  --block  --dashboard-agent-listen-port=52365  --memory=3221225472  --metrics-export-port=8080  --num-cpus=1 `
	tests := []struct {
		name, resources string // rayStartParams.resources as the YAML's value ("" none)
		want            map[string]float64
		wantErr         string
	}{
		{name: "KubeRay's documented quoting", resources: `"{\"worker_slot\": 1}"`, want: map[string]float64{"CPU": 1, "worker_slot": 1}},
		{name: "single quotes (KubeRay's own, for accelerators)", resources: `'{"worker_slot":2,"x":0.5}'`, want: map[string]float64{"CPU": 1, "worker_slot": 2, "x": 0.5}},
		{name: "no resources", want: map[string]float64{"CPU": 1}},
		{name: "unquoted: the shell splits it", resources: `{"worker_slot": 1}`, wantErr: `--resources={worker_slot:: want a JSON object`},
		{name: "CPU in resources", resources: `'{"CPU": 2}'`, wantErr: "CPU has a flag of its own"},
		{name: "a negative amount", resources: `'{"w": -1}'`, wantErr: `"w" is -1; want a non-negative number`},
		{name: "not a number", resources: `'{"w": "1"}'`, wantErr: `"w" is 1; want a non-negative number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			flags := kuberay
			if tc.resources != "" {
				flags += " --resources=" + tc.resources + " "
			}
			o, err := parseStart(shellWords(t, flags))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.head || o.address != "dbg-f-abcde-head-svc.ns1.svc.cluster.local:6379" {
				t.Errorf("head %v, address %q", o.head, o.address)
			}
			if diff := cmp.Diff(tc.want, o.resources); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := parseStart([]string{"--block", "--num-cpus=1"}); err == nil || !strings.Contains(err.Error(), "a worker node needs the head's GCS address") {
		t.Errorf("a worker without --address: %v", err)
	}
	if o, err := parseStart(shellWords(t, ` --head  --block  --dashboard-host=0.0.0.0  --num-cpus=0 `)); err != nil || !o.head || o.resources["CPU"] != 0 {
		t.Errorf("the head: %+v, %v", o, err)
	}
}

// testCluster is a head (dashboard and GCS port on loopback, CPU 1) whose
// tasks wait at most wait for a node.
type testCluster struct {
	h   *head
	d   *dashboardtest.Server
	c   *rayjobs.Client
	gcs *httptest.Server
}

func newTestCluster(t *testing.T, wait time.Duration) *testCluster {
	t.Helper()
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := dashboardtest.New()
	t.Cleanup(d.Close)
	environ := append(os.Environ(), "PATH=/usr/bin:/bin:"+os.Getenv("PATH"))
	h, err := startHead(d, t.TempDir(), "127.0.0.1", gl.Addr().String(), map[string]float64{"CPU": 1}, environ)
	if err != nil {
		t.Fatal(err)
	}
	h.python = systemPython
	h.sched.wait = wait
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(h.worker)) })
	gcs := httptest.NewUnstartedServer(h.gcsHandler())
	gcs.Listener.Close()
	gcs.Listener = gl
	gcs.Start()
	t.Cleanup(gcs.Close)
	c, err := rayjobs.New(d.URL, rayjobs.WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	return &testCluster{h: h, d: d, c: c, gcs: gcs}
}

// joinWorker starts a worker node on ip (a loopback address of its own)
// with resources; its session directory is below its own root, at the path
// the head names.
func (tc *testCluster) joinWorker(t *testing.T, ip string, resources map[string]float64) *workerNode {
	t.Helper()
	w := &workerNode{gcs: tc.gcs.Listener.Addr().String(), resources: resources, fsRoot: t.TempDir()}
	w.ip, w.nodeID, w.python, w.environ = ip, hexID(28), systemPython, append(os.Environ(), "PATH=/usr/bin:/bin:"+os.Getenv("PATH"))
	w.fetch = w.fetchFromHead
	rl, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s (a loopback address besides 127.0.0.1): %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(w.rayletHandler())
	srv.Listener.Close()
	srv.Listener = rl
	srv.Start()
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.register(ctx, rl.Addr().String(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(w.worker)) })
	return w
}

func driverFiles(t *testing.T, extra map[string]string) string {
	t.Helper()
	driver, err := os.ReadFile("driver.py")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"sample_code.py": string(sampleCode), "driver.py": string(driver)}
	for k, v := range extra {
		files[k] = v
	}
	return writeFiles(t, files)
}

// TestTaskRunsOnTheWorkerWithItsResource: a job's driver asks for a task
// with a custom resource before any node has it; the head waits, a worker
// node with the resource joins, and the task runs there: the package
// fetched from the head and unpacked in the worker's session directory at
// the path the head's has, paused at breakpoint() under real debugpy on the
// worker's IP, listed in the head's State API with the worker's IP and node
// ID; the attach probe stops in f with its source opened, and the job
// succeeds with the task's result in its logs.
func TestTaskRunsOnTheWorkerWithItsResource(t *testing.T) {
	testutil.RequireDebugpy(t, systemPython)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tc := newTestCluster(t, time.Minute)
	wd := driverFiles(t, nil)
	id, err := tc.c.Submit(ctx, rayjobs.SubmitRequest{
		Entrypoint: "python3 driver.py sample_code f 7 worker_slot=1",
		RuntimeEnv: map[string]any{"working_dir": wd},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The driver asks before the worker node joins.
	deadline := time.Now().Add(30 * time.Second)
	for tc.waiting() == 0 {
		if time.Now().After(deadline) {
			logs, _ := tc.c.Logs(ctx, id)
			t.Fatalf("the driver never asked for its task; logs:\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	w := tc.joinWorker(t, "127.0.0.2", map[string]float64{"CPU": 1, "worker_slot": 1})

	rep, err := probe.Run(ctx, tc.d.URL, probe.WithTimeout(60*time.Second), probe.WithPollInterval(100*time.Millisecond),
		probe.WithExpect(probe.Expect{Function: "f", File: "sample_code.py"}))
	if err != nil {
		logs, _ := tc.c.Logs(ctx, id)
		t.Fatalf("attach: %v\nreport: %+v\njob logs:\n%s", err, rep, logs)
	}
	if len(rep.Breakpoints) != 1 || rep.Breakpoints[0].TaskName != "f" || rep.Breakpoints[0].JobID != "03000000" || rep.Breakpoints[0].IP != "127.0.0.2" {
		t.Errorf("breakpoints %+v; want task f of job 03000000 paused on the worker's 127.0.0.2", rep.Breakpoints)
	}
	j := waitJob(t, tc.c, id, 60*time.Second)
	logs, _ := tc.c.Logs(ctx, id)
	if j.Status != rayjobs.StatusSucceeded || !strings.Contains(logs, "RESULT 49\n") || !strings.Contains(logs, "Ray debugger is listening on 127.0.0.2:") {
		t.Fatalf("job %s %q\nlogs:\n%s", j.Status, j.Message, logs)
	}
	pkg, err := rayjobs.Package(ctx, wd, nil)
	if err != nil {
		t.Fatal(err)
	}
	rel := filepath.Join("runtime_resources", "working_dir_files", "_ray_pkg_"+pkg.Hash, "sample_code.py")
	workerFile := filepath.Join(w.session, rel)
	if want := filepath.Join(w.fsRoot, tc.h.session); w.session != want {
		t.Errorf("worker session %s, want the head's %s below the worker's root", w.session, want)
	}
	if got, err := os.ReadFile(workerFile); err != nil || !bytes.Equal(got, sampleCode) {
		t.Errorf("the worker's copy of sample_code.py: %v", err)
	}
	if rep.Attach == nil || rep.Attach.Frame == nil || rep.Attach.Frame.Path != workerFile {
		t.Errorf("attach %+v: want the frame in %s", rep.Attach, workerFile)
	}
	// The rows: the driver a DRIVER worker on the head, the task's worker
	// on the worker node, dead now, its task FINISHED.
	ws, ts := tc.rows()
	var kinds []string
	for _, x := range ws {
		kinds = append(kinds, x.WorkerType+"@"+x.IP)
		if x.WorkerType == "WORKER" && (x.NodeID != w.nodeID || x.IsAlive) {
			t.Errorf("task worker row %+v: want node %s, not alive", x, w.nodeID)
		}
	}
	if diff := cmp.Diff([]string{"DRIVER@127.0.0.1", "WORKER@127.0.0.2"}, kinds); diff != "" {
		t.Errorf("workers (-want +got):\n%s", diff)
	}
	if len(ts) != 1 || ts[0].Name != "f" || ts[0].State != "FINISHED" || ts[0].NodeID != w.nodeID || ts[0].JobID != "03000000" {
		t.Errorf("tasks %+v: want f FINISHED on the worker node, job 03000000", ts)
	}
}

func (tc *testCluster) waiting() int {
	tc.h.sched.mu.Lock()
	defer tc.h.sched.mu.Unlock()
	return tc.h.sched.waiting
}

func (tc *testCluster) rows() ([]dashboardtest.Worker, []dashboardtest.Task) {
	tc.h.rows.mu.Lock()
	defer tc.h.rows.mu.Unlock()
	var ws []dashboardtest.Worker
	var ts []dashboardtest.Task
	for _, id := range tc.h.rows.order {
		r := tc.h.rows.rows[id]
		ws = append(ws, r.w)
		if !r.driver {
			ts = append(ts, r.t)
		}
	}
	return ws, ts
}

// TestTaskGetsTheJobsRuntimeEnv: on the worker node the task's cwd is its
// own copy of the working_dir, first on PYTHONPATH, with the job's
// env_vars and RAY_NODE_IP the worker's; a task with no resources runs on
// the head.
func TestTaskGetsTheJobsRuntimeEnv(t *testing.T) {
	testutil.RequireDebugpy(t, systemPython)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tc := newTestCluster(t, 10*time.Second)
	w := tc.joinWorker(t, "127.0.0.3", map[string]float64{"CPU": 1, "worker_slot": 1})
	wd := driverFiles(t, map[string]string{"env_probe.py": `import os


def show(x):
    return "|".join([os.getcwd(), os.environ["PYTHONPATH"].split(":")[0], os.environ["GREETING"], os.environ["RAY_NODE_IP"]])
`})
	pkg, err := rayjobs.Package(ctx, wd, nil)
	if err != nil {
		t.Fatal(err)
	}
	rel := filepath.Join("runtime_resources", "working_dir_files", "_ray_pkg_"+pkg.Hash)
	for _, c := range []struct {
		resources, want string
	}{
		{"worker_slot=1", filepath.Join(w.session, rel) + "|" + filepath.Join(w.session, rel) + "|hello|127.0.0.3"},
		{"", filepath.Join(tc.h.session, rel) + "|" + filepath.Join(tc.h.session, rel) + "|hello|127.0.0.1"},
	} {
		id, err := tc.c.Submit(ctx, rayjobs.SubmitRequest{
			Entrypoint: "python3 driver.py env_probe show 0 " + c.resources,
			RuntimeEnv: map[string]any{"working_dir": wd, "env_vars": map[string]any{"GREETING": "hello"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		j := waitJob(t, tc.c, id, 60*time.Second)
		logs, _ := tc.c.Logs(ctx, id)
		if j.Status != rayjobs.StatusSucceeded || !strings.Contains(logs, "RESULT "+c.want+"\n") {
			t.Errorf("task with %q: job %s; want RESULT %s in the logs:\n%s", c.resources, j.Status, c.want, logs)
		}
	}
}

// TestTaskRefusals: a task no node can run fails its driver with the
// head's reason, and the protocol refuses what it does not expect, naming
// the field.
func TestTaskRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tc := newTestCluster(t, 300*time.Millisecond)
	tc.joinWorker(t, "127.0.0.4", map[string]float64{"CPU": 1, "worker_slot": 1})

	// A resource no node has: the driver fails with the head's answer.
	wd := driverFiles(t, nil)
	id, err := tc.c.Submit(ctx, rayjobs.SubmitRequest{Entrypoint: "python3 driver.py sample_code f 7 gpu_slot=1", RuntimeEnv: map[string]any{"working_dir": wd}})
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, tc.c, id, 30*time.Second)
	logs, _ := tc.c.Logs(ctx, id)
	want := "503 task request: no node for a task that needs {gpu_slot: 1} after 300ms: no node has them (nodes: head 127.0.0.1 (" + tc.h.nodeID[:8] + ") {CPU: 1}; worker 127.0.0.4 ("
	if j.Status != rayjobs.StatusFailed || !strings.Contains(logs, want) {
		t.Errorf("job %s; want FAILED with %q in the logs:\n%s", j.Status, want, logs)
	}

	// A running job to ask for.
	running, err := tc.c.Submit(ctx, rayjobs.SubmitRequest{Entrypoint: "sleep 30"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.c.Stop(context.Background(), running) })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if j, _ := tc.d.Job(running); j.Status == dashboardtest.JobRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job never ran")
		}
	}
	gcs := tc.gcs.URL
	tests := []struct {
		name, method, path, body string
		code                     int
		want                     string
	}{
		{"unknown field", "POST", "/standin/v1/tasks", `{"submission_id":"x","args":["m","f","1"],"cpus":1}`, 400, `unknown field "cpus"`},
		{"args", "POST", "/standin/v1/tasks", `{"submission_id":"` + running + `","args":["m","f"]}`, 400, "want rayworker.py's MODULE FUNCTION ARG"},
		{"negative resource", "POST", "/standin/v1/tasks", `{"submission_id":"` + running + `","args":["m","f","1"],"resources":{"w":-1}}`, 400, `resources["w"] = -1`},
		{"unknown job", "POST", "/standin/v1/tasks", `{"submission_id":"raysubmit_nope","args":["m","f","1"]}`, 404, `no job with submission_id "raysubmit_nope"`},
		{"finished job", "POST", "/standin/v1/tasks", `{"submission_id":"` + id + `","args":["m","f","1"]}`, 409, "is FAILED, not RUNNING"},
		{"registration: node_id", "POST", "/standin/v1/nodes", `{"node_id":"abc","node_ip":"127.0.0.9","raylet_address":"127.0.0.9:1"}`, 400, `node_id "abc": want 56 hex digits`},
		{"registration: raylet_address", "POST", "/standin/v1/nodes", `{"node_id":"` + strings.Repeat("a", 56) + `","node_ip":"127.0.0.9","raylet_address":"10.0.0.1:1"}`, 400, `raylet_address "10.0.0.1:1": want node_ip:port`},
		{"registration: again", "POST", "/standin/v1/nodes", `{"node_id":"` + tc.h.nodeID + `","node_ip":"127.0.0.9","raylet_address":"127.0.0.9:1"}`, 409, "is already registered"},
		{"package never uploaded", "GET", "/standin/v1/packages/_ray_pkg_0123456789abcdef.zip", "", 404, "Failed to download runtime_env file package gcs://_ray_pkg_0123456789abcdef.zip from the GCS to the Ray worker node"},
	}
	for _, c := range tests {
		req, err := http.NewRequestWithContext(ctx, c.method, gcs+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %q, want %d with %q", c.name, resp.StatusCode, b, c.code, c.want)
		}
	}

	// A bare TCP connection, as `ray health-check` makes, is accepted.
	if err := healthCheck([]string{"--address", tc.gcs.Listener.Addr().String()}); err != nil {
		t.Errorf("health-check: %v", err)
	}
}

// TestWorkerNodeRefusesAMissingPackage: a task whose working_dir the head
// does not hold ends with Ray's runtime_env error, and nothing is left in
// the worker's runtime_resources.
func TestWorkerNodeRefusesAMissingPackage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tc := newTestCluster(t, time.Second)
	w := tc.joinWorker(t, "127.0.0.5", map[string]float64{"worker_slot": 1})
	var events []taskEvent
	n := &clusterNode{id: w.nodeID, ip: w.ip, raylet: rayletOf(t, tc, w.nodeID)}
	_, err := runRemote(ctx, n, taskSpec{JobID: "03000000", Args: []string{"sample_code", "f", "7"}, WorkingDir: "gcs://_ray_pkg_0123456789abcdef.zip"},
		func(ev taskEvent) { events = append(events, ev) })
	want := "worker node 127.0.0.5: runtime_env setup failed: Failed to set up runtime environment.\nFailed to download runtime_env file package gcs://_ray_pkg_0123456789abcdef.zip from the GCS to the Ray worker node"
	if err == nil || err.Error() != want {
		t.Errorf("err %v, want %q", err, want)
	}
	if len(events) != 0 {
		t.Errorf("events %+v before the error, want none", events)
	}
	entries, _ := os.ReadDir(filepath.Join(w.session, "runtime_resources", "working_dir_files"))
	if len(entries) != 0 {
		t.Errorf("left in working_dir_files: %v", entries)
	}
	// And a spec the node cannot run is refused before anything starts.
	body, _ := json.Marshal(map[string]any{"job_id": "03000000", "args": []string{"x"}})
	resp, err := http.Post("http://"+n.raylet+"/standin/v1/run", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "args MODULE FUNCTION ARG") {
		t.Errorf("a bad spec: %d %q", resp.StatusCode, b)
	}
}

func rayletOf(t *testing.T, tc *testCluster, nodeID string) string {
	t.Helper()
	tc.h.sched.mu.Lock()
	defer tc.h.sched.mu.Unlock()
	for _, n := range tc.h.sched.nodes {
		if n.id == nodeID {
			return n.raylet
		}
	}
	t.Fatalf("node %s did not register", nodeID)
	return ""
}
