package debug

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/remotecommand"
)

// relayPython is the relay a tunnel runs in the Pod, given the address on
// the command line: it connects to ip:port and copies its standard input
// to the socket and the socket to its standard output, byte for byte,
// until either side ends. The end of standard input (the local client
// left, or the exec's stream closed) closes the socket and ends the
// process at once: debugpy takes one client at a time, and a relay left
// holding its connection would keep every later attach out.
const relayPython = `import os, socket, sys, threading
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.settimeout(None)
def up():
    try:
        while True:
            b = os.read(0, 65536)
            if not b:
                break
            s.sendall(b)
    except OSError:
        pass
    try:
        s.shutdown(socket.SHUT_RDWR)
        s.close()
    except OSError:
        pass
    os._exit(0)
threading.Thread(target=up, daemon=True).start()
out = sys.stdout.buffer
while True:
    b = s.recv(65536)
    if not b:
        break
    out.write(b)
    out.flush()
`

// relayShell starts relayPython ($0) with the first Python on PATH.
const relayShell = `for p in python3 python; do command -v "$p" >/dev/null 2>&1 && exec "$p" -c "$0" "$1" "$2"; done; echo "imagectl debug --local: no python3 or python on the container's PATH to relay the debugger's connection with" >&2; exit 127`

// relayCommand is the command a tunnel runs in the Pod for ip:port.
func relayCommand(ip string, port int) []string {
	return []string{"sh", "-c", relayShell, relayPython, ip, strconv.Itoa(port)}
}

// streamFunc runs command in the tunnel's container with the given
// streams until it ends or ctx is done.
type streamFunc func(ctx context.Context, command []string, stdin io.Reader, stdout, stderr io.Writer) error

// Tunnel is a local listener on 127.0.0.1 whose every connection is
// relayed to IP:Port as the Pod sees it, through an exec in one of the
// Pod's containers (relayCommand): the Kubernetes API alone, as kubectl
// exec. A port-forward cannot do it: the container runtime's port-forward
// dials localhost inside the Pod (containerd's sandbox_portforward_linux.go
// from v1.6 to v2.1), while Ray's debugpy listens on the Pod's IP only
// (debugpy.listen((node_ip_address, 0))).
type Tunnel struct {
	Pod, Container string
	IP             string
	Port           int
	LocalPort      int

	ln     net.Listener
	run    streamFunc
	onErr  func(error)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// OpenTunnel listens on 127.0.0.1:localPort (0: a free port) and relays
// each connection to ip:port through an exec in container of pod. onErr
// (may be nil) receives what ends a connection badly: the exec refused
// (RBAC, the Pod gone) or the relay's own error (the port refused).
func (c *Cluster) OpenTunnel(ctx context.Context, pod, container, ip string, port, localPort int, onErr func(error)) (*Tunnel, error) {
	run := func(ctx context.Context, command []string, stdin io.Reader, stdout, stderr io.Writer) error {
		return c.stream(ctx, pod, container, command, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	}
	return openTunnel(ctx, run, pod, container, ip, port, localPort, onErr)
}

func openTunnel(ctx context.Context, run streamFunc, pod, container, ip string, port, localPort int, onErr func(error)) (*Tunnel, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(localPort)))
	if err != nil {
		return nil, fmt.Errorf("tunnel to %s:%d in Pod %s: %w", ip, port, pod, err)
	}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t := &Tunnel{
		Pod: pod, Container: container, IP: ip, Port: port, LocalPort: ln.Addr().(*net.TCPAddr).Port,
		ln: ln, run: run, onErr: onErr, ctx: tctx, cancel: cancel, conns: map[net.Conn]struct{}{},
	}
	t.wg.Add(1)
	go t.accept()
	return t, nil
}

// Addr is the local address, host:port.
func (t *Tunnel) Addr() string { return t.ln.Addr().String() }

// Release stops listening and lets the connections that are open run to
// their end: Ray lists a task as paused only until a client attaches, so
// the end of its pause is no reason to cut the client that ended it.
func (t *Tunnel) Release() { t.ln.Close() }

// Close stops listening, ends every relayed connection and waits for them.
func (t *Tunnel) Close() {
	t.cancel()
	t.ln.Close()
	t.mu.Lock()
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
}

func (t *Tunnel) accept() {
	defer t.wg.Done()
	for {
		conn, err := t.ln.Accept()
		if err != nil {
			return // closed
		}
		t.mu.Lock()
		if t.ctx.Err() != nil {
			t.mu.Unlock()
			conn.Close()
			return
		}
		t.conns[conn] = struct{}{}
		t.mu.Unlock()
		t.wg.Add(1)
		go t.relay(conn)
	}
}

func (t *Tunnel) relay(conn net.Conn) {
	defer t.wg.Done()
	stderr := &lineWriter{}
	// The relay ends by itself when its standard input ends; should the
	// stream not carry that end (an older exec protocol has no half-close),
	// the exec is cancelled a moment after the client left.
	ctx, cancel := context.WithCancel(t.ctx)
	defer cancel()
	in := &eofReader{r: conn, eof: func() { time.AfterFunc(relayGrace, cancel) }}
	err := t.run(ctx, relayCommand(t.IP, t.Port), in, conn, stderr)
	clientLeft := in.ended() // before Close ends the read
	conn.Close()
	t.mu.Lock()
	delete(t.conns, conn)
	t.mu.Unlock()
	if t.ctx.Err() != nil || clientLeft || t.onErr == nil {
		return // closed, or the client left: nothing went wrong
	}
	if err == nil && stderr.suffix() == "" {
		return
	}
	if err == nil {
		err = errors.New("the relay ended")
	}
	t.onErr(fmt.Errorf("relaying 127.0.0.1:%d to %s:%d through an exec in Pod %s container %s: %w%s", t.LocalPort, t.IP, t.Port, t.Pod, t.Container, err, stderr.suffix()))
}

// relayGrace is how long a relay may take to end after its client left.
const relayGrace = 5 * time.Second

// eofReader calls eof once when r ends (EOF or an error).
type eofReader struct {
	r    io.Reader
	eof  func()
	once sync.Once
	done atomic.Bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { e.done.Store(true); e.eof() })
	}
	return n, err
}

func (e *eofReader) ended() bool { return e.done.Load() }
