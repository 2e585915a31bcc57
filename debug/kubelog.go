package debug

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// LogKubeErrors sends the errors client-go's port-forward and exec streams
// cannot return to anyone (apimachinery's runtime.HandleError: by default
// a klog line "Unhandled Error" on stderr) to log, one plain line each, or
// drops them when log is nil. They are errors of one forwarded connection:
// code-server refusing it while it starts, a browser closing it. What a
// session can act on it reports as events (a port-forward that ended,
// code-server not answering before the deadline), but not each
// connection's error; the CLI passes log for --verbose.
//
// It sets process-wide state, as klog's own setters do: call it from the
// program's side (imagectl debug's command), once, before Run.
func LogKubeErrors(log func(line string)) {
	rl := &errorRate{min: time.Millisecond}
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{
		func(_ context.Context, err error, msg string, kv ...any) {
			if log != nil {
				log(kubeErrorText(err, msg, kv...))
			}
		},
		rl.wait,
	}
}

// kubeErrorText is one line for an error handed to runtime.HandleError:
// the error, after msg unless msg is HandleError's fixed "Unhandled Error",
// then the key/value pairs.
func kubeErrorText(err error, msg string, kv ...any) string {
	var parts []string
	if msg != "" && msg != "Unhandled Error" {
		parts = append(parts, msg)
	}
	if err != nil {
		parts = append(parts, err.Error())
	}
	line := strings.Join(parts, ": ")
	for i := 0; i+1 < len(kv); i += 2 {
		line += fmt.Sprintf(" %v=%v", kv[i], kv[i+1])
	}
	return strings.ReplaceAll(line, "\n", " ")
}

// errorRate keeps the rate limit apimachinery's default handlers have (at
// most one error a millisecond), so a loop that fails at once again and
// again does not spin.
type errorRate struct {
	mu   sync.Mutex
	last time.Time
	min  time.Duration
}

// wait sleeps until min has passed since the last error's turn, which it
// takes: each caller sleeps on its own, as apimachinery's does.
func (r *errorRate) wait(context.Context, error, string, ...any) {
	r.mu.Lock()
	now := time.Now()
	turn := r.last.Add(r.min)
	if turn.Before(now) {
		turn = now
	}
	r.last = turn
	r.mu.Unlock()
	time.Sleep(turn.Sub(now))
}
