package probe

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	dashclient "github.com/imagectl/imagectl/debug/dashboard"
	"github.com/imagectl/imagectl/debug/dashboard/dashboardtest"
)

const (
	workerID = "7f2e9c1b4d3a5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70819203"
	jobID    = "02000000"
)

// pausedWorker is the row Ray's dashboard shows for a worker waiting in
// ray.util.rpdb for a debugger.
func pausedWorker(port int) dashboardtest.Worker {
	return dashboardtest.Worker{
		WorkerID: workerID, IsAlive: true, WorkerType: "WORKER", NodeID: "n1", IP: "127.0.0.1", PID: 4242,
		DebuggerPort: port, NumPausedThreads: 1, StartTimeMS: 1700000000000,
	}
}

func runningTask() dashboardtest.Task {
	return dashboardtest.Task{TaskID: "c8ef45ccd0112571ffffffffffffffffffffffff02000000", Name: "f", State: "RUNNING", JobID: jobID,
		Type: "NORMAL_TASK", FuncOrClassName: "f", WorkerID: workerID, WorkerPID: 4242}
}

func newFakeDashboard(t *testing.T) *dashboardtest.Server {
	d := dashboardtest.New()
	t.Cleanup(d.Close)
	// Workers that must not be picked: idle, dead, and a driver paused in
	// the entrypoint script (listed, as Ray's list_workers ignores
	// exclude_driver, and reported as the driver, but not attached to).
	d.SetWorkers(
		dashboardtest.Worker{WorkerID: "idle", IsAlive: true, WorkerType: "WORKER", IP: "127.0.0.1", DebuggerPort: 0},
		dashboardtest.Worker{WorkerID: "dead", IsAlive: false, WorkerType: "WORKER", IP: "127.0.0.1", DebuggerPort: 1, NumPausedThreads: 1},
		dashboardtest.Worker{WorkerID: "driver", IsAlive: true, WorkerType: "DRIVER", IP: "127.0.0.1", DebuggerPort: 1, NumPausedThreads: 1},
	)
	return d
}

func TestRunFindsAttachesAndResumes(t *testing.T) {
	w := startWorker(t, "break")
	d := newFakeDashboard(t)
	d.SetWorkers(append([]dashboardtest.Worker{pausedWorker(w.port)}, dashboardtest.Worker{WorkerID: "idle", IsAlive: true, WorkerType: "WORKER"})...)
	d.SetTasks(runningTask(), dashboardtest.Task{TaskID: "other", Name: "g", State: "FINISHED", JobID: jobID, WorkerID: workerID})

	rep, err := Run(testCtx(t), d.URL, WithExpect(Expect{Function: "f", File: "worker.py"}), WithTimeout(30*time.Second),
		WithPollInterval(100*time.Millisecond), WithStepTimeout(20*time.Second), WithStopTimeout(20*time.Second))
	if err != nil {
		t.Fatalf("Run: %v\nworker stderr:\n%s", err, w.stderr)
	}
	wantBP := Breakpoint{WorkerID: workerID, IP: "127.0.0.1", DebuggerPort: w.port, NumPausedThreads: 1, TaskName: "f", JobID: jobID}
	if diff := cmp.Diff([]Breakpoint{wantBP}, rep.Breakpoints); diff != "" {
		t.Errorf("breakpoints (-want +got):\n%s", diff)
	}
	if !rep.OK || rep.Target == nil || rep.Attach == nil || rep.Attach.Frame == nil || rep.Attach.Frame.Name != "f" || rep.Attach.Frame.Line != breakpointLine(t) {
		t.Fatalf("report: %+v attach %+v", rep, rep.Attach)
	}
	if rep.ClusterID == "" || rep.Polls != 1 {
		t.Errorf("cluster id %q polls %d", rep.ClusterID, rep.Polls)
	}
	// The dashboard was asked exactly what the extension asks.
	wantReqs := []string{
		"/cluster_id",
		"/api/v0/workers?" + dashclient.PausedWorkersQuery,
		"/api/v0/workers?" + dashclient.WorkerQuery(workerID),
		"/api/v0/tasks?" + dashclient.RunningTasksQuery(workerID),
	}
	if diff := cmp.Diff(wantReqs, d.Requests()); diff != "" {
		t.Errorf("dashboard requests (-want +got):\n%s", diff)
	}
	if err := w.wait(t, 30*time.Second); err != nil || !strings.Contains(w.stdout.String(), "RESULT 49\n") {
		t.Fatalf("worker: %v\n%s", err, w.stdout)
	}
}

func TestRunWaitsForTheBreakpoint(t *testing.T) {
	w := startWorker(t, "break")
	d := newFakeDashboard(t)
	// The task pauses a moment after the probe starts polling.
	time.AfterFunc(300*time.Millisecond, func() {
		d.SetWorkers(pausedWorker(w.port))
		d.SetTasks(runningTask())
	})
	rep, err := Run(testCtx(t), d.Address(), WithTimeout(30*time.Second), WithPollInterval(100*time.Millisecond), WithExpect(Expect{Function: "f"}))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Polls < 2 {
		t.Errorf("polls = %d, expected the probe to poll until the worker appeared", rep.Polls)
	}
	if err := w.wait(t, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestRunFailures(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := l.Addr().(*net.TCPAddr).Port
	l.Close()

	tests := []struct {
		name     string
		setup    func(*dashboardtest.Server)
		opts     []Option
		wantErr  error
		wantText []string
		kind     string
	}{
		{
			name:     "no paused worker",
			setup:    func(*dashboardtest.Server) {},
			wantErr:  ErrNoPausedWorker,
			wantText: []string{"no paused worker: no paused worker after 1s", "1 paused worker(s) listed, 1 of them a job's driver paused in its entrypoint script, which the probe does not attach to"},
			kind:     "no_paused_worker",
		},
		{
			name: "no worker running the requested task",
			setup: func(d *dashboardtest.Server) {
				d.SetWorkers(pausedWorker(closedPort))
				d.SetTasks(runningTask())
			},
			opts:     []Option{WithTaskName("other_task")},
			wantErr:  ErrNoPausedWorker,
			wantText: []string{`no paused worker running task "other_task" after 1s`, "1 paused worker(s) listed"},
			kind:     "no_paused_worker",
		},
		{
			name: "port refused",
			setup: func(d *dashboardtest.Server) {
				d.SetWorkers(pausedWorker(closedPort))
				d.SetTasks(runningTask())
			},
			wantErr:  ErrPortRefused,
			wantText: []string{"port refused: 127.0.0.1:" + strconv.Itoa(closedPort)},
			kind:     "port_refused",
		},
		{
			name:     "dashboard answers HTML",
			setup:    func(d *dashboardtest.Server) { d.SetMode(dashboardtest.HTML) },
			wantErr:  ErrDashboard,
			wantText: []string{"dashboard not usable after 1s", "/cluster_id: got an HTML page, expected JSON"},
			kind:     "dashboard",
		},
		{
			name:     "dashboard answers 500",
			setup:    func(d *dashboardtest.Server) { d.SetMode(dashboardtest.ServerError) },
			wantErr:  ErrDashboard,
			wantText: []string{"dashboard not usable after 1s", "/cluster_id: HTTP 500 Internal Server Error"},
			kind:     "dashboard",
		},
		{
			name:     "dashboard answers result=false",
			setup:    func(d *dashboardtest.Server) { d.SetMode(dashboardtest.ResultFalse) },
			wantErr:  ErrDashboard,
			wantText: []string{"dashboard answered result=false: Failed to query the GCS"},
			kind:     "dashboard",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newFakeDashboard(t)
			tt.setup(d)
			opts := append([]Option{WithTimeout(time.Second), WithPollInterval(200 * time.Millisecond), WithStepTimeout(5 * time.Second)}, tt.opts...)
			rep, err := Run(testCtx(t), d.URL, opts...)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if rep.OK || rep.ErrorKind != tt.kind || rep.Error != err.Error() {
				t.Errorf("report ok=%v kind=%q error=%q", rep.OK, rep.ErrorKind, rep.Error)
			}
			if tt.name == "no paused worker" {
				want := []Breakpoint{{WorkerID: "driver", IP: "127.0.0.1", DebuggerPort: 1, NumPausedThreads: 1, Driver: true}}
				if diff := cmp.Diff(want, rep.Breakpoints); diff != "" {
					t.Errorf("the paused driver in the report (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestRunAnotherClientAttached(t *testing.T) {
	w := startWorker(t, "break")
	release := holdAttached(t, w.addr())
	defer release()
	d := newFakeDashboard(t)
	d.SetWorkers(pausedWorker(w.port))
	d.SetTasks(runningTask())
	rep, err := Run(testCtx(t), d.URL, WithTimeout(10*time.Second), WithPollInterval(100*time.Millisecond))
	if !errors.Is(err, ErrAnotherClient) || rep.ErrorKind != "another_client" {
		t.Fatalf("error = %v (kind %q), want ErrAnotherClient", err, rep.ErrorKind)
	}
}
