package debug

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	fake "github.com/imagectl/imagectl/internal/fakes/dashboard"
	"github.com/imagectl/imagectl/smoke/dashboard"
)

// The tracker reads the fake dashboard through the client the probe uses,
// with the extension's own queries, and reports each pause and resume once.
func TestPausedTracker(t *testing.T) {
	d := fake.New()
	t.Cleanup(d.Close)
	api, err := dashboard.New(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string][2]string{"10.0.0.5": {"rc-head-abc", "head"}, "10.0.0.6": {"rc-worker-def", "worker"}}
	tr := newPausedTracker(api, func(_ context.Context, ip string) (string, string) { return pods[ip][0], pods[ip][1] })
	ctx := context.Background()

	step := func(name string, wantPaused, wantResumed []*PausedTask) {
		t.Helper()
		p, r, err := tr.poll(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(wantPaused, p); diff != "" {
			t.Errorf("%s: paused (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(wantResumed, r); diff != "" {
			t.Errorf("%s: resumed (-want +got):\n%s", name, diff)
		}
	}

	step("nothing paused", nil, nil)

	// A worker that listens but has not raised num_paused_threads yet, and
	// one paused: only the paused one is reported, with its task.
	d.SetWorkers(
		fake.Worker{WorkerID: "w1", IsAlive: true, WorkerType: "WORKER", IP: "10.0.0.5", PID: 11, DebuggerPort: 5001, NumPausedThreads: 1},
		fake.Worker{WorkerID: "w2", IsAlive: true, WorkerType: "WORKER", IP: "10.0.0.6", PID: 12, DebuggerPort: 5002},
	)
	d.SetTasks(
		fake.Task{TaskID: "t1", Name: "f", State: "RUNNING", JobID: "02000000", WorkerID: "w1"},
		fake.Task{TaskID: "t2", Name: "g", State: "RUNNING", JobID: "02000000", WorkerID: "w2"},
	)
	p1 := &PausedTask{WorkerID: "w1", TaskID: "t1", Name: "f", JobID: "02000000", IP: "10.0.0.5", Port: 5001, Pod: "rc-head-abc", NodeType: "head", PID: 11}
	step("one paused", []*PausedTask{p1}, nil)
	step("no change, no report", nil, nil)

	// The second pauses on the worker Pod: two at once.
	d.SetWorkers(
		fake.Worker{WorkerID: "w1", IsAlive: true, WorkerType: "WORKER", IP: "10.0.0.5", PID: 11, DebuggerPort: 5001, NumPausedThreads: 1},
		fake.Worker{WorkerID: "w2", IsAlive: true, WorkerType: "WORKER", IP: "10.0.0.6", PID: 12, DebuggerPort: 5002, NumPausedThreads: 1},
	)
	p2 := &PausedTask{WorkerID: "w2", TaskID: "t2", Name: "g", JobID: "02000000", IP: "10.0.0.6", Port: 5002, Pod: "rc-worker-def", NodeType: "worker", PID: 12}
	step("second paused", []*PausedTask{p2}, nil)

	// The first resumes (num_paused_threads back to 0), the second's
	// worker dies.
	d.SetWorkers(
		fake.Worker{WorkerID: "w1", IsAlive: true, WorkerType: "WORKER", IP: "10.0.0.5", PID: 11, DebuggerPort: 5001},
		fake.Worker{WorkerID: "w2", IsAlive: false, WorkerType: "WORKER", IP: "10.0.0.6", PID: 12, DebuggerPort: 5002, NumPausedThreads: 1},
	)
	step("both resumed", nil, []*PausedTask{p1, p2})
}

func TestPausedTaskString(t *testing.T) {
	tests := []struct {
		p    PausedTask
		want string
	}{
		{PausedTask{Name: "f", IP: "10.0.0.5", Port: 5001, Pod: "rc-head-abc", NodeType: "head"}, "task f on Pod rc-head-abc (head), debugpy at 10.0.0.5:5001"},
		{PausedTask{Driver: true, IP: "10.0.0.5", Port: 5001}, "the driver on 10.0.0.5, debugpy at 10.0.0.5:5001"},
		{PausedTask{WorkerID: "w9", IP: "10.0.0.7", Port: 7}, "worker w9 on 10.0.0.7, debugpy at 10.0.0.7:7"},
	}
	for _, tc := range tests {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}
