// Package waitnotice says, on behalf of a command, what a network request
// waits for once it waits longer than a few seconds, and remembers which
// hosts were still waited for when the command's context ended. The HTTP
// transports of imagectl (regauth.Transport for registries, httpx for
// everything else) watch every request whose context carries a Notice.
package waitnotice

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/imagectl/imagectl/internal/safetext"
)

// Notice says what a request waits for when its response headers take
// longer than After: Printf gets one line per scheme and host.
type Notice struct {
	After  time.Duration
	Printf func(format string, args ...any)

	mu   sync.Mutex
	told map[string]bool
	cut  []string
}

type key struct{}

// With returns ctx carrying n: every watched request sent with that context
// (or one derived from it) reports a long wait to n.
func With(ctx context.Context, n *Notice) context.Context {
	return context.WithValue(ctx, key{}, n)
}

// From returns the Notice of ctx, or nil.
func From(ctx context.Context) *Notice {
	n, _ := ctx.Value(key{}).(*Notice)
	return n
}

// Cut returns the hosts whose requests the context ended (a deadline, an
// interrupt) before they were answered, in the order they were cut.
func (n *Notice) Cut() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.cut)
}

// Watch starts watching req, if its context carries a Notice; the returned
// stop ends the watch with the request's error.
func Watch(req *http.Request) (stop func(error)) {
	host := req.URL.Host
	k := req.URL.Scheme + "://" + host
	what := req.Method + " " + safetext.URL(k+req.URL.Path)
	return watch(req.Context(), k, host, func(after time.Duration) string {
		return fmt.Sprintf("waiting for %s to answer %s (no answer after %s)", host, what, after)
	})
}

// Start watches a wait that is no HTTP request (a gRPC dial, a poll until
// something appears), if ctx carries a Notice: once it lasts longer than
// After, the Notice says "waiting for " what, once per host and what. host
// names who is waited for in Cut when ctx ends the wait (stop's err not
// nil).
func Start(ctx context.Context, host, what string) (stop func(error)) {
	return watch(ctx, host+" "+what, host, func(after time.Duration) string {
		return fmt.Sprintf("waiting for %s (nothing after %s)", safetext.Text(what), after)
	})
}

// watch is Watch and Start: line is said once per key after n.After.
func watch(ctx context.Context, key, host string, line func(time.Duration) string) (stop func(error)) {
	n := From(ctx)
	if n == nil {
		return func(error) {}
	}
	stopped := func(err error) {
		if err == nil || ctx.Err() == nil {
			return
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		if !slices.Contains(n.cut, host) {
			n.cut = append(n.cut, host)
		}
	}
	if n.Printf == nil {
		return stopped
	}
	t := time.AfterFunc(n.After, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.told[key] {
			return
		}
		if n.told == nil {
			n.told = map[string]bool{}
		}
		n.told[key] = true
		n.Printf("%s", line(n.After))
	})
	return func(err error) {
		t.Stop()
		stopped(err)
	}
}
