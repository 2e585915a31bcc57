package image

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
)

// Runtime runs platform images as containers. The container's network is
// its own: only the loopback interface exists (runc) or only ports
// published on the host's 127.0.0.1 are reachable (Docker); Dial reaches a
// port inside it.
type Runtime interface {
	// Name is "runc" or "docker".
	Name() string
	// Create makes a container of p, stopped before the image's entrypoint
	// runs. Spec.Mount is bind-mounted read-only.
	Create(ctx context.Context, p *Platform, spec Spec) (Container, error)
}

// Spec is what a container needs beyond its image.
type Spec struct {
	// ID names the container (unique).
	ID string
	// Mount is a host directory bind-mounted read-only at MountPoint.
	Mount string
	// Ports are the TCP ports inside the container the smoke dials.
	Ports []int
}

// Container is one created container. Remove must always be called.
type Container interface {
	// Start runs the image's entrypoint and command as the container's
	// first process, as `docker run` would.
	Start(ctx context.Context) error
	// Hold keeps the container up without its entrypoint, so that Exec
	// works in an image whose entrypoint would not stay up.
	Hold(ctx context.Context) error
	// Exec runs a process to its end and returns its output.
	Exec(ctx context.Context, p Process) (*Result, error)
	// Spawn starts a process and returns at once.
	Spawn(ctx context.Context, p Process) (Proc, error)
	// Dial connects to a TCP port inside the container.
	Dial(ctx context.Context, port int) (net.Conn, error)
	// ReadFile reads a file of the container's filesystem (at most max
	// bytes); a missing file is an error wrapping fs.ErrNotExist.
	ReadFile(ctx context.Context, path string, max int64) ([]byte, error)
	// Logs is what the entrypoint printed so far (stdout and stderr).
	Logs(ctx context.Context) string
	// Remove kills every process of the container and removes it and
	// everything made for it (unpacked root filesystem, loaded image).
	Remove(ctx context.Context) error
}

// Process is one process run in a container.
type Process struct {
	Args []string
	// Env is the complete environment (the image's config Env).
	Env []string
	// UID and GID run the process (0:0 is root).
	UID, GID uint32
	// Cwd is the working directory (default /).
	Cwd string
}

// Result is a finished process.
type Result struct {
	ExitCode int
	Stdout   []byte
	Stderr   []byte
}

// Proc is a running process.
type Proc interface {
	// Lines delivers stdout lines as they come; closed at exit.
	Lines() <-chan string
	// Wait waits for the process to end.
	Wait() (*Result, error)
	// Kill ends it.
	Kill()
}

// ErrExecStart is a process that could not be started in the container
// (e.g. its program is not on PATH); the runtime's message follows.
var ErrExecStart = errors.New("cannot start the process in the container")

// ErrStopped is a container whose first process has exited: nothing runs
// in it any more.
var ErrStopped = errors.New("the container has stopped (its entrypoint exited)")

// MountPoint is where Spec.Mount appears in the container.
const MountPoint = "/.imagectl-smoke"

// lineWriter splits output into lines for Proc.Lines and keeps all of it.
type lineWriter struct {
	mu      sync.Mutex
	all     bytes.Buffer
	partial []byte
	ch      chan string
	closed  bool
}

func newLineWriter() *lineWriter { return &lineWriter{ch: make(chan string, 1024)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if !w.closed {
			select {
			case w.ch <- line:
			default: // nobody reads: drop, all is kept
			}
		}
	}
	return len(p), nil
}

func (w *lineWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 && !w.closed {
		select {
		case w.ch <- string(w.partial):
		default:
		}
	}
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
}

func (w *lineWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.all.Bytes()...)
}

// limitedBuffer keeps the last max bytes written.
type limitedBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	if len(l.b) > l.max {
		l.b = append([]byte(nil), l.b[len(l.b)-l.max:]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

var _ io.Writer = (*limitedBuffer)(nil)

// tail returns the last n lines of s, for messages.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
