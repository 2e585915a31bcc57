package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
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
	// Logs is what the entrypoint printed so far (stdout and stderr), kept
	// as Result.Stdout is.
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

// Result is a finished process. Stdout and Stderr are what the smoke kept
// of each: all of it up to OutputHead+OutputTail bytes, else the first
// OutputHead bytes, a marker line saying how many bytes are not kept, and
// the last OutputTail bytes.
type Result struct {
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	// Dropped is how many bytes of stdout and stderr were not kept.
	Dropped int64
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

// Bounds on what the smoke keeps of one stream of container output (a
// process's stdout, its stderr, the entrypoint's output): the first
// OutputHead and the last OutputTail bytes. What lies between is counted,
// not kept, and a marker line (see tail) says how much.
const (
	OutputHead = 64 << 10
	OutputTail = 4 << 20
	// maxLine bounds one line delivered by Proc.Lines; the rest of a
	// longer line is dropped.
	maxLine = 64 << 10
	// maxMessage bounds the output quoted in a report line.
	maxMessage = 2 << 10
)

// boundedOutput keeps the first head and the last tail bytes written to
// it and counts the rest.
type boundedOutput struct {
	mu      sync.Mutex
	headMax int
	tailMax int
	head    []byte
	tail    []byte // the last tailMax bytes are kept; up to 2*tailMax held
	total   int64
}

func newBoundedOutput() *boundedOutput {
	return &boundedOutput{headMax: OutputHead, tailMax: OutputTail}
}

func (b *boundedOutput) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if room := b.headMax - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	switch {
	case len(p) >= b.tailMax:
		b.tail = append(b.tail[:0], p[len(p)-b.tailMax:]...)
	case len(b.tail)+len(p) > 2*b.tailMax:
		keep := b.tailMax - len(p)
		b.tail = append(b.tail[:copy(b.tail, b.tail[len(b.tail)-keep:])], p...)
	default:
		b.tail = append(b.tail, p...)
	}
	return n, nil
}

// dropped is how many bytes were written but not kept.
func (b *boundedOutput) dropped() int64 {
	return b.total - int64(len(b.head)) - int64(min(len(b.tail), b.tailMax))
}

// Bytes is what was kept: all of the output, or its head, a marker line
// saying how many bytes are not kept, and its tail.
func (b *boundedOutput) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tail
	if len(t) > b.tailMax {
		t = t[len(t)-b.tailMax:]
	}
	out := make([]byte, 0, len(b.head)+len(t)+64)
	out = append(out, b.head...)
	if d := b.dropped(); d > 0 {
		out = fmt.Appendf(out, "\n%s%d%s\n", droppedPrefix, d, droppedSuffix)
	}
	return append(out, t...)
}

// Dropped is how many bytes were written but not kept.
func (b *boundedOutput) Dropped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped()
}

// The marker line boundedOutput puts where it dropped output.
const (
	droppedPrefix = "[imagectl: "
	droppedSuffix = " bytes of output not kept]"
)

var droppedRe = regexp.MustCompile(`\[imagectl: (\d+) bytes of output not kept\]`)

// lineWriter splits output into lines for Proc.Lines and keeps a bounded
// head and tail of it.
type lineWriter struct {
	mu      sync.Mutex
	all     *boundedOutput
	partial []byte
	ch      chan string
	closed  bool
}

func newLineWriter() *lineWriter {
	return &lineWriter{all: newBoundedOutput(), ch: make(chan string, 1024)}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(p)
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		if room := maxLine - len(w.partial); room > 0 {
			w.partial = append(w.partial, seg[:min(room, len(seg))]...)
		}
		if i < 0 {
			break
		}
		line := string(w.partial)
		w.partial = w.partial[:0]
		p = p[i+1:]
		if !w.closed {
			select {
			case w.ch <- line:
			default: // nobody reads: drop, the head and tail are kept
			}
		}
	}
	return n, nil
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

// tail returns the last n lines of s (at most maxMessage bytes of them,
// without control characters but newlines and tabs), for messages. Where s holds a boundedOutput marker (output not kept),
// the result starts with a line saying how many bytes are not kept.
func tail(s string, n int) string {
	var dropped int64
	for _, m := range droppedRe.FindAllStringSubmatch(s, -1) {
		d, _ := strconv.ParseInt(m[1], 10, 64)
		dropped += d
	}
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, "\n")
	if len(out) > maxMessage {
		out = "..." + out[len(out)-maxMessage:]
	}
	out = strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || r == utf8.RuneError) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(out, ""))
	if dropped > 0 && !droppedRe.MatchString(out) {
		out = fmt.Sprintf("%s%d%s (output truncated; its last lines follow)\n%s", droppedPrefix, dropped, droppedSuffix, out)
	}
	return out
}
