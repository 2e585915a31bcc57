package main

// The stand-in's cluster: worker nodes that join the head over its GCS
// address and run the tasks a job's driver asks for, on a node that has
// the resources the task needs. Ray does this with gRPC between the GCS,
// the raylets and the core workers; the stand-in speaks a small HTTP
// protocol of its own on the same ports (everything under /standin/v1/,
// JSON bodies, task output as one JSON object a line):
//
//   - on the head's GCS port (6379; a TCP connect that sends nothing, as
//     `ray health-check` makes, is still accepted):
//
//     POST /standin/v1/nodes {"node_id", "node_ip", "raylet_address",
//     "resources"}: a worker node registers (`ray start --address=…`);
//     answers {"session_name", "temp_dir"}, which a Ray worker node reads
//     from the GCS too, so a job's packages land at the same paths on
//     every node.
//
//     GET /standin/v1/packages/_ray_pkg_<hash>.zip: the package a job
//     uploaded (gcs://_ray_pkg_<hash>.zip), which a worker node downloads
//     from the GCS before it runs the job's task; 404 with Ray's message
//     when it was never uploaded.
//
//     POST /standin/v1/tasks {"submission_id", "args", "resources"}: a
//     job's driver (RAY_ADDRESS is this address in its environment, and
//     RAY_JOB_CONFIG_JSON_ENV_VAR names its submission ID, as Ray's
//     JobSupervisor sets them) asks for one task: rayworker.py's
//     MODULE FUNCTION ARG, on a node whose resources (--num-cpus as "CPU",
//     --resources) hold the request. The head waits for such a node as Ray
//     does, but at most taskWait, then answers 503 naming the request and
//     every node's resources. Once scheduled the answer streams
//     {"node_id", "node_ip"}, {"pid"}, {"line"}… and {"exit"}, or
//     {"error"} when the task could not run; the task runs under the job's
//     runtime_env (working_dir, py_modules, env_vars) and its worker and
//     task rows appear in the head's State API as for a task on the head.
//
//   - on a worker node's raylet address (a port of its own, given when it
//     registers): POST /standin/v1/run {task spec}: the head hands it a
//     task; it fetches the job's packages from the head, unpacks them in
//     its own session directory, runs rayworker.py there with RAY_NODE_IP
//     the node's IP, and streams {"pid"}, {"line"}… {"exit"} or {"error"}.
//
// A driver's request ends its task when the driver goes away (the head
// cancels the run on the node, which kills the worker's process group), as
// Ray kills a job's workers when its driver exits.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/imagectl/imagectl/debug/dashboard/dashboardtest"
	"github.com/imagectl/imagectl/smoke/probe/probetest"
)

// taskWait is how long the head waits for a node with a task's resources
// before it refuses the task (Ray waits without end, warning that the task
// is infeasible).
const taskWait = 2 * time.Minute

// rayJobConfigEnv is the variable Ray's JobSupervisor sets in a driver's
// environment (runtime_env/constants.py RAY_JOB_CONFIG_JSON_ENV_VAR):
// {"runtime_env": …, "metadata": {…, "job_submission_id": ID}}.
const rayJobConfigEnv = "RAY_JOB_CONFIG_JSON_ENV_VAR"

// parseResources reads `ray start --resources=JSON` (after the shell that
// runs KubeRay's command removed its quotes): a JSON object of resource
// names to non-negative numbers. Ray refuses CPU and GPU there (they have
// flags of their own).
func parseResources(s string) (map[string]float64, error) {
	var raw map[string]any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil || raw == nil || d.More() {
		return nil, fmt.Errorf("--resources=%s: want a JSON object such as {\"worker_slot\": 1} (KubeRay passes rayStartParams.resources as written, so it needs its own quotes: '\"{\\\"worker_slot\\\": 1}\"')", s)
	}
	out := map[string]float64{}
	for k, v := range raw {
		n, ok := v.(json.Number)
		f, err := n.Float64()
		if !ok || err != nil || f < 0 {
			return nil, fmt.Errorf("--resources=%s: %q is %v; want a non-negative number", s, k, v)
		}
		if k == "CPU" || k == "GPU" {
			return nil, fmt.Errorf("--resources=%s: %s has a flag of its own (--num-cpus, --num-gpus)", s, k)
		}
		out[k] = f
	}
	return out, nil
}

// formatResources is a resource map as sorted name:amount pairs.
func formatResources(r map[string]float64) string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + ": " + strconv.FormatFloat(r[k], 'g', -1, 64))
	}
	b.WriteString("}")
	return b.String()
}

// nodeRuntime is what a node (head or worker) runs tasks with: its session
// directory, rayworker.py, the image's python3, its IP and node ID, the
// environment tasks start from, and where it gets a job's packages.
type nodeRuntime struct {
	session string
	worker  string // rayworker.py
	python  string
	ip      string
	nodeID  string
	environ []string
	fetch   func(ctx context.Context, uri string) ([]byte, error)

	unpackMu sync.Mutex
}

// newSession creates <root>/<name> with its runtime_resources directory and
// the session_latest link, and writes rayworker.py outside it (as Ray's
// default_worker.py lives in the ray package).
func newSession(root, name string) (session, worker string, err error) {
	session = filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Join(session, "runtime_resources"), 0o755); err != nil {
		return "", "", err
	}
	latest := filepath.Join(root, "session_latest")
	os.Remove(latest)
	if err := os.Symlink(session, latest); err != nil {
		return "", "", err
	}
	workerDir, err := os.MkdirTemp("", "imagectl-standin-worker")
	if err != nil {
		return "", "", err
	}
	worker = filepath.Join(workerDir, "rayworker.py")
	if err := os.WriteFile(worker, probetest.RayWorker, 0o644); err != nil {
		return "", "", err
	}
	return session, worker, nil
}

// unpack writes the package uri into <session>/runtime_resources/<kind>/
// and returns the directory; a directory already there is reused, as Ray's
// download_and_unpack_package does.
func (n *nodeRuntime) unpack(ctx context.Context, uri, kind string) (string, error) {
	name, ok := strings.CutPrefix(uri, "gcs://")
	if !ok || !strings.HasSuffix(name, ".zip") || strings.Contains(name, "/") {
		return "", fmt.Errorf("%s: the stand-in unpacks only gcs://<name>.zip packages", uri)
	}
	n.unpackMu.Lock()
	defer n.unpackMu.Unlock()
	dir := filepath.Join(n.session, "runtime_resources", kind, strings.TrimSuffix(name, ".zip"))
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir, nil
	}
	data, err := n.fetch(ctx, uri)
	if err != nil {
		return "", err
	}
	tmp := dir + ".unpacking"
	os.RemoveAll(tmp)
	if err := unzipTo(data, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("unpacking %s into %s: %w", uri, dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return dir, nil
}

// errNoPackage is Ray's message for a package the GCS does not hold
// (packaging.py download_and_unpack_package).
func errNoPackage(uri string) error {
	//lint:ignore ST1005 Ray's own message, which a job's message quotes
	return fmt.Errorf("Failed to download runtime_env file package %s from the GCS to the Ray worker node", uri)
}

// runtimeEnviron is the environment Ray gives a process of a job's
// runtime_env: environ without its PYTHONPATH and without what env_vars
// sets, then env_vars (PYTHONPATH aside), PYTHONPATH = pythonPath, then
// env_vars' PYTHONPATH, then environ's (set_pythonpath_in_context), the
// directory of IMAGECTL_STANDIN_PYTHON first on PATH (KubeRay v1.3's
// `bash -lc` resets PATH to /etc/profile's: see pythonEnv), then extra.
func runtimeEnviron(environ []string, vars map[string]string, pythonPath []string, extra ...string) []string {
	if p := vars["PYTHONPATH"]; p != "" {
		pythonPath = append(pythonPath, p)
	}
	var out []string
	for _, e := range environ {
		k, v, _ := strings.Cut(e, "=")
		if k == "PYTHONPATH" {
			if v != "" {
				pythonPath = append(pythonPath, v)
			}
			continue
		}
		if _, over := vars[k]; over {
			continue
		}
		out = append(out, e)
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != "PYTHONPATH" {
			out = append(out, k+"="+vars[k])
		}
	}
	out = append(out, extra...)
	if py := envValue(environ, pythonEnv); filepath.IsAbs(py) {
		for i, e := range out {
			if p, ok := strings.CutPrefix(e, "PATH="); ok {
				out[i] = "PATH=" + filepath.Dir(py) + string(os.PathListSeparator) + p
			}
		}
	}
	if len(pythonPath) > 0 {
		out = append(out, "PYTHONPATH="+strings.Join(pythonPath, string(os.PathListSeparator)))
	}
	return out
}

// taskSpec is one task as the head hands it to a node: rayworker.py's
// arguments under the job's runtime_env.
type taskSpec struct {
	JobID      string            `json:"job_id"`
	Args       []string          `json:"args"` // MODULE FUNCTION ARG
	WorkingDir string            `json:"working_dir,omitempty"`
	PyModules  []string          `json:"py_modules,omitempty"`
	EnvVars    map[string]string `json:"env_vars,omitempty"`
}

// taskEvent is one line of a task's stream. Exactly one field is set.
type taskEvent struct {
	NodeID string  `json:"node_id,omitempty"`
	NodeIP string  `json:"node_ip,omitempty"`
	PID    int     `json:"pid,omitempty"`
	Line   *string `json:"line,omitempty"`
	Exit   *int    `json:"exit,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// runTask runs spec on this node: the job's packages unpacked (fetched
// first when this node does not hold them), rayworker.py started with the
// working_dir as its cwd, in its own process group (killed when ctx ends),
// its output printed and emitted line by line. It returns the worker's exit
// code, or an error when it could not start.
func (n *nodeRuntime) runTask(ctx context.Context, spec taskSpec, emit func(taskEvent)) (int, error) {
	if len(spec.Args) != 3 {
		return 0, fmt.Errorf("args %q: want rayworker.py's MODULE FUNCTION ARG", spec.Args)
	}
	cwd := n.session
	var pythonPath []string
	if spec.WorkingDir != "" {
		dir, err := n.unpack(ctx, spec.WorkingDir, "working_dir_files")
		if err != nil {
			return 0, fmt.Errorf("runtime_env setup failed: Failed to set up runtime environment.\n%w", err)
		}
		cwd = dir
		pythonPath = append(pythonPath, dir)
	}
	for _, uri := range spec.PyModules {
		dir, err := n.unpack(ctx, uri, "py_modules_files")
		if err != nil {
			return 0, fmt.Errorf("runtime_env setup failed: Failed to set up runtime environment.\n%w", err)
		}
		pythonPath = append(pythonPath, dir)
	}
	cmd := exec.CommandContext(ctx, n.python, append([]string{n.worker}, spec.Args...)...)
	cmd.Dir = cwd
	cmd.Env = runtimeEnviron(n.environ, spec.EnvVars, pythonPath, "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1", "RAY_NODE_IP="+n.ip)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return 0, err
	}
	say("TASK-STARTED", spec.JobID, strings.Join(spec.Args, " "), "PID", cmd.Process.Pid, "CWD", cwd)
	emit(taskEvent{PID: cmd.Process.Pid})
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Println(line)
		emit(taskEvent{Line: &line})
	}
	io.Copy(io.Discard, pr)
	pr.Close()
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		return ee.ExitCode(), nil
	default:
		return 0, err
	}
}

// clusterNode is a node as the head's scheduler knows it.
type clusterNode struct {
	id, ip    string
	raylet    string // host:port of a worker node; "" for the head itself
	resources map[string]float64
	used      map[string]float64
}

func (n *clusterNode) String() string {
	kind := "worker"
	if n.raylet == "" {
		kind = "head"
	}
	return fmt.Sprintf("%s %s (%s) %s", kind, n.ip, n.id[:8], formatResources(n.resources))
}

// fits reports whether req fits n's resources; free counts what running
// tasks hold.
func (n *clusterNode) fits(req map[string]float64, free bool) bool {
	for k, v := range req {
		have := n.resources[k]
		if free {
			have -= n.used[k]
		}
		if v > have+1e-9 {
			return false
		}
	}
	return true
}

// scheduler places tasks on the nodes that have their resources, as Ray's
// does for a task with explicit resources: the head first (the local
// node), then the worker nodes in the order they joined.
type scheduler struct {
	mu      sync.Mutex
	nodes   []*clusterNode
	changed chan struct{} // closed and replaced on every change
	wait    time.Duration
	waiting int // requests waiting for a node
}

func newScheduler(head *clusterNode, wait time.Duration) *scheduler {
	return &scheduler{nodes: []*clusterNode{head}, changed: make(chan struct{}), wait: wait}
}

func (s *scheduler) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// add registers a worker node; a node ID registers once.
func (s *scheduler) add(n *clusterNode) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.nodes {
		if o.id == n.id {
			return fmt.Errorf("node %s is already registered (from %s)", n.id, o.ip)
		}
	}
	s.nodes = append(s.nodes, n)
	s.notifyLocked()
	return nil
}

// acquire reserves req on the first node that has it free, waiting at most
// s.wait for one.
func (s *scheduler) acquire(ctx context.Context, req map[string]float64) (*clusterNode, error) {
	timer := time.NewTimer(s.wait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		for _, n := range s.nodes {
			if n.fits(req, true) {
				for k, v := range req {
					n.used[k] += v
				}
				s.mu.Unlock()
				return n, nil
			}
		}
		changed := s.changed
		s.waiting++
		s.mu.Unlock()
		var err error
		select {
		case <-changed:
		case <-ctx.Done():
			err = ctx.Err()
		case <-timer.C:
			err = s.refusal(req)
		}
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
}

// refusal says why req found no node.
func (s *scheduler) refusal(req map[string]float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var nodes []string
	feasible := false
	for _, n := range s.nodes {
		nodes = append(nodes, n.String())
		feasible = feasible || n.fits(req, false)
	}
	why := "no node has them"
	if feasible {
		why = "the nodes that have them are busy"
	}
	return fmt.Errorf("no node for a task that needs %s after %s: %s (nodes: %s)", formatResources(req), s.wait, why, strings.Join(nodes, "; "))
}

func (s *scheduler) release(n *clusterNode, req map[string]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range req {
		n.used[k] -= v
	}
	s.notifyLocked()
}

// registration is POST /standin/v1/nodes's body.
type registration struct {
	NodeID        string             `json:"node_id"`
	NodeIP        string             `json:"node_ip"`
	RayletAddress string             `json:"raylet_address"`
	Resources     map[string]float64 `json:"resources"`
}

// registered is its answer.
type registered struct {
	SessionName string `json:"session_name"`
	TempDir     string `json:"temp_dir"`
}

// taskRequest is POST /standin/v1/tasks's body.
type taskRequest struct {
	SubmissionID string             `json:"submission_id"`
	Args         []string           `json:"args"`
	Resources    map[string]float64 `json:"resources"`
}

// decodeStrict reads one JSON object with only known fields.
func decodeStrict(r io.Reader, v any) error {
	d := json.NewDecoder(io.LimitReader(r, 1<<20))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	say("GCS-REFUSED", code, msg)
	http.Error(w, msg, code)
}

// gcsHandler serves the head's GCS port.
func (h *head) gcsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /standin/v1/nodes", h.registerNode)
	mux.HandleFunc("GET /standin/v1/packages/{name}", h.servePackage)
	mux.HandleFunc("POST /standin/v1/tasks", h.serveTask)
	return mux
}

func (h *head) registerNode(w http.ResponseWriter, r *http.Request) {
	var reg registration
	if err := decodeStrict(r.Body, &reg); err != nil {
		httpError(w, http.StatusBadRequest, "registration: %v", err)
		return
	}
	host, port, err := net.SplitHostPort(reg.RayletAddress)
	switch {
	case len(reg.NodeID) != 56:
		httpError(w, http.StatusBadRequest, "registration: node_id %q: want 56 hex digits (a Ray node ID)", reg.NodeID)
		return
	case net.ParseIP(reg.NodeIP) == nil:
		httpError(w, http.StatusBadRequest, "registration: node_ip %q: want an IP address", reg.NodeIP)
		return
	case err != nil || host != reg.NodeIP || port == "0":
		httpError(w, http.StatusBadRequest, "registration: raylet_address %q: want node_ip:port", reg.RayletAddress)
		return
	}
	for k, v := range reg.Resources {
		if v < 0 || math.IsNaN(v) {
			httpError(w, http.StatusBadRequest, "registration: resources[%q] = %v: want a non-negative number", k, v)
			return
		}
	}
	n := &clusterNode{id: reg.NodeID, ip: reg.NodeIP, raylet: reg.RayletAddress, resources: reg.Resources, used: map[string]float64{}}
	if n.resources == nil {
		n.resources = map[string]float64{}
	}
	if err := h.sched.add(n); err != nil {
		httpError(w, http.StatusConflict, "registration: %v", err)
		return
	}
	say("NODE-JOINED", n.String())
	writeJSON(w, registered{SessionName: filepath.Base(h.session), TempDir: h.root})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (h *head) servePackage(w http.ResponseWriter, r *http.Request) {
	uri := "gcs://" + r.PathValue("name")
	data, ok := h.d.Package(uri)
	if !ok {
		httpError(w, http.StatusNotFound, "%v", errNoPackage(uri))
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Write(data)
}

// jobRuntimeEnv is the part of a job's runtime_env a task runs under.
func jobRuntimeEnv(env map[string]any) (workingDir string, pyModules []string, vars map[string]string, err error) {
	if wd, ok := env["working_dir"]; ok && wd != nil {
		s, ok := wd.(string)
		if !ok {
			return "", nil, nil, fmt.Errorf("runtime_env working_dir is %T, want a URI", wd)
		}
		workingDir = s
	}
	if pm, ok := env["py_modules"].([]any); ok {
		for _, m := range pm {
			s, ok := m.(string)
			if !ok {
				return "", nil, nil, fmt.Errorf("runtime_env py_modules holds %T, want URIs", m)
			}
			pyModules = append(pyModules, s)
		}
	}
	if ev, ok := env["env_vars"].(map[string]any); ok {
		vars = map[string]string{}
		for k, v := range ev {
			s, ok := v.(string)
			if !ok {
				return "", nil, nil, fmt.Errorf("runtime_env env_vars[%q] is %T, want a string", k, v)
			}
			vars[k] = s
		}
	}
	return workingDir, pyModules, vars, nil
}

// serveTask is POST /standin/v1/tasks: schedule, run on the chosen node,
// keep the State API's rows, stream the events back.
func (h *head) serveTask(w http.ResponseWriter, r *http.Request) {
	var req taskRequest
	if err := decodeStrict(r.Body, &req); err != nil {
		httpError(w, http.StatusBadRequest, "task request: %v", err)
		return
	}
	if len(req.Args) != 3 {
		httpError(w, http.StatusBadRequest, "task request: args %q: want rayworker.py's MODULE FUNCTION ARG", req.Args)
		return
	}
	for k, v := range req.Resources {
		if v < 0 || math.IsNaN(v) {
			httpError(w, http.StatusBadRequest, "task request: resources[%q] = %v: want a non-negative number", k, v)
			return
		}
	}
	job, ok := h.d.Job(req.SubmissionID)
	if !ok {
		httpError(w, http.StatusNotFound, "task request: no job with submission_id %q", req.SubmissionID)
		return
	}
	if job.Status != dashboardtest.JobRunning || job.JobID == "" {
		httpError(w, http.StatusConflict, "task request: job %s is %s, not RUNNING", req.SubmissionID, job.Status)
		return
	}
	spec := taskSpec{JobID: job.JobID, Args: req.Args}
	var err error
	if spec.WorkingDir, spec.PyModules, spec.EnvVars, err = jobRuntimeEnv(job.RuntimeEnv); err != nil {
		httpError(w, http.StatusBadRequest, "task request: job %s: %v", req.SubmissionID, err)
		return
	}
	node, err := h.sched.acquire(r.Context(), req.Resources)
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, "task request: %v", err)
		return
	}
	defer h.sched.release(node, req.Resources)
	say("TASK-SCHEDULED", req.SubmissionID, strings.Join(req.Args, " "), "ON", node.String())

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	send := func(ev taskEvent) {
		enc.Encode(ev)
		if fl != nil {
			fl.Flush()
		}
	}
	send(taskEvent{NodeID: node.id, NodeIP: node.ip})
	var rows *taskRows
	emit := func(ev taskEvent) {
		switch {
		case ev.PID != 0 && rows == nil:
			rows = h.rows.newTask(ev.PID, node.ip, node.id, spec.JobID, spec.Args[1])
		case ev.Line != nil && rows != nil:
			rows.line(*ev.Line)
		}
		send(ev)
	}
	var code int
	if node.raylet == "" {
		code, err = h.runTask(r.Context(), spec, emit)
	} else {
		code, err = runRemote(r.Context(), node, spec, emit)
	}
	if rows != nil {
		rows.exit(err != nil || code != 0)
	}
	if err != nil {
		say("TASK-FAILED", req.SubmissionID, err)
		send(taskEvent{Error: err.Error()})
		return
	}
	say("TASK-EXIT", req.SubmissionID, strings.Join(req.Args, " "), code)
	send(taskEvent{Exit: &code})
}

// nodeClient is the head's client to worker nodes and a worker node's to
// the head: every request has its context; connecting and the answer's
// headers are bounded (a task's stream itself may stay quiet for as long as
// a debugger keeps it paused).
var nodeClient = &http.Client{Transport: &http.Transport{
	DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
	ResponseHeaderTimeout: 30 * time.Second,
}}

// runRemote hands spec to a worker node and passes its events on.
func runRemote(ctx context.Context, n *clusterNode, spec taskSpec, emit func(taskEvent)) (int, error) {
	body, err := json.Marshal(spec)
	if err != nil {
		return 0, err
	}
	u := "http://" + n.raylet + "/standin/v1/run"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := nodeClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("worker node %s: %w", n.ip, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("worker node %s: POST %s: %s: %s", n.ip, u, resp.Status, strings.TrimSpace(string(b)))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 2<<20)
	for sc.Scan() {
		var ev taskEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return 0, fmt.Errorf("worker node %s: a line of the task's stream is not an event: %q", n.ip, sc.Text())
		}
		switch {
		case ev.Exit != nil:
			return *ev.Exit, nil
		case ev.Error != "":
			return 0, fmt.Errorf("worker node %s: %s", n.ip, ev.Error)
		}
		emit(ev)
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("worker node %s: the task's stream: %w", n.ip, err)
	}
	return 0, fmt.Errorf("worker node %s: the task's stream ended without its exit", n.ip)
}

// workerNode is a worker node: `ray start --address=HOST:PORT`, no --head.
type workerNode struct {
	nodeRuntime
	gcs       string // HOST:PORT
	resources map[string]float64
	// fsRoot prefixes the session directory the head names (tests run a
	// worker node on the head's machine; "" in a Pod).
	fsRoot string

	mu sync.Mutex
	// joined is closed once register has made the session directory: the
	// head may send a task the moment it has registered the node, before
	// its answer has reached register.
	joined chan struct{}
}

func (w *workerNode) joinedChan() chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.joined == nil {
		w.joined = make(chan struct{})
	}
	return w.joined
}

// register joins the cluster through the head's GCS address, retrying
// while the head cannot be reached (at most wait), and creates the
// session directory the head names. raylet is this node's task address.
func (w *workerNode) register(ctx context.Context, raylet string, wait time.Duration) error {
	body, err := json.Marshal(registration{NodeID: w.nodeID, NodeIP: w.ip, RayletAddress: raylet, Resources: w.resources})
	if err != nil {
		return err
	}
	u := "http://" + w.gcs + "/standin/v1/nodes"
	deadline := time.Now().Add(wait)
	var reg registered
	for {
		err = func() error {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := nodeClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			if resp.StatusCode != http.StatusOK {
				return &refusedError{fmt.Sprintf("POST %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))}
			}
			if err := json.Unmarshal(b, &reg); err != nil || !strings.HasPrefix(reg.SessionName, "session_") || !filepath.IsAbs(reg.TempDir) {
				return &refusedError{fmt.Sprintf("POST %s: the answer %q is not {\"session_name\": \"session_…\", \"temp_dir\": \"/…\"}", u, b)}
			}
			return nil
		}()
		var refused *refusedError
		if err == nil || errors.As(err, &refused) || time.Now().After(deadline) {
			break
		}
		say("REGISTER-RETRY", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	if err != nil {
		return fmt.Errorf("joining the head at %s: %w", w.gcs, err)
	}
	w.session, w.worker, err = newSession(filepath.Join(w.fsRoot, reg.TempDir), reg.SessionName)
	if err != nil {
		return err
	}
	close(w.joinedChan())
	return nil
}

type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// fetchFromHead downloads a package from the head's GCS address.
func (w *workerNode) fetchFromHead(ctx context.Context, uri string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	u := "http://" + w.gcs + "/standin/v1/packages/" + strings.TrimPrefix(uri, "gcs://")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := nodeClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoPackage(uri), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, errNoPackage(uri)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, dashboardtest.MaxRequestBody))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return b, nil
}

// rayletHandler serves the node's task address.
func (w *workerNode) rayletHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /standin/v1/run", func(rw http.ResponseWriter, r *http.Request) {
		var spec taskSpec
		if err := decodeStrict(r.Body, &spec); err != nil {
			httpError(rw, http.StatusBadRequest, "task: %v", err)
			return
		}
		if len(spec.Args) != 3 || spec.JobID == "" {
			httpError(rw, http.StatusBadRequest, "task: want job_id and args MODULE FUNCTION ARG, got %q %q", spec.JobID, spec.Args)
			return
		}
		// A task sent as the head registered this node waits for the
		// registration's answer (the session directory).
		select {
		case <-w.joinedChan():
		case <-r.Context().Done():
			return
		case <-time.After(30 * time.Second):
			httpError(rw, http.StatusServiceUnavailable, "task: this worker node has not finished joining the head after 30s")
			return
		}
		rw.Header().Set("Content-Type", "application/x-ndjson")
		rw.WriteHeader(http.StatusOK)
		fl, _ := rw.(http.Flusher)
		enc := json.NewEncoder(rw)
		send := func(ev taskEvent) {
			enc.Encode(ev)
			if fl != nil {
				fl.Flush()
			}
		}
		code, err := w.runTask(r.Context(), spec, send)
		if err != nil {
			say("TASK-FAILED", spec.JobID, err)
			send(taskEvent{Error: err.Error()})
			return
		}
		say("TASK-EXIT", spec.JobID, strings.Join(spec.Args, " "), code)
		send(taskEvent{Exit: &code})
	})
	return mux
}
