package main

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestKillProcLeavesAReusedPid: a pid whose process is not the one read
// (another start time: the one read ended and its pid was given to this
// one) is not killed; the process read is.
func TestKillProcLeavesAReusedPid(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p, ok := readProc(cmd.Process.Pid)
	if !ok {
		t.Fatalf("reading /proc/%d/stat failed", cmd.Process.Pid)
	}
	stale := p
	stale.start--
	killProc(stale, false)
	time.Sleep(100 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("killProc killed pid %d, which another process held when it was read: %v", p.pid, err)
	}

	killProc(p, false)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("after killProc of the process read: %v, want killed by SIGKILL", err)
	}
}
