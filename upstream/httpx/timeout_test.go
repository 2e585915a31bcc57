package httpx

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A steady but slow body (here 30 bytes, one every 20 ms: 600 ms in all) is
// read to the end although the per-attempt timeout (100 ms) is far shorter:
// that timeout bounds the wait for the headers, not the transfer.
func TestSlowSteadyBodyIsNotCut(t *testing.T) {
	body := strings.Repeat("x", 30)
	s, n := server(t, func(_ int32, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "30")
		w.WriteHeader(http.StatusOK)
		for i := range body {
			if _, err := io.WriteString(w, body[i:i+1]); err != nil {
				return
			}
			http.NewResponseController(w).Flush()
			time.Sleep(20 * time.Millisecond)
		}
	})
	c := New(WithTimeout(100*time.Millisecond), WithRetries(0))
	resp, err := Get(context.Background(), c, s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || string(got) != body {
		t.Fatalf("read %q, %v; want the whole slow body", got, err)
	}
	if n.Load() != 1 {
		t.Errorf("requests = %d, want 1", n.Load())
	}
}

// A body that stops sending fails after the idle timeout with an
// *IdleTimeoutError (a net.Error timeout), not after the server gives up.
func TestStalledBodyFailsAfterIdleTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s, _ := server(t, func(_ int32, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, strings.Repeat("x", 50))
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	c := New(WithIdleTimeout(150*time.Millisecond), WithRetries(0))
	resp, err := Get(context.Background(), c, s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	got, err := io.ReadAll(resp.Body)
	var ie *IdleTimeoutError
	var ne net.Error
	if !errors.As(err, &ie) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v (%T), want an *IdleTimeoutError", err, err)
	}
	if len(got) != 50 {
		t.Errorf("read %d bytes before the stall, want 50", len(got))
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("failed after %v, want about the idle timeout", el)
	}
	if !strings.Contains(err.Error(), "--idle-timeout") {
		t.Errorf("err = %v, want it to name the flag that changes it", err)
	}
}

// The caller's context still ends a body read at once, and the error is the
// context's, not an idle timeout.
func TestContextEndsBodyRead(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s, _ := server(t, func(_ int32, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "x")
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := Get(ctx, New(), s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = io.ReadAll(resp.Body)
	var ie *IdleTimeoutError
	if !errors.Is(err, context.Canceled) || errors.As(err, &ie) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
