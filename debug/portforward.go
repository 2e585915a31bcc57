package debug

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	streamhttp "k8s.io/streaming/pkg/httpstream"
)

// Forward is one port-forward to a Pod through the API server: a local
// listener on 127.0.0.1 whose connections reach the Pod's port.
type Forward struct {
	Pod       string
	PodPort   int
	LocalPort int
	stop      chan struct{}
	done      chan error
}

// Addr is the local address, host:port.
func (f *Forward) Addr() string { return fmt.Sprintf("127.0.0.1:%d", f.LocalPort) }

// Close stops the forward and waits for it.
func (f *Forward) Close() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
}

// Done is closed (after its error is sent) when the forward ends: Close,
// or the connection to the API server was lost.
func (f *Forward) Done() <-chan error { return f.done }

// forwardTimeout bounds the setup of one port-forward.
const forwardTimeout = 30 * time.Second

// PortForward forwards a free local port on 127.0.0.1 to port of Pod pod
// in c's namespace, as kubectl port-forward does (WebSocket, else SPDY).
// localPort 0 picks a free port.
func (c *Cluster) PortForward(ctx context.Context, pod string, port, localPort int) (*Forward, error) {
	u := c.Core.PodSubresourceURL(c.Namespace, pod, "portforward", nil)
	transport, upgrader, err := spdy.RoundTripperFor(c.Config)
	if err != nil {
		return nil, fmt.Errorf("port-forward to Pod %s: %w", pod, err)
	}
	spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	dialer := spdyDialer
	if ws, err := portforward.NewSPDYOverWebsocketDialer(u, c.Config); err == nil {
		// The WebSocket round tripper reports a refused upgrade with
		// k8s.io/streaming's error type, which kubectl tests the same way.
		dialer = portforward.NewFallbackDialer(ws, spdyDialer, func(err error) bool {
			return streamhttp.IsUpgradeFailure(err) || streamhttp.IsHTTPSProxyError(err)
		})
	}
	f := &Forward{Pod: pod, PodPort: port, stop: make(chan struct{}), done: make(chan error, 1)}
	ready := make(chan struct{})
	errOut := &lineWriter{}
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("%d:%d", localPort, port)}, f.stop, ready, io.Discard, errOut)
	if err != nil {
		return nil, fmt.Errorf("port-forward to Pod %s port %d: %w", pod, port, err)
	}
	go func() {
		err := pf.ForwardPorts()
		f.done <- err
		close(f.done)
	}()
	timer := time.NewTimer(forwardTimeout)
	defer timer.Stop()
	select {
	case <-ready:
	case err := <-f.done:
		if err == nil {
			err = errors.New("ended before it was ready")
		}
		return nil, fmt.Errorf("port-forward to Pod %s port %d in namespace %s: %w%s", pod, port, c.Namespace, err, errOut.suffix())
	case <-timer.C:
		close(f.stop)
		<-f.done
		return nil, fmt.Errorf("port-forward to Pod %s port %d in namespace %s: not ready after %s%s", pod, port, c.Namespace, forwardTimeout, errOut.suffix())
	case <-ctx.Done():
		close(f.stop)
		<-f.done
		return nil, context.Cause(ctx)
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		f.Close()
		return nil, fmt.Errorf("port-forward to Pod %s port %d: no local port: %v", pod, port, err)
	}
	f.LocalPort = int(ports[0].Local)
	return f, nil
}

// lineWriter keeps the last lines client-go's port-forward writes about
// failed connections.
type lineWriter struct {
	mu    sync.Mutex
	lines []string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			w.lines = append(w.lines, l)
		}
	}
	if len(w.lines) > 5 {
		w.lines = w.lines[len(w.lines)-5:]
	}
	return len(p), nil
}

func (w *lineWriter) suffix() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.lines) == 0 {
		return ""
	}
	return ": " + strings.Join(w.lines, "; ")
}
