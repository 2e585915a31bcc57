package pip

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/imagectl/imagectl/pylock"
)

// TestLockCancelKillsWhatTheWrapperStarted runs the lock through a
// python3 that is a wrapper script whose pip (here a sleep) is its child
// and outlives it: cancelling must end Lock within the wait delay and
// leave no process of the group behind.
func TestLockCancelKillsWhatTheWrapperStarted(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	wrapper := filepath.Join(dir, "python3")
	script := "#!/bin/sh\n# a wrapper whose child is not exec'd: the child holds stdout\nsleep 60 &\necho $! > " + pidFile + "\nwait\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	l := New(WithCommand(wrapper), WithTimeout(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := pylock.Request{Requirements: []string{"ray==2.46.0"}, Python: "3.12", Platform: "linux/amd64", Index: "http://127.0.0.1:9/simple"}
	go func() {
		// Cancel once the wrapper's child runs (bounded by the test's
		// own timeout, however slow the machine).
		for {
			if _, err := os.Stat(pidFile); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	_, err := l.Lock(ctx, req)
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock after cancel: %v, want context.Canceled", err)
	}
	if took > groupWaitDelay+3*time.Second {
		t.Errorf("Lock returned %v after the cancel, want within about %v", took, groupWaitDelay)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the wrapper never started its child: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// The killed child is reaped by init once the wrapper is gone; give
	// it a moment, then it must not exist.
	deadline := time.Now().Add(2 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the wrapper's child %d outlived the cancelled lock", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid is a process that has not exited: a zombie
// (killed, waiting for init to reap it) counts as gone.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
