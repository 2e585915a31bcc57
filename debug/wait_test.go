package debug

import (
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var elapsed = regexp.MustCompile(`in the [0-9.]+m?s after`)

// TestWaitCodeServer: the session reports ready only once code-server
// answers its /healthz through the forward; at --ready-timeout, or
// codeServerMinWait after the head was Ready when that is later, it names
// what it waited for and the last answer.
func TestWaitCodeServer(t *testing.T) {
	defer func(d time.Duration) { codeServerMinWait = d }(codeServerMinWait)
	codeServerMinWait = 1500 * time.Millisecond
	for _, tc := range []struct {
		name     string
		failures int32         // answers before the first 200
		budget   time.Duration // what is left of --ready-timeout
		wantErr  string
		minGETs  int32
	}{
		{name: "answers at once", failures: 0, budget: 10 * time.Second},
		{name: "starting", failures: 2, budget: 10 * time.Second},
		{name: "starting, --ready-timeout used up by the head", failures: 1, budget: 0},
		{name: "never", failures: 1 << 30, budget: 0, minGETs: 2,
			wantErr: "timed out: code-server in the head Pod head-0 did not answer on port 8443 in the Ns after the Pod was Ready (GET /healthz: 503 Service Unavailable); its log: kubectl logs -n ns head-0 -c code-server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/healthz" {
					t.Errorf("GET %s, want /healthz", r.URL.Path)
				}
				if calls.Add(1) <= tc.failures {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				w.Write([]byte(`{"status":"alive"}`))
			}))
			defer srv.Close()
			_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
			local, _ := strconv.Atoi(port)
			f := &Forward{Pod: "head-0", PodPort: 8443, LocalPort: local, stop: make(chan struct{}), done: make(chan error, 1)}
			go func() { <-f.stop; close(f.done) }()
			defer func() {
				select {
				case <-f.stop:
				default:
					f.Close()
				}
			}()

			var waiting []string
			s := &session{
				o: Options{Timeout: tc.budget, SidecarName: "code-server"},
				c: &Cluster{Namespace: "ns"}, podLines: map[string]string{},
				readyBy: time.Now().Add(tc.budget),
				r: ReporterFunc(func(e Event) {
					if e.Kind == KindWaiting {
						waiting = append(waiting, e.Message)
					}
				}),
			}
			got, err := s.waitCodeServer(t.Context(), f)
			if tc.wantErr != "" {
				if err == nil || elapsed.ReplaceAllString(err.Error(), "in the Ns after") != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if n := calls.Load(); n < tc.minGETs {
					t.Errorf("%d GETs before giving up, want at least %d", n, tc.minGETs)
				}
				select {
				case <-f.stop:
				default:
					t.Error("the forward was left open after the wait failed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != f {
				t.Errorf("returned forward %+v, want the one given", got)
			}
			if n := calls.Load(); n != tc.failures+1 {
				t.Errorf("%d GETs, want %d", n, tc.failures+1)
			}
			wantWaiting := 0
			if tc.failures > 0 {
				wantWaiting = 1 // reported once, not at every look
			}
			if len(waiting) != wantWaiting {
				t.Errorf("waiting events %q, want %d", waiting, wantWaiting)
			}
		})
	}
}
