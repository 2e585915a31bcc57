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
// a klog line "Unhandled Error" on stderr, such as a connection code-server
// refused while it starts, or a browser that closed its connection) to
// log, one plain line each, or drops them when log is nil. A session sees
// what they mean itself (a port-forward that ended, a stream that broke)
// and reports it as an event; the CLI passes log for --verbose.
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

func (r *errorRate) wait(context.Context, error, string, ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := r.min - time.Since(r.last); d > 0 {
		time.Sleep(d)
	}
	r.last = time.Now()
}
