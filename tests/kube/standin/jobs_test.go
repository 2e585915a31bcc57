package main

import (
	"context"
	"os"
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

// systemPython is Debian's interpreter, the one python3-debugpy installs
// for; the python3 first on PATH may be another one without debugpy.
const systemPython = "/usr/bin/python3"

// testHead starts a head's dashboard on loopback, with its Ray root in a
// temporary directory, the image's PYTHONPATH set to image (as the Ray
// image sets its own) and /usr/bin first on PATH.
func testHead(t *testing.T, image string, env ...string) (*head, *dashboardtest.Server, *rayjobs.Client) {
	t.Helper()
	d := dashboardtest.New()
	t.Cleanup(d.Close)
	var environ []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PATH=") && !strings.HasPrefix(e, "PYTHONPATH=") {
			environ = append(environ, e)
		}
	}
	environ = append(environ, "PATH=/usr/bin:/bin:"+os.Getenv("PATH"), "PYTHONPATH="+image)
	environ = append(environ, env...)
	h, err := startHead(d, t.TempDir(), "127.0.0.1", "127.0.0.1:6379", map[string]float64{"CPU": 1}, environ)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(h.worker)) })
	c, err := rayjobs.New(d.URL, rayjobs.WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	return h, d, c
}

func waitJob(t *testing.T, c *rayjobs.Client, id string, timeout time.Duration) *rayjobs.JobDetails {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		j, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Terminal() {
			return j
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s still %s after %s", id, j.Status, timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestJobRunsInItsWorkingDir submits through the rayjobs client, as
// imagectl debug does: the package lands where Ray unpacks it, the
// entrypoint runs there with Ray's PYTHONPATH order and the runtime_env's
// env_vars, and the job succeeds with its output as logs.
func TestJobRunsInItsWorkingDir(t *testing.T) {
	ctx := context.Background()
	h, _, c := testHead(t, "/image/site-packages", pythonEnv+"=/image/venv/bin/python3")
	wd := writeFiles(t, map[string]string{"data/x.txt": "x\n", "main.sh": "echo from main.sh\n"})
	mod := writeFiles(t, map[string]string{"dep/__init__.py": "V = 1\n"})
	id, err := c.Submit(ctx, rayjobs.SubmitRequest{
		Entrypoint: `test -f data/x.txt && sh main.sh && echo "cwd=$(pwd)" && echo "pythonpath=$PYTHONPATH" && echo "greeting=$GREETING" && test -f "$STANDIN_RAYWORKER" && echo worker-ok && echo "path=${PATH%%:*}"`,
		RuntimeEnv: map[string]any{
			"working_dir": wd,
			"py_modules":  []any{filepath.Join(mod, "dep")},
			"env_vars":    map[string]any{"GREETING": "hello", "PYTHONPATH": "/from/env_vars"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, c, id, 30*time.Second)
	logs, err := c.Logs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != rayjobs.StatusSucceeded || j.DriverExitCode == nil || *j.DriverExitCode != 0 {
		t.Fatalf("job %s: %s %q (exit %v)\nlogs:\n%s", id, j.Status, j.Message, j.DriverExitCode, logs)
	}
	wdPkg, err := rayjobs.Package(ctx, wd, nil)
	if err != nil {
		t.Fatal(err)
	}
	modPkg, err := rayjobs.Package(ctx, filepath.Join(mod, "dep"), nil, rayjobs.WithParentDir())
	if err != nil {
		t.Fatal(err)
	}
	wdDir := filepath.Join(h.session, "runtime_resources", "working_dir_files", "_ray_pkg_"+wdPkg.Hash)
	modDir := filepath.Join(h.session, "runtime_resources", "py_modules_files", "_ray_pkg_"+modPkg.Hash)
	want := "from main.sh\n" +
		"cwd=" + wdDir + "\n" +
		"pythonpath=" + wdDir + ":" + modDir + ":/from/env_vars:/image/site-packages\n" +
		"greeting=hello\n" +
		"worker-ok\n" +
		"path=/image/venv/bin\n"
	if diff := cmp.Diff(want, logs); diff != "" {
		t.Errorf("logs (-want +got):\n%s", diff)
	}
	for _, f := range []string{filepath.Join(wdDir, "data", "x.txt"), filepath.Join(wdDir, "main.sh"), filepath.Join(modDir, "dep", "__init__.py")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("not unpacked: %v", err)
		}
	}
	if j.JobID != "03000000" || j.DriverInfo == nil || j.DriverInfo.NodeIPAddress != "127.0.0.1" {
		t.Errorf("driver: job_id %q, driver_info %+v", j.JobID, j.DriverInfo)
	}
	if latest, err := os.Readlink(filepath.Join(filepath.Dir(h.session), "session_latest")); err != nil || latest != h.session {
		t.Errorf("session_latest -> %q, %v; want %s", latest, err, h.session)
	}
}

// TestJobFailsWithItsExitCode: a non-zero exit is FAILED with Ray's message
// and the end of the logs (job_supervisor.py:436-454).
func TestJobFailsWithItsExitCode(t *testing.T) {
	ctx := context.Background()
	_, _, c := testHead(t, "")
	id, err := c.Submit(ctx, rayjobs.SubmitRequest{Entrypoint: "echo about to fail; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, c, id, 30*time.Second)
	if j.Status != rayjobs.StatusFailed || j.DriverExitCode == nil || *j.DriverExitCode != 3 {
		t.Fatalf("job: %s, exit %v", j.Status, j.DriverExitCode)
	}
	if want := "Job entrypoint command failed with exit code 3, last available logs (truncated to 20,000 chars):\nabout to fail"; j.Message != want {
		t.Errorf("message %q, want %q", j.Message, want)
	}
}

// TestStopKillsTheEntrypoint: POST /api/jobs/{id}/stop ends the
// entrypoint's process group and the job is STOPPED.
func TestStopKillsTheEntrypoint(t *testing.T) {
	ctx := context.Background()
	_, _, c := testHead(t, "")
	id, err := c.Submit(ctx, rayjobs.SubmitRequest{Entrypoint: "echo started; sleep 60"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if logs, _ := c.Logs(ctx, id); logs == "started\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the entrypoint never printed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if stopped, err := c.Stop(ctx, id); err != nil || !stopped {
		t.Fatalf("Stop: %v, %v", stopped, err)
	}
	start := time.Now()
	if j := waitJob(t, c, id, 10*time.Second); j.Status != rayjobs.StatusStopped {
		t.Errorf("after Stop: %s %q", j.Status, j.Message)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("stopping took %s", time.Since(start))
	}
}

// TestJobTaskPausedUnderDebugpy: the entrypoint runs rayworker.py as the
// start-up tasks do; its task pauses at breakpoint() under real debugpy and
// is listed as a paused worker with its task under the job's Ray job ID;
// the project's attach probe finds it, stops in f, continues, and the job
// succeeds with the task's result in its logs.
func TestJobTaskPausedUnderDebugpy(t *testing.T) {
	testutil.RequireDebugpy(t, systemPython)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, d, c := testHead(t, "")
	wd := writeFiles(t, map[string]string{"sample_code.py": string(sampleCode)})
	id, err := c.Submit(ctx, rayjobs.SubmitRequest{
		Entrypoint: `python3 "$STANDIN_RAYWORKER" sample_code f 7`,
		RuntimeEnv: map[string]any{"working_dir": wd},
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := probe.Run(ctx, d.URL, probe.WithTimeout(60*time.Second), probe.WithPollInterval(100*time.Millisecond),
		probe.WithExpect(probe.Expect{Function: "f", File: "sample_code.py"}))
	if err != nil {
		logs, _ := c.Logs(ctx, id)
		t.Fatalf("attach: %v\nreport: %+v\njob logs:\n%s", err, rep, logs)
	}
	if len(rep.Breakpoints) == 0 || rep.Breakpoints[0].TaskName != "f" || rep.Breakpoints[0].JobID != "03000000" ||
		rep.Breakpoints[0].NumPausedThreads != 1 || rep.Breakpoints[0].IP != "127.0.0.1" {
		t.Errorf("breakpoints %+v; want task f of job 03000000 paused on 127.0.0.1", rep.Breakpoints)
	}
	j := waitJob(t, c, id, 60*time.Second)
	logs, _ := c.Logs(ctx, id)
	if j.Status != rayjobs.StatusSucceeded || !strings.Contains(logs, "RESULT 49\n") {
		t.Fatalf("job %s %q\nlogs:\n%s", j.Status, j.Message, logs)
	}
	wdPkg, err := rayjobs.Package(ctx, wd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, "Ray debugger is listening on 127.0.0.1:") {
		t.Errorf("logs lack debugpy's listening line:\n%s", logs)
	}
	if _, err := os.Stat(filepath.Join(h.session, "runtime_resources", "working_dir_files", "_ray_pkg_"+wdPkg.Hash, "sample_code.py")); err != nil {
		t.Error(err)
	}
}

// TestStartupTasksStillRun: with IMAGECTL_STANDIN_STARTUP_TASKS=1 the head
// runs sample_code.py's task f at start as before (what
// TestReadmeDebugFlowOnNode attaches to); here h.runTasks directly, with
// Debian's python3.
func TestStartupTasksStillRun(t *testing.T) {
	testutil.RequireDebugpy(t, systemPython)
	t.Setenv("RAY_DEBUG_POST_MORTEM", "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, d, _ := testHead(t, "")
	h.python = systemPython
	done := make(chan error, 1)
	go func() { done <- h.runTasks() }()
	rep, err := probe.Run(ctx, d.URL, probe.WithTimeout(60*time.Second), probe.WithPollInterval(100*time.Millisecond),
		probe.WithExpect(probe.Expect{Function: "f", File: "sample_code.py"}))
	if err != nil {
		t.Fatalf("attach: %v (%+v)", err, rep)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the start-up task did not finish after the attach")
	}
	if len(rep.Breakpoints) == 0 || rep.Breakpoints[0].JobID != "02000000" {
		t.Errorf("breakpoints %+v; want the start-up job 02000000", rep.Breakpoints)
	}
}
