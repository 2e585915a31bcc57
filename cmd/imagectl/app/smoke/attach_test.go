package smoke_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/imagectl/imagectl/cmd/imagectl/app/apptest"
	"github.com/imagectl/imagectl/debug/dashboard/dashboardtest"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/smoke/probe"
)

// rayWorkerScript and rayTree are the probe's stand-in for a Ray worker and
// a job's working_dir and py_modules.
const (
	rayWorkerScript = "../../../../smoke/probe/probetest/rayworker.py"
	rayTree         = "../../../../smoke/probe/testdata/raytree"
)

// startPostMortemWorker runs mypkg.ops.fail(6) under the probe's Ray worker
// stand-in with RAY_DEBUG_POST_MORTEM=1 and Debian's debugpy, and returns
// its debugpy port and a channel closed with its output when it exits.
func startPostMortemWorker(t *testing.T) (int, <-chan string) {
	t.Helper()
	const python = "/usr/bin/python3"
	testutil.RequireDebugpy(t, python)
	script, _ := filepath.Abs(rayWorkerScript)
	wd, _ := filepath.Abs(rayTree + "/working_dir")
	pm, _ := filepath.Abs(rayTree + "/py_modules")
	cmd := exec.Command(python, script, "mypkg.ops", "fail", "6")
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), "PYTHONPATH="+wd+":"+pm, "PYTHONDONTWRITEBYTECODE=1", "RAY_DEBUG_POST_MORTEM=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done, exited := make(chan string, 1), make(chan struct{})
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-exited })
	port := make(chan int, 1)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`listening on [0-9.]+:([0-9]+)`)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				p := 0
				for _, r := range m[1] {
					p = p*10 + int(r-'0')
				}
				port <- p
			}
		}
		cmd.Wait()
		close(exited)
		done <- all.String()
	}()
	select {
	case p := <-port:
		return p, done
	case out := <-done:
		t.Fatalf("worker exited before listening:\n%s", out)
	case <-time.After(60 * time.Second):
		t.Fatal("worker did not listen within 60s")
	}
	return 0, nil
}

// TestSmokeAttachPostMortem runs `imagectl smoke attach --post-mortem` as
// the kind smoke does, against a dashboard listing a task frozen on its
// exception by real debugpy, with the localRoot read from the image's
// settings file.
func TestSmokeAttachPostMortem(t *testing.T) {
	port, done := startPostMortemWorker(t)
	d := dashboardtest.New()
	t.Cleanup(d.Close)
	const wid = "01000000ffffffffffffffffffffffffffffffffffffffffffffffff"
	d.SetWorkers(dashboardtest.Worker{WorkerID: wid, IsAlive: true, WorkerType: "WORKER", NodeID: "n1", IP: "127.0.0.1", PID: 4242,
		DebuggerPort: port, NumPausedThreads: 1, StartTimeMS: 1700000000000})
	d.SetTasks(dashboardtest.Task{TaskID: "c8ef45ccd0112571ffffffffffffffffffffffff02000000", Name: "fail", State: "RUNNING", JobID: "02000000",
		Type: "NORMAL_TASK", FuncOrClassName: "fail", WorkerID: wid, WorkerPID: 4242})
	settings := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(settings, []byte(`{"`+imagespec.SettingClusterDashboards+`":[{"host":"127.0.0.1:8265","localRoot":""}]}`), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := apptest.Run(t, "smoke", "attach", "--dashboard", d.URL, "--post-mortem", "--expect-function", "fail",
		"--settings", settings, "--poll-interval", "100ms", "--pause-timeout", "60s", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var rep probe.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not a report: %v\n%s", err, out)
	}
	a := rep.Attach
	if a == nil || a.StopReason != "exception" || a.Exception == nil || !strings.HasPrefix(a.Exception.ID, "ValueError") || a.Frames[0].Name != "fail" {
		t.Errorf("attach %+v: want a stop on the ValueError in fail", a)
	}
	if a != nil && (a.Source == nil || a.Source.Opened != "path" || !a.Source.BreakpointVerified) {
		t.Errorf("source %+v: want it opened by path with a verified breakpoint", a.Source)
	}
	if pm, _ := json.Marshal(a.AttachArguments["pathMappings"]); string(pm) != `[{"localRoot":"","remoteRoot":"."},{"localRoot":"","remoteRoot":""}]` {
		t.Errorf("pathMappings %s, want the extension's built from localRoot \"\"", pm)
	}
	select {
	case o := <-done:
		if !strings.Contains(o, "TASK ERROR ValueError: bad input 6") {
			t.Errorf("the task did not fail normally after continue:\n%s", o)
		}
	case <-time.After(60 * time.Second):
		t.Error("worker still running 60s after the attach")
	}
}
