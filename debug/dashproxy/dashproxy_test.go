package dashproxy_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/imagectl/imagectl/debug/dashboard"
	fakedash "github.com/imagectl/imagectl/debug/dashboard/dashboardtest"
	"github.com/imagectl/imagectl/debug/dashproxy"
	"github.com/imagectl/imagectl/internal/syncbuf"
)

// tunneler is a fake Tunneler: it records every call and gives each worker
// its own port on 127.0.0.1, the same one on every call.
type tunneler struct {
	mu    sync.Mutex
	calls []dashproxy.Worker
	ports map[string]int
	fail  map[string]error // by worker ID
	// block makes Tunnel wait for the context to end, then send its error
	// on block.
	block chan error
}

func (f *tunneler) failFor(errs map[string]error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = errs
}

func (f *tunneler) Tunnel(ctx context.Context, w dashproxy.Worker) (string, int, error) {
	f.mu.Lock()
	f.calls = append(f.calls, w)
	err, block := f.fail[w.WorkerID], f.block
	f.mu.Unlock()
	if block != nil {
		<-ctx.Done()
		block <- ctx.Err()
		return "", 0, ctx.Err()
	}
	if err != nil {
		return "", 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ports == nil {
		f.ports = map[string]int{}
	}
	if f.ports[w.WorkerID] == 0 {
		f.ports[w.WorkerID] = 40001 + len(f.ports)
	}
	return "127.0.0.1", f.ports[w.WorkerID], nil
}

// called returns the IDs of the workers Tunnel was called for, and forgets
// them.
func (f *tunneler) called() []string {
	var ids []string
	for _, w := range f.workers() {
		ids = append(ids, w.WorkerID)
	}
	return ids
}

// workers returns the workers Tunnel was called for, and forgets them.
func (f *tunneler) workers() []dashproxy.Worker {
	f.mu.Lock()
	defer f.mu.Unlock()
	ws := f.calls
	f.calls = nil
	return ws
}

func (f *tunneler) port(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ports[id]
}

// env is a fake dashboard, served through wrap when set, and the proxy in
// front of it.
type env struct {
	fake     *fakedash.Server
	upstream string
	proxy    string
	tun      *tunneler
	// stop closes the upstream.
	stop func()
}

func newEnv(t *testing.T, wrap func(http.Handler) http.Handler, opts ...dashproxy.Option) *env {
	t.Helper()
	e := &env{fake: fakedash.New(), tun: &tunneler{}}
	t.Cleanup(e.fake.Close)
	e.upstream, e.stop = e.fake.URL, e.fake.Close
	if wrap != nil {
		up := httptest.NewServer(wrap(e.fake.Config.Handler))
		t.Cleanup(up.Close)
		e.upstream, e.stop = up.URL, up.Close
	}
	p, err := dashproxy.New(e.upstream, e.tun, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	e.proxy = srv.URL
	return e
}

func client(t *testing.T, base string) *dashboard.Client {
	t.Helper()
	c, err := dashboard.New(base, dashboard.WithHTTPClient(&http.Client{Timeout: 20 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// answer is what a client sees of an HTTP answer.
type answer struct {
	Status          int
	ContentType     string
	ContentEncoding string
	ContentLength   int64
	Body            string
}

// fetch sends a request without transparent decompression.
func fetch(t *testing.T, method, url string, body []byte, header http.Header) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 20 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"), resp.ContentLength, string(b)}
}

// decode reads a JSON document keeping numbers' text.
func decode(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

// pointAt changes, in a decoded workers answer, the rows of the given
// workers to 127.0.0.1 and their port.
func pointAt(t *testing.T, doc any, ports map[string]int) any {
	t.Helper()
	rows := doc.(map[string]any)["data"].(map[string]any)["result"].(map[string]any)["result"].([]any)
	for _, r := range rows {
		row := r.(map[string]any)
		if p, ok := ports[row["worker_id"].(string)]; ok {
			row["ip"] = "127.0.0.1"
			row["debugger_port"] = json.Number(strconv.Itoa(p))
		}
	}
	return doc
}

func clientPointAt(ws []dashboard.Worker, ports map[string]int) []dashboard.Worker {
	for i := range ws {
		if p, ok := ports[ws[i].WorkerID]; ok {
			ws[i].IP, ws[i].DebuggerPort = "127.0.0.1", p
		}
	}
	return ws
}

// workers are the rows the tests list: a (a paused worker), d (a paused
// driver), b (not paused), c (paused but dead), e (paused, no debugger
// port), f (paused, no IP), g (resumed: a debugger port, no paused thread).
var workers = []fakedash.Worker{
	{WorkerID: "a", IsAlive: true, WorkerType: "WORKER", NodeID: "n1", IP: "10.0.0.5", PID: 123, WorkerLaunchTime: 1764331200123456789, StartTimeMS: 1764331200123, DebuggerPort: 50001, NumPausedThreads: 1},
	{WorkerID: "b", IsAlive: true, WorkerType: "WORKER", NodeID: "n1", IP: "10.0.0.5", PID: 124, WorkerLaunchTime: 1764331200123456790},
	{WorkerID: "c", IsAlive: false, WorkerType: "WORKER", NodeID: "n2", IP: "10.0.0.6", PID: 125, ExitType: "SYSTEM_ERROR", ExitDetail: "<killed> & gone", DebuggerPort: 50003, NumPausedThreads: 1},
	{WorkerID: "d", IsAlive: true, WorkerType: "DRIVER", NodeID: "n2", IP: "10.0.0.6", PID: 126, DebuggerPort: 50002, NumPausedThreads: 2},
	{WorkerID: "e", IsAlive: true, WorkerType: "WORKER", NodeID: "n2", IP: "10.0.0.6", PID: 127, NumPausedThreads: 1},
	{WorkerID: "f", IsAlive: true, WorkerType: "WORKER", NodeID: "n2", PID: 128, DebuggerPort: 50004, NumPausedThreads: 1},
	{WorkerID: "g", IsAlive: true, WorkerType: "WORKER", NodeID: "n2", IP: "10.0.0.6", PID: 129, DebuggerPort: 50005},
}

func TestPausedRowsPointAtTunnels(t *testing.T) {
	e := newEnv(t, nil)
	e.fake.SetWorkers(workers...)
	direct, proxied := client(t, e.upstream), client(t, e.proxy)
	ctx := t.Context()
	one := func(id string) func(*dashboard.Client) ([]dashboard.Worker, error) {
		return func(c *dashboard.Client) ([]dashboard.Worker, error) {
			w, err := c.Worker(ctx, id)
			if w == nil {
				return nil, err
			}
			return []dashboard.Worker{*w}, err
		}
	}
	for _, tc := range []struct {
		name    string
		query   string
		list    func(*dashboard.Client) ([]dashboard.Worker, error)
		tunnels []string
	}{
		{"paused workers", dashboard.PausedWorkersQuery, func(c *dashboard.Client) ([]dashboard.Worker, error) { return c.PausedWorkers(ctx) }, []string{"a", "d"}},
		{"paused worker", dashboard.WorkerQuery("a"), one("a"), []string{"a"}},
		{"paused driver", dashboard.WorkerQuery("d"), one("d"), []string{"d"}},
		{"worker not paused", dashboard.WorkerQuery("b"), one("b"), nil},
		{"dead worker", dashboard.WorkerQuery("c"), one("c"), nil},
		{"no debugger port", dashboard.WorkerQuery("e"), one("e"), nil},
		{"no IP", dashboard.WorkerQuery("f"), one("f"), nil},
		{"resumed worker", dashboard.WorkerQuery("g"), one("g"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := fetch(t, "GET", e.upstream+"/api/v0/workers?"+tc.query, nil, nil)
			e.tun.called()
			got := fetch(t, "GET", e.proxy+"/api/v0/workers?"+tc.query, nil, nil)
			var wantCalls []dashproxy.Worker
			for _, id := range tc.tunnels {
				for _, w := range workers {
					if w.WorkerID == id {
						wantCalls = append(wantCalls, dashproxy.Worker{WorkerID: w.WorkerID, IP: w.IP, DebuggerPort: w.DebuggerPort, NumPausedThreads: w.NumPausedThreads, WorkerType: w.WorkerType})
					}
				}
			}
			if diff := cmp.Diff(wantCalls, e.tun.workers()); diff != "" {
				t.Errorf("Tunnel calls (-want +got):\n%s", diff)
			}
			ports := map[string]int{}
			for _, id := range tc.tunnels {
				ports[id] = e.tun.port(id)
			}
			if diff := cmp.Diff(pointAt(t, decode(t, up.Body), ports), decode(t, got.Body)); diff != "" {
				t.Errorf("answer through the proxy (-want +got):\n%s", diff)
			}
			if got.ContentLength != int64(len(got.Body)) || got.ContentType != up.ContentType {
				t.Errorf("Content-Length %d for %d bytes, Content-Type %q, want %q", got.ContentLength, len(got.Body), got.ContentType, up.ContentType)
			}
			want, err := tc.list(direct)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := tc.list(proxied)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(clientPointAt(want, ports), rows); diff != "" {
				t.Errorf("the extension's view through the proxy (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRewriteKeepsTheRestOfTheText: only ip and debugger_port of a paused
// row change; the other members keep their text and order.
func TestRewriteKeepsTheRestOfTheText(t *testing.T) {
	e := newEnv(t, nil)
	e.fake.SetWorkers(workers[:3]...)
	up := fetch(t, "GET", e.upstream+"/api/v0/workers", nil, nil)
	got := fetch(t, "GET", e.proxy+"/api/v0/workers", nil, nil)
	// Row a comes first, and its members in alphabetical order.
	want := strings.Replace(up.Body, `"ip":"10.0.0.5"`, `"ip":"127.0.0.1"`, 1)
	want = strings.Replace(want, `"debugger_port":50001`, `"debugger_port":40001`, 1)
	if want == up.Body {
		t.Fatalf("the fake's answer changed shape: %s", up.Body)
	}
	// The fake writes a trailing newline after the envelope; the proxy
	// writes the envelope alone.
	if diff := cmp.Diff(strings.TrimSuffix(want, "\n"), got.Body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func gzipping(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(rec.Body.Bytes())
		zw.Close()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		w.WriteHeader(rec.Code)
		w.Write(b.Bytes())
	})
}

func TestPassesThroughByteForByte(t *testing.T) {
	paused := func(e *env) { e.fake.SetWorkers(workers...) }
	serve := func(status int, contentType, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	pausedRow := `{"worker_id":"a","is_alive":true,"ip":"10.0.0.5","debugger_port":50001,"num_paused_threads":1}`
	gz := http.Header{"Accept-Encoding": {"gzip"}}
	for _, tc := range []struct {
		name   string
		setup  func(*env)
		serve  http.HandlerFunc // answers instead of the fake
		gzip   bool             // the dashboard compresses
		method string
		uri    string
		body   string
		header http.Header
		calls  []string // Tunnel calls
	}{
		{name: "cluster id", uri: "/cluster_id"},
		{name: "cluster id compressed", gzip: true, uri: "/cluster_id", header: gz},
		{name: "cluster id, client takes no gzip", gzip: true, uri: "/cluster_id"},
		{name: "running tasks", setup: func(e *env) {
			paused(e)
			e.fake.SetTasks(fakedash.Task{TaskID: "t1", Name: "f", State: "RUNNING", JobID: "01000000", Type: "NORMAL_TASK", WorkerID: "a", FuncOrClassName: "f"})
		}, uri: "/api/v0/tasks?" + dashboard.RunningTasksQuery("a")},
		{name: "running tasks compressed", setup: paused, gzip: true, uri: "/api/v0/tasks?" + dashboard.RunningTasksQuery("a"), header: gz},
		{name: "no paused workers", setup: func(e *env) { e.fake.SetWorkers(workers[1], workers[2]) }, uri: "/api/v0/workers?" + dashboard.PausedWorkersQuery},
		{name: "worker not paused", setup: paused, uri: "/api/v0/workers?" + dashboard.WorkerQuery("b")},
		{name: "every tunnel fails", setup: func(e *env) {
			paused(e)
			e.tun.failFor(map[string]error{"a": errors.New("no route"), "d": errors.New("no route")})
		}, uri: "/api/v0/workers?" + dashboard.PausedWorkersQuery, calls: []string{"a", "d"}},
		{name: "HTML", setup: func(e *env) { paused(e); e.fake.SetMode(fakedash.HTML) }, uri: "/api/v0/workers?" + dashboard.PausedWorkersQuery},
		{name: "result false", setup: func(e *env) { paused(e); e.fake.SetMode(fakedash.ResultFalse) }, uri: "/api/v0/workers?" + dashboard.PausedWorkersQuery},
		{name: "500", setup: func(e *env) { paused(e); e.fake.SetMode(fakedash.ServerError) }, uri: "/api/v0/workers?" + dashboard.PausedWorkersQuery},
		{name: "malformed JSON", serve: serve(200, "application/json", `{"result": true, "msg": "", "data": {"result": {"total": 1, "result": [`+pausedRow+`]}}`), uri: "/api/v0/workers"},
		{name: "trailing data", serve: serve(200, "application/json", `{"result": true, "msg": "", "data": {"result": {"total": 1, "result": [`+pausedRow+`]}}} x`), uri: "/api/v0/workers"},
		{name: "not a list", serve: serve(200, "application/json", `{"result": true, "msg": "", "data": {"result": `+pausedRow+`}}`), uri: "/api/v0/workers"},
		{name: "not JSON", serve: serve(200, "text/plain", `{"result": true, "msg": "", "data": {"result": {"total": 1, "result": [`+pausedRow+`]}}}`), uri: "/api/v0/workers"},
		{name: "404", serve: serve(404, "application/json", `{"result": true, "msg": "", "data": {"result": {"total": 1, "result": [`+pausedRow+`]}}}`), uri: "/api/v0/workers"},
		{name: "POST to workers", serve: serve(200, "application/json", `{"result": true, "msg": "", "data": {"result": {"total": 1, "result": [`+pausedRow+`]}}}`), method: "POST", uri: "/api/v0/workers"},
		{name: "version", uri: "/api/version"},
		{name: "jobs", uri: "/api/jobs/"},
		{name: "unknown job", uri: "/api/jobs/raysubmit_nope"},
		{name: "package upload", method: "PUT", uri: "/api/packages/gcs/_ray_pkg_0123456789abcdef.zip", body: "PK\x03\x04 not really a zip"},
		{name: "unknown path", uri: "/nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wrap := func(h http.Handler) http.Handler {
				if tc.serve != nil {
					return tc.serve
				}
				if tc.gzip {
					return gzipping(h)
				}
				return h
			}
			e := newEnv(t, wrap)
			if tc.setup != nil {
				tc.setup(e)
			}
			method := tc.method
			if method == "" {
				method = "GET"
			}
			want := fetch(t, method, e.upstream+tc.uri, []byte(tc.body), tc.header)
			got := fetch(t, method, e.proxy+tc.uri, []byte(tc.body), tc.header)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answer through the proxy (-direct +proxied):\n%s", diff)
			}
			if diff := cmp.Diff(tc.calls, e.tun.called()); diff != "" {
				t.Errorf("Tunnel calls (-want +got):\n%s", diff)
			}
			if tc.body != "" {
				if pkg, _ := e.fake.Package("gcs://_ray_pkg_0123456789abcdef.zip"); string(pkg) != tc.body {
					t.Errorf("uploaded package %q, want %q", pkg, tc.body)
				}
			}
		})
	}
}

// TestCompressedWorkersAreRewritten: the proxy asks for an
// identity-encoded workers answer even when the client accepts gzip.
func TestCompressedWorkersAreRewritten(t *testing.T) {
	e := newEnv(t, gzipping)
	e.fake.SetWorkers(workers...)
	got := fetch(t, "GET", e.proxy+"/api/v0/workers?"+dashboard.WorkerQuery("a"), nil, http.Header{"Accept-Encoding": {"gzip"}})
	if got.ContentEncoding != "" || !strings.Contains(got.Body, `"ip":"127.0.0.1"`) {
		t.Errorf("got Content-Encoding %q and %s, want a rewritten identity answer", got.ContentEncoding, got.Body)
	}
}

func TestStreamsAnswers(t *testing.T) {
	e := newEnv(t, nil)
	release := make(chan struct{})
	e.fake.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		io.WriteString(w, "second\n")
	})
	var once sync.Once
	done := func() { once.Do(func() { close(release) }) }
	defer done()
	// A proxy that buffers sends nothing before the answer ends: the
	// request is cancelled then.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", e.proxy+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		s   string
		err error
	}
	first := make(chan line, 1)
	var br *bufio.Reader
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- line{err: err}
			return
		}
		br = bufio.NewReader(resp.Body)
		l, err := br.ReadString('\n')
		first <- line{l, err}
	}()
	select {
	case l := <-first:
		if l.s != "first\n" || l.err != nil {
			t.Fatalf("first line %q, %v", l.s, l.err)
		}
	case <-time.After(10 * time.Second):
		cancel()
		<-first
		t.Fatal("the first chunk did not come through before the answer ended: the proxy buffers")
	}
	done()
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "second\n" {
		t.Errorf("rest %q, %v", rest, err)
	}
}

type tunnelError struct {
	W   dashproxy.Worker
	Err error
}

func TestTunnelErrorLeavesRowUnchanged(t *testing.T) {
	var mu sync.Mutex
	var got []tunnelError
	errNoRoute := errors.New("no route to the pod")
	e := newEnv(t, nil, dashproxy.WithErrorFunc(func(w dashproxy.Worker, err error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, tunnelError{w, err})
	}))
	e.fake.SetWorkers(workers...)
	e.tun.failFor(map[string]error{"a": errNoRoute})
	want, err := client(t, e.upstream).PausedWorkers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := client(t, e.proxy).PausedWorkers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(clientPointAt(want, map[string]int{"d": e.tun.port("d")}), rows); diff != "" {
		t.Errorf("paused workers (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	wantErrs := []tunnelError{{dashproxy.Worker{WorkerID: "a", IP: "10.0.0.5", DebuggerPort: 50001, NumPausedThreads: 1, WorkerType: "WORKER"}, errNoRoute}}
	if diff := cmp.Diff(wantErrs, got, cmpopts.EquateErrors()); diff != "" {
		t.Errorf("error func calls (-want +got):\n%s", diff)
	}
}

func TestHeaderReachesUpstreamAndNoLog(t *testing.T) {
	const secret = "Bearer s3cr3t-t0ken-do-not-log"
	requireToken := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != secret {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	for _, tc := range []struct {
		name       string
		opts       []dashproxy.Option
		wantStatus int
	}{
		{"without the header", nil, http.StatusUnauthorized},
		{"with the header", []dashproxy.Option{dashproxy.WithHeader("Authorization", secret)}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs, errs syncbuf.Buffer
			opts := append(tc.opts,
				dashproxy.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
				dashproxy.WithErrorFunc(func(_ dashproxy.Worker, err error) { fmt.Fprintln(&errs, err) }))
			e := newEnv(t, requireToken, opts...)
			e.fake.SetWorkers(workers...)
			e.tun.failFor(map[string]error{"d": errors.New("no route")})
			for _, uri := range []string{"/cluster_id", "/api/v0/workers?" + dashboard.PausedWorkersQuery, "/api/v0/tasks?" + dashboard.RunningTasksQuery("a")} {
				if got := fetch(t, "GET", e.proxy+uri, nil, nil); got.Status != tc.wantStatus {
					t.Errorf("GET %s: %d %s, want %d", uri, got.Status, got.Body, tc.wantStatus)
				}
			}
			// An upstream that is down logs too.
			e.stop()
			if got := fetch(t, "GET", e.proxy+"/cluster_id", nil, nil); got.Status != http.StatusBadGateway || strings.Contains(got.Body, "s3cr3t") {
				t.Errorf("with the dashboard down: %d %s", got.Status, got.Body)
			}
			if tc.wantStatus == http.StatusOK && !strings.Contains(logs.String(), "worker_id=a") {
				t.Errorf("the rewrite was not logged:\n%s", logs.String())
			}
			if tc.wantStatus == http.StatusOK && !strings.Contains(errs.String(), "no route") {
				t.Errorf("the tunnel failure was not reported: %q", errs.String())
			}
			for _, s := range []string{errs.String(), logs.String()} {
				if strings.Contains(s, "s3cr3t") {
					t.Errorf("the header's value is logged:\n%s", s)
				}
			}
		})
	}
}

func TestTwoPausedWorkersTwoTunnels(t *testing.T) {
	e := newEnv(t, nil)
	e.fake.SetWorkers(workers[0], workers[3])
	c := client(t, e.proxy)
	for i := range 2 {
		rows, err := c.PausedWorkers(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, fmt.Sprintf("%s %s:%d", r.WorkerID, r.IP, r.DebuggerPort))
		}
		if diff := cmp.Diff([]string{"a 127.0.0.1:40001", "d 127.0.0.1:40002"}, got); diff != "" {
			t.Errorf("request %d: paused workers (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff([]string{"a", "d"}, e.tun.called()); diff != "" {
			t.Errorf("request %d: Tunnel calls (-want +got):\n%s", i, diff)
		}
	}
}

func TestUpstreamDownIs502(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upstream := "http://" + l.Addr().String()
	l.Close()
	p, err := dashproxy.New(upstream, &tunneler{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	for _, tc := range []struct{ method, uri string }{
		{"GET", "/cluster_id"},
		{"GET", "/api/v0/workers?" + dashboard.PausedWorkersQuery},
		{"POST", "/api/jobs/"},
	} {
		got := fetch(t, tc.method, srv.URL+tc.uri, []byte("{}"), nil)
		if got.Status != http.StatusBadGateway || !strings.Contains(got.Body, upstream) {
			t.Errorf("%s %s: %d %q, want 502 naming %s", tc.method, tc.uri, got.Status, got.Body, upstream)
		}
	}
}

func TestLargeWorkersAnswerIs502(t *testing.T) {
	e := newEnv(t, nil, dashproxy.WithMaxBody(300))
	e.fake.SetWorkers(workers...)
	got := fetch(t, "GET", e.proxy+"/api/v0/workers?"+dashboard.PausedWorkersQuery, nil, nil)
	if want := e.upstream + "/api/v0/workers?"; got.Status != http.StatusBadGateway || !strings.Contains(got.Body, want) || !strings.Contains(got.Body, "limit of 300 bytes") {
		t.Errorf("got %d %q, want 502 naming %s and the limit", got.Status, got.Body, want)
	}
	// Other answers are not decoded, so not bounded.
	uri := "/api/v0/tasks?limit=100"
	e.fake.SetTasks(fakedash.Task{TaskID: strings.Repeat("t", 1000)})
	if want, got := fetch(t, "GET", e.upstream+uri, nil, nil), fetch(t, "GET", e.proxy+uri, nil, nil); !cmp.Equal(want, got) {
		t.Errorf("GET %s through the proxy: %+v, want %+v", uri, got, want)
	}
}

// TestCancelledRequestEndsTunnel: a client that gives up cancels the
// Tunnel call, which is not reported as a tunnel failure.
func TestCancelledRequestEndsTunnel(t *testing.T) {
	reported := make(chan dashproxy.Worker, 1)
	e := newEnv(t, nil, dashproxy.WithErrorFunc(func(w dashproxy.Worker, _ error) { reported <- w }))
	e.fake.SetWorkers(workers[0])
	e.tun.block = make(chan error, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := client(t, e.proxy).PausedWorkers(ctx); err == nil {
		t.Fatal("PausedWorkers succeeded with a Tunnel that never answers")
	}
	select {
	case err := <-e.tun.block:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Tunnel's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Tunnel still runs 10s after the client gave up")
	}
	select {
	case w := <-reported:
		t.Errorf("cancellation reported as a tunnel failure of %+v", w)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestNewRejects(t *testing.T) {
	for _, tc := range []struct {
		name     string
		upstream string
		t        dashproxy.Tunneler
		opts     []dashproxy.Option
		want     string
	}{
		{"no scheme", "127.0.0.1:8265", &tunneler{}, nil, `upstream "127.0.0.1:8265"`},
		{"other scheme", "ftp://127.0.0.1:8265", &tunneler{}, nil, "expected http://host:port"},
		{"no host", "http://", &tunneler{}, nil, "expected http://host:port"},
		{"bad URL", "http://[::1", &tunneler{}, nil, "missing ']'"},
		{"no tunneler", "http://127.0.0.1:8265", nil, nil, "no Tunneler"},
		{"no body", "http://127.0.0.1:8265", &tunneler{}, []dashproxy.Option{dashproxy.WithMaxBody(0)}, "must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dashproxy.New(tc.upstream, tc.t, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(%q) = %v, want an error containing %q", tc.upstream, err, tc.want)
			}
		})
	}
}
