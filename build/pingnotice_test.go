package build

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagectl/imagectl/internal/waitnotice"
)

// A buildkitd that accepts the connection and never answers is named on
// the command's stderr (its wait notice) once Ping has waited past the
// notice's delay: gRPC goes through no HTTP transport that would say it.
func TestPingSaysWhatItWaitsFor(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var cmu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			cmu.Lock()
			conns = append(conns, c)
			cmu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		cmu.Lock()
		defer cmu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	var mu sync.Mutex
	var lines []string
	n := &waitnotice.Notice{After: 200 * time.Millisecond, Printf: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(f, a...))
	}}
	ctx, cancel := context.WithTimeout(waitnotice.With(context.Background(), n), 2*time.Second)
	defer cancel()
	addr := "tcp://" + l.Addr().String()
	if _, err := NewBuildKit(WithAddress(addr)).Ping(ctx, "linux/amd64"); err == nil {
		t.Fatal("Ping of a buildkitd that never answers succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "waiting for buildkitd at "+addr+" to answer") {
		t.Errorf("notices %q, want one naming buildkitd at %s", lines, addr)
	}
	if cut := n.Cut(); len(cut) != 1 || cut[0] != addr {
		t.Errorf("Cut() = %q, want [%s]", cut, addr)
	}
}
