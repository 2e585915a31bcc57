package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/imagectl/imagectl/debug/dashboard/dashboardtest"
)

// rayworkerEnv names, in a job's environment, the path of rayworker.py
// (smoke/probe/probetest), so an entrypoint such as
// `python3 "$STANDIN_RAYWORKER" sample_code f 7` runs a task the way the
// stand-in's start-up tasks do.
const rayworkerEnv = "STANDIN_RAYWORKER"

// jobRunner runs the jobs submitted to the head's dashboard as Ray's
// JobManager and JobSupervisor do (Ray commit 5c47023856,
// dashboard/modules/job/job_supervisor.py, runtime_env/working_dir.py,
// py_modules.py, packaging.py):
//
//   - the working_dir package (gcs://_ray_pkg_<hash>.zip, as uploaded
//     through PUT /api/packages) is unpacked into
//     <session>/runtime_resources/working_dir_files/_ray_pkg_<hash>/, each
//     py_modules package into …/py_modules_files/_ray_pkg_<hash>/ (a
//     directory already there is reused, as download_and_unpack_package
//     does);
//   - the entrypoint runs as `/bin/sh -c ENTRYPOINT` in its own process
//     group, with the working_dir as its cwd, runtime_env.env_vars in its
//     environment, PYTHONPATH = working_dir, the py_modules directories,
//     env_vars' PYTHONPATH, then the image's (set_pythonpath_in_context),
//     PYTHONUNBUFFERED=1, RAY_ADDRESS (the head's GCS address) and
//     RAY_JOB_CONFIG_JSON_ENV_VAR (the runtime_env and the metadata with
//     job_submission_id: _get_driver_env_vars), plus STANDIN_RAYWORKER and
//     RAY_NODE_IP for rayworker.py, and the directory of
//     IMAGECTL_STANDIN_PYTHON first on PATH;
//   - its output is the job's logs (and the stand-in's own output, as
//     printed). An entrypoint that runs rayworker.py itself is a task: its
//     lines become worker and task rows of the State API, the task under
//     the job's Ray job ID. Any other is the job's driver, a DRIVER worker
//     row; the tasks it asks the head for (cluster.go, driver.py) have rows
//     of their own;
//   - the job is RUNNING once the entrypoint starts, SUCCEEDED on exit
//     code 0, FAILED otherwise (with Ray's message and the last lines of the
//     logs), STOPPED after POST /api/jobs/{id}/stop (SIGTERM to the group).
//
// Other runtime_env fields (pip, uv, conda, image_uri, …) are not acted on:
// the image already holds what its tasks need (debugpy); the stand-in says
// which it ignored (JOB-IGNORED).
type jobRunner struct {
	d       *dashboardtest.Server
	rows    *stateRows
	node    *nodeRuntime // the head's: its session, rayworker.py, IP, node ID, environment
	gcsAddr string

	mu      sync.Mutex
	next    int
	running map[string]*exec.Cmd
	stopped map[string]bool
}

func newJobRunner(d *dashboardtest.Server, rows *stateRows, node *nodeRuntime, gcsAddr string) *jobRunner {
	r := &jobRunner{
		d: d, rows: rows, node: node, gcsAddr: gcsAddr,
		next: 3, running: map[string]*exec.Cmd{}, stopped: map[string]bool{},
	}
	d.SetJobRunner(r.run)
	d.SetStopper(r.stop)
	return r
}

// rayJobID is the Ray job ID of the n-th driver: 4 bytes, little-endian
// counter, as Ray numbers jobs (the start-up tasks have 02000000).
func rayJobID(n int) string { return fmt.Sprintf("%02x%02x0000", n&0xff, n>>8&0xff) }

func (r *jobRunner) fail(id, msg string) {
	say("JOB-FAILED", id, strings.SplitN(msg, "\n", 2)[0])
	r.d.UpdateJob(id, func(j *dashboardtest.Job) { j.Status, j.Message = dashboardtest.JobFailed, msg })
}

// unzipTo extracts a zip as Python's ZipFile.extractall does: every
// member below dir ("..", absolute names and drive letters dropped),
// directories from names ending in "/", file modes not restored.
func unzipTo(data []byte, dir string) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range zr.File {
		var parts []string
		for _, p := range strings.Split(f.Name, "/") {
			if p != "" && p != "." && p != ".." {
				parts = append(parts, p)
			}
		}
		if len(parts) == 0 {
			continue
		}
		to := filepath.Join(append([]string{dir}, parts...)...)
		if strings.HasSuffix(f.Name, "/") {
			if err := os.MkdirAll(to, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		rc, err := f.Open()
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// run is the dashboard's job runner: it sets up the runtime_env, then runs
// the entrypoint to its end.
func (r *jobRunner) run(job dashboardtest.Job) {
	id := job.SubmissionID
	say("JOB-SUBMITTED", id, job.Entrypoint)
	env := job.RuntimeEnv
	cwd := r.node.session
	var pythonPath []string
	ctx := context.Background()
	if wd, ok := env["working_dir"]; ok && wd != nil {
		uri, _ := wd.(string)
		dir, err := r.node.unpack(ctx, uri, "working_dir_files")
		if err != nil {
			r.fail(id, "runtime_env setup failed: Failed to set up runtime environment.\n"+err.Error())
			return
		}
		cwd = dir
		pythonPath = append(pythonPath, dir)
	}
	if pm, ok := env["py_modules"].([]any); ok {
		for _, m := range pm {
			uri, _ := m.(string)
			dir, err := r.node.unpack(ctx, uri, "py_modules_files")
			if err != nil {
				r.fail(id, "runtime_env setup failed: Failed to set up runtime environment.\n"+err.Error())
				return
			}
			pythonPath = append(pythonPath, dir)
		}
	}
	var ignored []string
	for k := range env {
		switch k {
		case "working_dir", "py_modules", "env_vars", "excludes":
		default:
			ignored = append(ignored, k)
		}
	}
	if len(ignored) > 0 {
		sort.Strings(ignored)
		say("JOB-IGNORED", id, strings.Join(ignored, ","))
	}
	vars := map[string]string{}
	if ev, ok := env["env_vars"].(map[string]any); ok {
		for k, v := range ev {
			s, ok := v.(string)
			if !ok {
				r.fail(id, fmt.Sprintf("Failed to start supervisor actor %s: 'runtime_env['env_vars'] must be of type Dict[str, str], but the value %v is of type %T'", id, v, v))
				return
			}
			vars[k] = s
		}
	}
	// The driver's JobConfig (job_supervisor.py _get_driver_env_vars): its
	// runtime_env and metadata, with the submission ID Ray adds.
	meta := map[string]string{}
	for k, v := range job.Metadata {
		meta[k] = v
	}
	if _, ok := meta["job_submission_id"]; !ok {
		meta["job_submission_id"] = id
	}
	if _, ok := meta["job_name"]; !ok {
		meta["job_name"] = id
	}
	jobConfig, err := json.Marshal(map[string]any{"runtime_env": env, "metadata": meta})
	if err != nil {
		r.fail(id, fmt.Sprintf("Failed to start the entrypoint: %v", err))
		return
	}
	base := runtimeEnviron(r.node.environ, vars, pythonPath,
		"PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1", "RAY_ADDRESS="+r.gcsAddr, rayJobConfigEnv+"="+string(jobConfig),
		"RAY_NODE_IP="+r.node.ip, rayworkerEnv+"="+r.node.worker)

	cmd := exec.Command("/bin/sh", "-c", job.Entrypoint)
	cmd.Dir = cwd
	cmd.Env = base
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw

	r.mu.Lock()
	n := r.next
	r.next++
	rayID := rayJobID(n)
	if r.stopped[id] {
		r.mu.Unlock()
		return
	}
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		r.fail(id, fmt.Sprintf("Failed to start the entrypoint: %v", err))
		return
	}
	r.running[id] = cmd
	r.mu.Unlock()
	say("JOB-RUNNING", id, rayID, "CWD", cwd)
	r.d.UpdateJob(id, func(j *dashboardtest.Job) {
		j.Status, j.JobID = dashboardtest.JobRunning, rayID
		j.DriverInfo = &dashboardtest.DriverInfo{ID: rayID, NodeIPAddress: r.node.ip, PID: strconv.Itoa(cmd.Process.Pid)}
		j.DriverAgentAddress = "http://" + r.node.ip + ":52365"
		j.DriverNodeID = r.node.nodeID
	})

	// An entrypoint that runs rayworker.py itself is a task (its lines make
	// its rows); any other is the job's driver, listed as a DRIVER worker,
	// whose tasks the head runs when it asks (cluster.go).
	var t *taskRows
	if name, ok := taskName(job.Entrypoint); ok {
		t = r.rows.newTask(cmd.Process.Pid, r.node.ip, r.node.nodeID, rayID, name)
	} else {
		t = r.rows.newDriver(cmd.Process.Pid, r.node.ip, r.node.nodeID)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Println(line)
			r.d.UpdateJob(id, func(j *dashboardtest.Job) { j.Logs += line + "\n" })
			if !t.driver {
				t.line(line)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	err = cmd.Wait()
	pw.Close()
	<-done
	t.exit(err != nil)

	r.mu.Lock()
	delete(r.running, id)
	stopped := r.stopped[id]
	r.mu.Unlock()
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		code = -1
	}
	switch {
	case stopped:
		say("JOB-STOPPED", id)
		r.d.UpdateJob(id, func(j *dashboardtest.Job) { j.Status = dashboardtest.JobStopped })
	case code == 0:
		say("JOB-SUCCEEDED", id)
		r.d.UpdateJob(id, func(j *dashboardtest.Job) { j.Status, j.DriverExitCode = dashboardtest.JobSucceeded, &code })
	default:
		say("JOB-FAILED", id, "exit", code)
		r.d.UpdateJob(id, func(j *dashboardtest.Job) {
			// job_supervisor.py:436-454
			if tail := lastChars(j.Logs, 20000); tail != "" {
				j.Message = fmt.Sprintf("Job entrypoint command failed with exit code %d, last available logs (truncated to 20,000 chars):\n%s", code, tail)
			} else {
				j.Message = fmt.Sprintf("Job entrypoint command failed with exit code %d. No logs available.", code)
			}
			j.Status, j.DriverExitCode = dashboardtest.JobFailed, &code
		})
	}
}

// stop is the dashboard's stopper: SIGTERM to the entrypoint's process
// group (RAY_JOB_STOP_SIGNAL's default), SIGKILL 3 s later
// (job_supervisor.py DEFAULT_RAY_JOB_STOP_WAIT_TIME_S).
func (r *jobRunner) stop(job dashboardtest.Job) {
	r.mu.Lock()
	r.stopped[job.SubmissionID] = true
	cmd := r.running[job.SubmissionID]
	r.mu.Unlock()
	if cmd == nil {
		// Not started yet (or its runtime_env failed): stopped at once.
		r.d.UpdateJob(job.SubmissionID, func(j *dashboardtest.Job) {
			if j.Status == dashboardtest.JobPending {
				j.Status = dashboardtest.JobStopped
			}
		})
		return
	}
	pgid := cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	go func() {
		time.Sleep(3 * time.Second)
		syscall.Kill(-pgid, syscall.SIGKILL)
	}()
}

// envValue is the value of key in environ ("" when unset).
func envValue(environ []string, key string) string {
	for _, e := range environ {
		if v, ok := strings.CutPrefix(e, key+"="); ok {
			return v
		}
	}
	return ""
}

func lastChars(s string, n int) string {
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return strings.TrimRight(s, "\n")
}

// taskName is the task's name for the State API when the entrypoint runs
// rayworker.py itself: the function it is asked to run (its second
// argument).
func taskName(entrypoint string) (string, bool) {
	f := strings.Fields(entrypoint)
	for i, w := range f {
		if strings.Contains(w, "RAYWORKER") && i+2 < len(f) {
			return f[i+2], true
		}
	}
	return "", false
}

// stateRows holds the State API's worker and task rows of every running
// worker, start-up tasks and jobs alike, and hands them all to the
// dashboard on each change.
type stateRows struct {
	d     *dashboardtest.Server
	mu    sync.Mutex
	n     int
	rows  map[int]*taskRows
	order []int
}

func newStateRows(d *dashboardtest.Server) *stateRows {
	return &stateRows{d: d, rows: map[int]*taskRows{}}
}

// taskRows is one worker process running one task.
type taskRows struct {
	s      *stateRows
	id     int
	w      dashboardtest.Worker
	t      dashboardtest.Task
	driver bool // a job's driver: a DRIVER worker row, no task row
}

// newDriver lists a job's driver as Ray's list_workers does (worker_type
// DRIVER; the State API's list_workers does not exclude drivers).
func (s *stateRows) newDriver(pid int, ip, nodeID string) *taskRows {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	tr := &taskRows{s: s, id: s.n, driver: true}
	tr.w = dashboardtest.Worker{
		WorkerID: hexID(28), IsAlive: true, WorkerType: "DRIVER", NodeID: nodeID, IP: ip, PID: pid,
		WorkerLaunchTime: time.Now().UnixMilli(), StartTimeMS: time.Now().UnixMilli(),
	}
	s.rows[tr.id] = tr
	s.order = append(s.order, tr.id)
	s.pushLocked()
	return tr
}

func (s *stateRows) newTask(pid int, ip, nodeID, jobID, name string) *taskRows {
	s.mu.Lock()
	s.n++
	tr := &taskRows{s: s, id: s.n}
	tr.w = dashboardtest.Worker{
		WorkerID: hexID(28), IsAlive: true, WorkerType: "WORKER", NodeID: nodeID, IP: ip, PID: pid,
		WorkerLaunchTime: time.Now().UnixMilli(), StartTimeMS: time.Now().UnixMilli(),
	}
	tr.t = dashboardtest.Task{
		TaskID: fmt.Sprintf("%016x%s", s.n, jobID), Name: name, State: "RUNNING", JobID: jobID, Type: "NORMAL_TASK",
		FuncOrClassName: name, NodeID: nodeID, WorkerID: tr.w.WorkerID, WorkerPID: pid,
	}
	s.rows[tr.id] = tr
	s.order = append(s.order, tr.id)
	s.pushLocked()
	s.mu.Unlock()
	return tr
}

func (s *stateRows) pushLocked() {
	var ws []dashboardtest.Worker
	var ts []dashboardtest.Task
	for _, id := range s.order {
		ws = append(ws, s.rows[id].w)
		if !s.rows[id].driver {
			ts = append(ts, s.rows[id].t)
		}
	}
	s.d.SetWorkers(ws...)
	s.d.SetTasks(ts...)
}

// listeningRe is the line Ray's debugpy.set_trace logs once debugpy listens.
var listeningRe = regexp.MustCompile(`^Ray debugger is listening on [0-9.]+:([0-9]+)$`)

// line reads one line of rayworker.py's output into the rows: the
// worker's debugger_port once debugpy listens, num_paused_threads 1 while
// it waits for a client, the task FINISHED or FAILED at its end.
func (tr *taskRows) line(line string) {
	tr.s.mu.Lock()
	defer tr.s.mu.Unlock()
	switch {
	case listeningRe.MatchString(line):
		tr.w.DebuggerPort, _ = strconv.Atoi(listeningRe.FindStringSubmatch(line)[1])
	case line == "RAYWORKER paused":
		tr.w.NumPausedThreads++
	case line == "RAYWORKER resumed":
		tr.w.NumPausedThreads--
	case strings.HasPrefix(line, "RESULT "):
		tr.t.State = "FINISHED"
		say("RESULT", strings.TrimPrefix(line, "RESULT "))
	case strings.HasPrefix(line, "TASK ERROR "):
		tr.t.State, tr.t.ErrorType = "FAILED", "TASK_EXECUTION_EXCEPTION"
		kind := "unknown"
		if f := strings.Fields(line); len(f) > 2 {
			kind = strings.TrimSuffix(f[2], ":")
		}
		say("TASK-ERROR", kind)
	default:
		return
	}
	tr.s.pushLocked()
}

// exit marks the worker dead (is_alive False) once its process ended, and
// a task still RUNNING FINISHED, or FAILED when the process failed.
func (tr *taskRows) exit(failed bool) {
	tr.s.mu.Lock()
	defer tr.s.mu.Unlock()
	tr.w.IsAlive = false
	tr.w.NumPausedThreads = 0
	tr.w.EndTimeMS = time.Now().UnixMilli()
	if !tr.driver && tr.t.State == "RUNNING" {
		tr.t.State = "FINISHED"
		if failed {
			tr.t.State = "FAILED"
		}
	}
	tr.s.pushLocked()
}

func (tr *taskRows) state() string {
	tr.s.mu.Lock()
	defer tr.s.mu.Unlock()
	return tr.t.State
}
