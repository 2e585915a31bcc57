package waitnotice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// A wait that is no HTTP request is said once it lasts longer than After,
// once per host and what, and its host is cut when the context ends it.
func TestStart(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	n := &Notice{After: 20 * time.Millisecond, Printf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}}
	ctx, cancel := context.WithCancel(With(context.Background(), n))
	quick := Start(ctx, "h:1", "something quick")
	quick(nil)
	slow := Start(ctx, "h:1", "buildkitd at tcp://h:1 to answer")
	again := Start(ctx, "h:1", "buildkitd at tcp://h:1 to answer")
	time.Sleep(100 * time.Millisecond)
	cancel()
	slow(errors.New("canceled"))
	again(errors.New("canceled"))
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"waiting for buildkitd at tcp://h:1 to answer (nothing after 20ms)"}; !slices.Equal(lines, want) {
		t.Errorf("lines %q, want %q", lines, want)
	}
	if got := n.Cut(); !slices.Equal(got, []string{"h:1"}) {
		t.Errorf("Cut() = %q, want [h:1]", got)
	}
	// Without a Notice, nothing happens.
	Start(context.Background(), "h", "x")(errors.New("e"))
}
