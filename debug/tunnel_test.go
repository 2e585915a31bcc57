package debug

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagectl/imagectl/internal/testutil"
)

// localRun runs the tunnel's command on this machine, as the exec runs it
// in the Pod: the same sh and relay, with the connection as its standard
// input and output.
func localRun(t *testing.T) streamFunc {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		testutil.SkipOrFail(t, "no python3 on PATH: the tunnel's relay is a Python script, run here as the exec runs it in a Pod (Debian's python3; make test installs it)")
	}
	return func(ctx context.Context, command []string, stdin io.Reader, stdout, stderr io.Writer) error {
		c := exec.CommandContext(ctx, command[0], command[1:]...)
		c.Stdout, c.Stderr = stdout, stderr
		c.WaitDelay = time.Second
		// As remotecommand does, standard input is copied by a goroutine
		// the command's end does not wait for (the tunnel closes the
		// connection it reads then).
		in, err := c.StdinPipe()
		if err != nil {
			return err
		}
		if err := c.Start(); err != nil {
			return err
		}
		go func() {
			io.Copy(in, stdin)
			in.Close()
		}()
		return c.Wait()
	}
}

// echoServer echoes each connection until the client closes it; it counts
// the connections that have ended.
func echoServer(t *testing.T) (addr string, port int, served func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	n := 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
				mu.Lock()
				n++
				mu.Unlock()
			}()
		}
	}()
	a := ln.Addr().(*net.TCPAddr)
	return a.IP.String(), a.Port, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func TestTunnelRelaysBytesBothWays(t *testing.T) {
	ip, port, served := echoServer(t)
	var errs []error
	var mu sync.Mutex
	tun, err := openTunnel(t.Context(), localRun(t), "pod-a", "ray-head", ip, port, 0, func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	if !strings.HasPrefix(tun.Addr(), "127.0.0.1:") || tun.LocalPort == 0 {
		t.Fatalf("Addr %q LocalPort %d: want a port on 127.0.0.1", tun.Addr(), tun.LocalPort)
	}
	payload := make([]byte, 1<<20)
	rand.Read(payload)
	for i := range 256 {
		payload[i] = byte(i) // every byte value, 0 and \n and \r among them
	}
	// Two connections at once, each its own relay.
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", tun.Addr())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			go c.Write(payload)
			c.SetDeadline(time.Now().Add(30 * time.Second))
			got := make([]byte, len(payload))
			if _, err := io.ReadFull(c, got); err != nil {
				t.Errorf("connection %d: %v", i, err)
			}
			if !bytes.Equal(got, payload) {
				t.Errorf("connection %d: got %d bytes back, want the %d sent, the same", i, len(got), len(payload))
			}
		}()
	}
	wg.Wait()
	// The clients closed: each relay closes its connection to the server
	// (which counts it then) and ends.
	deadline := time.Now().Add(10 * time.Second)
	for served() != 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := served(); n != 2 {
		t.Errorf("the server saw %d connections closed after the clients left, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Errorf("errors reported: %v", errs)
	}
}

func TestTunnelReportsARefusedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	got := make(chan error, 1)
	tun, err := openTunnel(t.Context(), localRun(t), "pod-a", "ray-worker", "127.0.0.1", port, 0, func(err error) { got <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	c, err := net.Dial("tcp", tun.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if b, err := io.ReadAll(c); err != nil || len(b) != 0 {
		t.Errorf("read %q, %v: want the connection closed with nothing", b, err)
	}
	select {
	case err := <-got:
		msg := err.Error()
		for _, want := range []string{"Pod pod-a container ray-worker", "127.0.0.1:" + strconv.Itoa(port), "ConnectionRefusedError"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q lacks %q", msg, want)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no error reported for a refused port")
	}
}

func TestTunnelCloseEndsOpenConnections(t *testing.T) {
	ip, port, _ := echoServer(t)
	tun, err := openTunnel(t.Context(), localRun(t), "pod-a", "ray-head", ip, port, 0, func(err error) { t.Errorf("reported after Close: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", tun.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo: %q, %v", buf, err)
	}
	done := make(chan struct{})
	go func() { tun.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return with a connection open")
	}
	if _, err := c.Read(buf); err == nil {
		t.Error("the connection is still open after Close")
	}
	if _, err := net.DialTimeout("tcp", tun.Addr(), time.Second); err == nil {
		t.Error("the tunnel still listens after Close")
	}
}

func TestTunnelReportsAnExecThatFails(t *testing.T) {
	got := make(chan error, 1)
	refused := errors.New(`pods "pod-a" is forbidden: User "dev" cannot create resource "pods/exec"`)
	run := func(ctx context.Context, _ []string, _ io.Reader, _, _ io.Writer) error { return refused }
	tun, err := openTunnel(t.Context(), run, "pod-a", "ray-head", "10.0.0.5", 41000, 0, func(err error) { got <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	c, err := net.Dial("tcp", tun.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case err := <-got:
		if !errors.Is(err, refused) || !strings.Contains(err.Error(), "10.0.0.5:41000") {
			t.Errorf("got %v: want the exec's error, wrapped, naming the address", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no error reported")
	}
}

func TestTunnelRefusesABusyLocalPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, err = openTunnel(t.Context(), nil, "pod-a", "ray-head", "10.0.0.5", 41000, port, nil)
	if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), "Pod pod-a") {
		t.Errorf("got %v: want the bind error naming the Pod", err)
	}
}

// TestTunnelReleaseKeepsOpenConnections: a released tunnel takes no new
// connection, and the one open through it goes on (Ray stops listing a
// task as paused once a client attached: that client must not be cut).
func TestTunnelReleaseKeepsOpenConnections(t *testing.T) {
	ip, port, _ := echoServer(t)
	tun, err := openTunnel(t.Context(), localRun(t), "pod-a", "ray-head", ip, port, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	c, err := net.Dial("tcp", tun.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	echo := func(msg string) {
		t.Helper()
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
			t.Fatalf("echo %q: %q, %v", msg, buf, err)
		}
	}
	echo("before")
	tun.Release()
	echo("after the release")
	if conn, err := net.DialTimeout("tcp", tun.Addr(), time.Second); err == nil {
		conn.Close()
		t.Error("a released tunnel still takes new connections")
	}
	tun.Close()
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("Close left the connection open")
	}
}
