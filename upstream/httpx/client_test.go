package httpx

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"3", 3 * time.Second, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	}
	for _, tc := range tests {
		got, ok := RetryAfter(tc.in, now)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

// server answers with the statuses in order (the last one repeats) and
// counts requests.
func server(t *testing.T, handle func(n int32, w http.ResponseWriter, r *http.Request)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handle(n.Add(1), w, r)
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func TestRetryAfterIsHonoured(t *testing.T) {
	s, n := server(t, func(n int32, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	})
	// Without Retry-After the backoff would wait at most 5ms.
	c := New(WithBackoff(time.Millisecond, 5*time.Millisecond))
	start := time.Now()
	resp, err := Get(context.Background(), c, s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := n.Load(); got != 2 {
		t.Errorf("requests = %d, want 2", got)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("retried after %v, want at least the Retry-After of 1s", d)
	}
}

func TestRetryAfterIsCapped(t *testing.T) {
	s, n := server(t, func(n int32, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{}`))
	})
	c := New(WithBackoff(time.Millisecond, 5*time.Millisecond), WithMaxRetryAfter(20*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := Get(ctx, c, s.URL, nil)
	if err != nil {
		t.Fatalf("want success after a capped wait, got %v", err)
	}
	resp.Body.Close()
	if got := n.Load(); got != 2 {
		t.Errorf("requests = %d, want 2", got)
	}
}

func TestGivesUpWithTheLastStatus(t *testing.T) {
	s, n := server(t, func(_ int32, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream is down", http.StatusBadGateway)
	})
	c := New(WithRetries(2), WithBackoff(time.Millisecond, 2*time.Millisecond))
	_, err := Get(context.Background(), c, s.URL+"/pypi/ray/json", nil)
	var se *StatusError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *StatusError", err)
	}
	if se.Status != http.StatusBadGateway || !strings.HasSuffix(se.URL, "/pypi/ray/json") || !strings.Contains(se.Error(), "upstream is down") {
		t.Errorf("StatusError = %+v (%q), want 502 naming the URL and the body", se, se.Error())
	}
	if got := n.Load(); got != 3 {
		t.Errorf("requests = %d, want 3 (one try and two retries)", got)
	}
}

func TestNotFoundIsNotRetried(t *testing.T) {
	s, n := server(t, func(_ int32, w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
	})
	c := New(WithRetries(3), WithBackoff(time.Millisecond, 2*time.Millisecond))
	_, err := Get(context.Background(), c, s.URL, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusNotFound {
		t.Fatalf("err = %v, want a 404 StatusError", err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("requests = %d, want 1: a 404 is final", got)
	}
}

func TestPerAttemptTimeout(t *testing.T) {
	release := make(chan struct{})
	s, n := server(t, func(_ int32, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c := New(WithTimeout(50*time.Millisecond), WithRetries(1), WithBackoff(time.Millisecond, 2*time.Millisecond))
	_, err := Get(context.Background(), c, s.URL, nil)
	if err == nil || !strings.Contains(err.Error(), "giving up after 2 attempt(s)") {
		t.Fatalf("err = %v, want giving up after 2 attempts", err)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("requests = %d, want 2", got)
	}
}

func TestContextStopsRetries(t *testing.T) {
	s, n := server(t, func(_ int32, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Get(ctx, New(), s.URL, nil)
	if err == nil {
		t.Fatal("want an error when the context ends during a Retry-After wait")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned after %v: the context did not stop the 30s wait", d)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("requests = %d, want 1", got)
	}
}

func TestUserAgent(t *testing.T) {
	var got atomic.Value
	s, _ := server(t, func(_ int32, w http.ResponseWriter, r *http.Request) { got.Store(r.Header.Get("User-Agent")) })
	resp, err := Get(context.Background(), New(WithUserAgent("imagectl/test")), s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got.Load() != "imagectl/test" {
		t.Errorf("User-Agent = %q, want imagectl/test", got.Load())
	}
}

func TestReadJSONBody(t *testing.T) {
	const url = "https://pypi.example/pypi/ray/json"
	tests := []struct {
		name, body, wantErr string
	}{
		{"json", `{"info":{}}`, ""},
		{"html with status 200", "\n  <!DOCTYPE html><html>captive portal</html>", "got an HTML page, expected JSON"},
		{"empty", "  \n", "empty body, expected JSON"},
		{"too large", `{"x":"` + strings.Repeat("a", 200) + `"}`, "body larger than 128 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ReadJSONBody(strings.NewReader(tc.body), url, 128)
			if tc.wantErr == "" {
				if err != nil || string(b) != tc.body {
					t.Fatalf("ReadJSONBody = %q, %v; want the body", b, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), url) {
				t.Fatalf("err = %v, want it to name %s and say %q", err, url, tc.wantErr)
			}
		})
	}
}

// roundTripFunc counts attempts and fails each with err.
type failingTransport struct {
	n   atomic.Int32
	err error
}

func (f *failingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	f.n.Add(1)
	return nil, f.err
}

// A name that does not resolve is final: one attempt, no backoff, and the
// URL appears once in the error.
func TestNoSuchHostIsFinal(t *testing.T) {
	const u = "https://marketplace.invalid/_apis/public/gallery/extensionquery"
	for _, tc := range []struct {
		name         string
		err          error
		wantAttempts int32
	}{
		{"no such host", &net.DNSError{Err: "no such host", Name: "marketplace.invalid", IsNotFound: true}, 1},
		{"temporary DNS failure is retried", &net.DNSError{Err: "server misbehaving", Name: "marketplace.invalid", IsTemporary: true}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &failingTransport{err: tc.err}
			c := New(WithTransport(ft), WithRetries(2), WithBackoff(time.Millisecond, time.Millisecond))
			_, err := Get(context.Background(), c, u, nil)
			if err == nil {
				t.Fatal("Get succeeded")
			}
			if got := ft.n.Load(); got != tc.wantAttempts {
				t.Errorf("attempts = %d, want %d (err %v)", got, tc.wantAttempts, err)
			}
			if n := strings.Count(err.Error(), "marketplace.invalid/_apis"); n != 1 {
				t.Errorf("error names the URL %d times, want once: %q", n, err)
			}
			if !strings.HasPrefix(err.Error(), "GET "+u+": ") {
				t.Errorf("error %q does not start with the method and URL", err)
			}
		})
	}
}
