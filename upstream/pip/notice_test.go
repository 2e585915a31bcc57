package pip

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagectl/imagectl/internal/waitnotice"
	"github.com/imagectl/imagectl/pylock"
)

// pip runs silently: once a lock has taken longer than the notice's delay,
// the command's stderr names what it waits for (which closure, against
// which index, credentials redacted).
func TestLockSaysWhatItWaitsFor(t *testing.T) {
	slow := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\nsleep 1\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	n := &waitnotice.Notice{After: 200 * time.Millisecond, Printf: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(f, a...))
	}}
	l := New(WithCommand(slow), WithTimeout(time.Minute))
	req := pylock.Request{Requirements: []string{"ray==2.46.0"}, Python: "3.12", Platform: "linux/amd64", Index: "http://user:secret@127.0.0.1:9/simple"}
	if _, err := l.Lock(waitnotice.With(context.Background(), n), req); err == nil {
		t.Fatal("a pip that exits 1 locked something")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "waiting for pip ("+slow+") to lock ray==2.46.0 for CPython 3.12 on linux/amd64 against http://") ||
		strings.Contains(lines[0], "secret") {
		t.Errorf("notices %q, want one naming the lock, the password redacted", lines)
	}
}
