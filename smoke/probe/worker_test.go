package probe

import (
	"bufio"
	"context"

	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/imagectl/imagectl/internal/syncbuf"
	"github.com/imagectl/imagectl/internal/testutil"
)

// systemPython is Debian's interpreter, the one python3-debugpy installs for;
// the python3 on PATH may be another one without debugpy.
const systemPython = "/usr/bin/python3"

// worker is testdata/worker.py running under real debugpy.
type worker struct {
	cmd    *exec.Cmd
	stdout *syncbuf.Buffer
	stderr *syncbuf.Buffer
	port   int
	done   chan struct{}
	err    error // exit error, valid after done
}

func (w *worker) addr() string { return "127.0.0.1:" + strconv.Itoa(w.port) }

// wait waits for the worker to exit and returns its exit error.
func (w *worker) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-w.done:
		return w.err
	case <-time.After(d):
		t.Fatalf("worker still running after %s\nstdout:\n%s\nstderr:\n%s", d, w.stdout, w.stderr)
		return nil
	}
}

func startWorker(t *testing.T, mode string) *worker {
	t.Helper()
	testutil.RequireDebugpy(t, systemPython)
	script, err := filepath.Abs("testdata/worker.py")
	if err != nil {
		t.Fatal(err)
	}
	portFile := filepath.Join(t.TempDir(), "port")
	w := &worker{stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, done: make(chan struct{})}
	w.cmd = exec.Command(systemPython, script, mode, portFile)
	w.cmd.Stdout, w.cmd.Stderr = w.stdout, w.stderr
	// Its own process group: debugpy.listen starts an adapter subprocess,
	// and cleanup must not leave it behind.
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("starting %s %s: %v", systemPython, script, err)
	}
	go func() { w.err = w.cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		<-w.done
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(portFile); err == nil {
			p, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("port file %s: %q: %v", portFile, b, err)
			}
			w.port = p
			return w
		}
		select {
		case <-w.done:
			t.Fatalf("worker exited before listening: %v\nstdout:\n%s\nstderr:\n%s", w.err, w.stdout, w.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker did not write %s within 30s\nstdout:\n%s\nstderr:\n%s", portFile, w.stdout, w.stderr)
		}
	}
}

// breakpointLine is the line of worker.py where f(x) is paused: debugpy
// stops on the line after debugpy.breakpoint().
func breakpointLine(t *testing.T) int {
	t.Helper()
	f, err := os.Open("testdata/worker.py")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "debugpy.breakpoint()" {
			return n + 1
		}
	}
	t.Fatal("testdata/worker.py has no debugpy.breakpoint() line")
	return 0
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
