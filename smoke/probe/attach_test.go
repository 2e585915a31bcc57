package probe

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	godap "github.com/google/go-dap"

	"github.com/imagectl/imagectl/debug/dap"
	"github.com/imagectl/imagectl/internal/testutil"
)

func TestAttachRealDebugpy(t *testing.T) {
	for _, action := range []Action{ActionContinue, ActionDisconnect} {
		t.Run(string(action), func(t *testing.T) {
			w := startWorker(t, "break")
			res, err := Attach(testCtx(t), w.addr(), WithExpect(Expect{Function: "f", File: "worker.py"}), WithAction(action),
				WithStepTimeout(20*time.Second), WithStopTimeout(20*time.Second))
			if err != nil {
				t.Fatalf("Attach: %v\nworker stdout:\n%s\nstderr:\n%s", err, w.stdout, w.stderr)
			}
			script, _ := filepath.Abs("testdata/worker.py")
			want := &Frame{Name: "f", Path: script, Line: breakpointLine(t)}
			if diff := cmp.Diff(want, res.Frame); diff != "" {
				t.Errorf("matched frame (-want +got):\n%s\nall frames: %v", diff, res.Frames)
			}
			if res.ThreadID == 0 || res.StopReason == "" {
				t.Errorf("stopped event not recorded: thread %d reason %q", res.ThreadID, res.StopReason)
			}
			if !slices.Contains(res.SkippedEvents, "debugpyWaitingForServer") {
				t.Errorf("skipped events %v: expected debugpy's custom debugpyWaitingForServer to be seen and skipped", res.SkippedEvents)
			}
			if res.AttachTime <= 0 || res.Action != action {
				t.Errorf("attach time %v action %q", res.AttachTime, res.Action)
			}
			if err := w.wait(t, 30*time.Second); err != nil {
				t.Fatalf("worker exit: %v\nstderr:\n%s", err, w.stderr)
			}
			if !strings.Contains(w.stdout.String(), "RESULT 49\n") {
				t.Errorf("worker stdout has no \"RESULT 49\":\n%s", w.stdout)
			}
		})
	}
}

func TestAttachFrameNotFoundStillResumes(t *testing.T) {
	w := startWorker(t, "break")
	res, err := Attach(testCtx(t), w.addr(), WithExpect(Expect{Function: "g"}), WithStepTimeout(20*time.Second), WithStopTimeout(20*time.Second))
	if !errors.Is(err, ErrFrameNotFound) {
		t.Fatalf("Attach error = %v, want ErrFrameNotFound", err)
	}
	if !strings.Contains(err.Error(), `function "g"`) || !strings.Contains(err.Error(), "f (") {
		t.Errorf("error %q should name the expectation and list the frames", err)
	}
	if len(res.Frames) == 0 {
		t.Error("no frames recorded")
	}
	if err := w.wait(t, 30*time.Second); err != nil || !strings.Contains(w.stdout.String(), "RESULT 49\n") {
		t.Fatalf("worker did not resume after the failed check: %v\n%s", err, w.stdout)
	}
}

func TestAttachPortRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = Attach(testCtx(t), addr, WithStepTimeout(5*time.Second))
	if !errors.Is(err, ErrPortRefused) {
		t.Fatalf("error = %v, want ErrPortRefused", err)
	}
	if !strings.Contains(err.Error(), "port refused: "+addr) {
		t.Errorf("error %q should say \"port refused: %s\"", err, addr)
	}
}

func TestAttachWorkerNeverStops(t *testing.T) {
	w := startWorker(t, "nostop")
	_, err := Attach(testCtx(t), w.addr(), WithStepTimeout(20*time.Second), WithStopTimeout(2*time.Second))
	if !errors.Is(err, ErrNoStop) {
		t.Fatalf("error = %v, want ErrNoStop", err)
	}
	if !strings.Contains(err.Error(), "no stopped event after 2s from "+w.addr()) {
		t.Errorf("error %q should say how long it waited and where", err)
	}
}

// holdAttached attaches a first client the way VS Code does and keeps it
// attached until the returned function is called.
func holdAttached(t *testing.T, addr string) (release func()) {
	t.Helper()
	ctx := testCtx(t)
	c, err := dap.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, &godap.InitializeRequest{Request: req("initialize"), Arguments: godap.InitializeRequestArguments{AdapterID: "debugpy", LinesStartAt1: true, ColumnsStartAt1: true, PathFormat: "path"}}); err != nil {
		t.Fatal(err)
	}
	call, err := c.Start(&godap.AttachRequest{Request: req("attach"), Arguments: []byte(`{"justMyCode":false}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitEvent(ctx, "initialized"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, &godap.ConfigurationDoneRequest{Request: req("configurationDone")}); err != nil {
		t.Fatal(err)
	}
	if _, err := call.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitEvent(ctx, "stopped"); err != nil {
		t.Fatal(err)
	}
	return func() {
		c.Do(ctx, &godap.DisconnectRequest{Request: req("disconnect"), Arguments: &godap.DisconnectArguments{}})
		c.Close()
	}
}

func TestAttachAnotherClientAttached(t *testing.T) {
	w := startWorker(t, "break")
	release := holdAttached(t, w.addr())
	_, err := Attach(testCtx(t), w.addr(), WithStepTimeout(20*time.Second), WithStopTimeout(5*time.Second))
	if !errors.Is(err, ErrAnotherClient) {
		t.Fatalf("error = %v, want ErrAnotherClient", err)
	}
	if !strings.Contains(err.Error(), "another client is attached at "+w.addr()) || !strings.Contains(err.Error(), "already being debugged") {
		t.Errorf("error %q should name the address and carry debugpy's message", err)
	}
	// The first client is still in control: releasing it lets the worker finish.
	release()
	if err := w.wait(t, 30*time.Second); err != nil || !strings.Contains(w.stdout.String(), "RESULT 49\n") {
		t.Fatalf("worker did not finish after the first client left: %v\n%s", err, w.stdout)
	}
}

func TestExpectMatches(t *testing.T) {
	fr := Frame{Name: "f", Path: "/tmp/ray/session_latest/runtime_resources/working_dir_files/x/task.py", Line: 7}
	tests := []struct {
		e    Expect
		want bool
	}{
		{Expect{}, true},
		{Expect{Function: "f"}, true},
		{Expect{Function: "g"}, false},
		{Expect{File: "task.py"}, true},
		{Expect{File: "x/task.py"}, true},
		{Expect{File: "ask.py"}, false},
		{Expect{Function: "f", File: "task.py"}, true},
		{Expect{Function: "f", File: "rpdb.py"}, false},
	}
	for _, tt := range tests {
		if got := tt.e.matches(fr); got != tt.want {
			t.Errorf("%v.matches(%v) = %v, want %v", tt.e, fr, got, tt.want)
		}
	}
}

// WithDialer replaces the plain dial: the attach goes through it (smoke
// image dials into a container's network namespace this way), to the
// address it names, and the name given to Attach is only reported.
func TestAttachWithDialer(t *testing.T) {
	testutil.RequireDebugpy(t, systemPython)
	w := startWorker(t, "break")
	var dialed []string
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialed = append(dialed, network+" "+addr)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", w.addr())
	}
	res, err := Attach(testCtx(t), "container:5678", WithDialer(dial), WithExpect(Expect{Function: "f"}),
		WithStepTimeout(20*time.Second), WithStopTimeout(20*time.Second))
	if err != nil {
		t.Fatalf("Attach: %v\nworker stderr:\n%s", err, w.stderr)
	}
	if diff := cmp.Diff([]string{"tcp container:5678"}, dialed); diff != "" {
		t.Errorf("dials (-want +got):\n%s", diff)
	}
	if res.Address != "container:5678" || res.Frame == nil || res.Frame.Name != "f" {
		t.Errorf("result %+v", res)
	}
	if err := w.wait(t, 30*time.Second); err != nil || !strings.Contains(w.stdout.String(), "RESULT 49\n") {
		t.Fatalf("worker did not resume: %v\n%s", err, w.stdout)
	}
}

// TestAttachStepsOverThePausedLine steps (DAP next) from the stop in f to
// its next line, with real debugpy, then continues.
func TestAttachStepsOverThePausedLine(t *testing.T) {
	w := startWorker(t, "break")
	res, err := Attach(testCtx(t), w.addr(), WithExpect(Expect{Function: "f", File: "worker.py"}), WithStep(true),
		WithStepTimeout(20*time.Second), WithStopTimeout(20*time.Second))
	if err != nil {
		t.Fatalf("Attach: %v\nworker stderr:\n%s", err, w.stderr)
	}
	script, _ := filepath.Abs("testdata/worker.py")
	want := &Frame{Name: "f", Path: script, Line: lineOf(t, "return y")}
	if diff := cmp.Diff(want, res.Stepped); diff != "" {
		t.Errorf("frame after the step (-want +got):\n%s", diff)
	}
	if err := w.wait(t, 30*time.Second); err != nil {
		t.Fatalf("worker exit: %v\nstderr:\n%s", err, w.stderr)
	}
	if !strings.Contains(w.stdout.String(), "RESULT 49\n") {
		t.Errorf("worker stdout has no \"RESULT 49\" after the step and continue:\n%s", w.stdout)
	}
}

// lineOf is the line number of the line of testdata/worker.py that is
// text, trimmed.
func lineOf(t *testing.T, text string) int {
	t.Helper()
	data, err := os.ReadFile("testdata/worker.py")
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == text {
			return i + 1
		}
	}
	t.Fatalf("testdata/worker.py has no line %q", text)
	return 0
}
