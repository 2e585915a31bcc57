package kube

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHarnessTeardownOutlastsInterrupts starts a control plane of its own
// with tests/e2e/with-kube.sh (beside the one this test runs in: ports are
// picked free), interrupts it from its command, and keeps interrupting it
// every 100 ms until it exits, as a user pressing Ctrl-C again during the
// teardown: it must exit 130, say the interrupt was ignored, and leave no
// process of its run (each known by the run's own work directory, which
// every daemon's command line names).
func TestHarnessTeardownOutlastsInterrupts(t *testing.T) {
	needCluster(t) // the binaries with-kube.sh runs are built
	dir := t.TempDir()
	out := filepath.Join(dir, "kubeconfig-path")
	// The command records the run's kubeconfig (in its work directory),
	// then interrupts with-kube.sh (its parent) once now and, from a
	// background loop, every 100 ms while it lives.
	script := `echo "$KUBECONFIG" > "$OUT"; wk=$PPID; (while kill -INT $wk 2>/dev/null; do sleep 0.1; done) & kill -INT $wk`
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(t), "tests", "e2e", "with-kube.sh"), "sh", "-c", script)
	cmd.Env = append(os.Environ(), "OUT="+out, "IMAGECTL_KUBE_NODE=0", "IMAGECTL_E2E_KEEP=0")
	b, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("with-kube.sh exited %d (%v), want 130 after an interrupt\n%s", code, err, b)
	}
	kc := strings.TrimSpace(string(readFile(t, out)))
	work := filepath.Dir(kc)
	if !strings.HasPrefix(work, os.TempDir()) || work == os.TempDir() {
		t.Fatalf("the run's work directory %q (from KUBECONFIG %q) is not one of its own", work, kc)
	}
	if !strings.Contains(string(b), "interrupted during the teardown") {
		t.Errorf("with-kube.sh did not say an interrupt came during its teardown (the interrupts did not reach it then, or it died of one):\n%s", b)
	}
	// What of the run is left: a process whose command line names its
	// work directory.
	var left []string
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		c, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(c), work+"/") {
			continue
		}
		left = append(left, e.Name()+": "+strings.ReplaceAll(string(c), "\x00", " "))
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			defer syscall.Kill(pid, syscall.SIGKILL) // the run's own, left by a failed teardown
		}
	}
	if len(left) > 0 {
		t.Errorf("processes of the interrupted run are still running:\n%s\nwith-kube.sh's output:\n%s", strings.Join(left, "\n"), b)
	}
	// An interrupted run keeps its work directory (its logs) by design;
	// it is this test's to remove.
	os.RemoveAll(work)
}
