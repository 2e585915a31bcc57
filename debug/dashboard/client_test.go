package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/imagectl/imagectl/debug/dashboard"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// The queries as the extension sends them (shared notes ray-debugger.md),
// written out here rather than taken from the package.
const (
	notesPausedWorkers = "limit=100&timeout=24&detail=True&filter_keys=num_paused_threads&filter_keys=is_alive&filter_predicates=%21%3D&filter_predicates=%3D&filter_values=0&filter_values=True&exclude_driver=True&server_timeout_multiplier=0.8"
	notesWorker        = "timeout=30&filter_keys=worker_id&filter_predicates=%3D&filter_values={id}&detail=True"
	// The notes elide parts of the tasks query ("...filter_keys=worker_id
	// &filter_keys=state...&filter_values={id}&filter_values=RUNNING"); the
	// whole of it as 0.1.6's dist/extension.js writes it (detail=False, and
	// drivers excluded as in the workers query).
	notesRunningTasks = "limit=100&timeout=24&detail=False&filter_keys=worker_id&filter_keys=state&filter_predicates=%3D&filter_predicates=%3D&filter_values={id}&filter_values=RUNNING&exclude_driver=True&server_timeout_multiplier=0.8"
)

// recorder is a dashboard answering body with status for every request and
// recording each request's path and raw query.
type recorder struct {
	mu     sync.Mutex
	reqs   []string
	status int
	ctype  string
	body   string
	// raw, when set, writes the response instead.
	raw func(w http.ResponseWriter)
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
	r.mu.Unlock()
	if r.raw != nil {
		r.raw(w)
		return
	}
	ct := r.ctype
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	st := r.status
	if st == 0 {
		st = http.StatusOK
	}
	w.WriteHeader(st)
	fmt.Fprint(w, r.body)
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reqs...)
}

// fastClient is the package's default client minus the waiting: one retry,
// short backoff.
func fastClient() *http.Client {
	return httpx.New(httpx.WithTimeout(5*time.Second), httpx.WithRetries(1), httpx.WithBackoff(time.Millisecond, 5*time.Millisecond))
}

func newClient(t *testing.T, base string) *dashboard.Client {
	t.Helper()
	c, err := dashboard.New(base, dashboard.WithHTTPClient(fastClient()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const emptyList = `{"result": true, "msg": "", "data": {"result": {"total": 0, "num_after_truncation": 0, "num_filtered": 0, "result": [], "partial_failure_warning": "", "warnings": null}}}`

func TestQueryStrings(t *testing.T) {
	// A worker id as Ray prints it (hex), and one that needs escaping, so
	// that the id is encoded exactly once.
	for _, id := range []string{"5b5a0f5b0b6d4c3d2e1f00aa11bb22cc33dd44ee55ff66778899aabb", "a b&c=d"} {
		t.Run(id, func(t *testing.T) {
			rec := &recorder{body: emptyList}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			c := newClient(t, srv.URL)
			ctx := context.Background()
			if _, err := c.PausedWorkers(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Worker(ctx, id); err != nil {
				t.Fatal(err)
			}
			if _, err := c.RunningTasks(ctx, id); err != nil {
				t.Fatal(err)
			}
			esc := strings.NewReplacer(" ", "+", "&", "%26", "=", "%3D").Replace(id)
			want := []string{
				"GET /api/v0/workers?" + notesPausedWorkers,
				"GET /api/v0/workers?" + strings.Replace(notesWorker, "{id}", esc, 1),
				"GET /api/v0/tasks?" + strings.Replace(notesRunningTasks, "{id}", esc, 1),
			}
			if diff := cmp.Diff(want, rec.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
	// The exported constants are the same strings.
	if dashboard.PausedWorkersQuery != notesPausedWorkers {
		t.Errorf("PausedWorkersQuery = %q, want %q", dashboard.PausedWorkersQuery, notesPausedWorkers)
	}
}

func TestBaseAddress(t *testing.T) {
	rec := &recorder{body: `{"result": true, "msg": "Fetched cluster id", "data": {"clusterId": "abc"}}`}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		base, wantPath string
	}{
		{host, "GET /cluster_id?"},                  // bare host:port, as clusterDashboards holds it
		{srv.URL + "/", "GET /cluster_id?"},         // trailing slash
		{srv.URL + "/ray/", "GET /ray/cluster_id?"}, // behind a path prefix
	} {
		rec.mu.Lock()
		rec.reqs = nil
		rec.mu.Unlock()
		c := newClient(t, tc.base)
		if id, err := c.ClusterID(context.Background()); err != nil || id != "abc" {
			t.Errorf("%s: ClusterID = %q, %v", tc.base, id, err)
		}
		if diff := cmp.Diff([]string{tc.wantPath}, rec.requests()); diff != "" {
			t.Errorf("%s: requests (-want +got):\n%s", tc.base, diff)
		}
	}
	for _, bad := range []string{"ftp://host:1", "http://", "http://[::1"} {
		if _, err := dashboard.New(bad); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}

func TestClusterIDEnvelope(t *testing.T) {
	tests := []struct {
		name    string
		rec     *recorder
		want    string
		wantErr string
	}{
		{name: "clusterId", rec: &recorder{body: `{"result": true, "msg": "Fetched cluster id", "data": {"clusterId": "f0c0"}}`}, want: "f0c0"},
		{name: "cluster_id", rec: &recorder{body: `{"result": true, "msg": "", "data": {"cluster_id": "f0c1"}}`}, want: "f0c1"},
		{name: "both, camelCase wins", rec: &recorder{body: `{"result": true, "data": {"clusterId": "a", "cluster_id": "b"}}`}, want: "a"},
		{name: "result false", rec: &recorder{body: `{"result": false, "msg": "GCS is not ready", "data": {}}`}, wantErr: "result=false: GCS is not ready"},
		{name: "no result field", rec: &recorder{body: `{"msg": "x", "data": {"clusterId": "a"}}`}, wantErr: `no "result" field`},
		{name: "missing data", rec: &recorder{body: `{"result": true, "msg": "ok"}`}, wantErr: "decoding data"},
		{name: "data null", rec: &recorder{body: `{"result": true, "msg": "ok", "data": null}`}, wantErr: "data has no clusterId"},
		{name: "empty id", rec: &recorder{body: `{"result": true, "data": {"clusterId": ""}}`}, wantErr: "data has no clusterId"},
		{name: "data not an object", rec: &recorder{body: `{"result": true, "data": "f0c0"}`}, wantErr: "decoding data"},
		{name: "HTML with 200", rec: &recorder{ctype: "text/html", body: "<!DOCTYPE html><html><body>Ray Dashboard</body></html>"}, wantErr: "got an HTML page"},
		{name: "500", rec: &recorder{status: 500, body: `{"result": false, "msg": "internal"}`}, wantErr: "HTTP 500"},
		{name: "404", rec: &recorder{status: 404, ctype: "text/plain", body: "404: Not Found"}, wantErr: "HTTP 404"},
		{name: "truncated JSON", rec: &recorder{body: `{"result": true, "msg": "Fetched cluster id", "data": {"clus`}, wantErr: "decoding the dashboard envelope"},
		{name: "body cut short", rec: &recorder{raw: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "200")
			fmt.Fprint(w, `{"result": true, "data": {"clusterId": "f0`)
		}}, wantErr: "cluster_id"},
		{name: "empty body", rec: &recorder{body: ""}, wantErr: "empty body"},
		{name: "JSON array", rec: &recorder{body: `[1, 2]`}, wantErr: "decoding the dashboard envelope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.rec)
			defer srv.Close()
			got, err := newClient(t, srv.URL).ClusterID(context.Background())
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Fatalf("ClusterID = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ClusterID = %q, want an error containing %q", got, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), srv.URL+"/cluster_id") {
				t.Errorf("error %q; want it to contain %q and name %s/cluster_id", err, tc.wantErr, srv.URL)
			}
		})
	}
}

func TestListEnvelope(t *testing.T) {
	const worker = `{"worker_id": "w1", "is_alive": true, "worker_type": "WORKER", "node_id": "n1", "ip": "10.0.0.7", "pid": 4242, "debugger_port": 54321, "num_paused_threads": 1, "exit_type": null, "language": "PYTHON"}`
	list := func(rows string) string {
		return `{"result": true, "msg": "", "data": {"result": {"total": 1, "num_after_truncation": 1, "num_filtered": 1, "result": [` + rows + `], "partial_failure_warning": "", "warnings": null}}}`
	}
	tests := []struct {
		name    string
		rec     *recorder
		want    []dashboard.Worker
		wantErr string
	}{
		{name: "one row, unknown fields ignored", rec: &recorder{body: list(worker)}, want: []dashboard.Worker{{
			WorkerID: "w1", IsAlive: true, WorkerType: "WORKER", NodeID: "n1", IP: "10.0.0.7", PID: 4242, DebuggerPort: 54321, NumPausedThreads: 1,
		}}},
		{name: "empty list", rec: &recorder{body: emptyList}},
		{name: "rows null", rec: &recorder{body: `{"result": true, "data": {"result": {"total": 0, "result": null}}}`}},
		{name: "rows missing", rec: &recorder{body: `{"result": true, "data": {"result": {"total": 0}}}`}},
		{name: "result false", rec: &recorder{body: `{"result": false, "msg": "Failed to list workers: timeout", "data": {}}`}, wantErr: "result=false: Failed to list workers: timeout"},
		{name: "no result field", rec: &recorder{body: `{"data": {"result": {"total": 0, "result": []}}}`}, wantErr: `no "result" field`},
		{name: "missing data", rec: &recorder{body: `{"result": true, "msg": ""}`}, wantErr: "decoding data"},
		{name: "data without result", rec: &recorder{body: `{"result": true, "data": {}}`}, wantErr: "not a State API list"},
		{name: "no total", rec: &recorder{body: `{"result": true, "data": {"result": {"result": []}}}`}, wantErr: "not a State API list (no total)"},
		{name: "rows not a list", rec: &recorder{body: `{"result": true, "data": {"result": {"total": 1, "result": {"worker_id": "w1"}}}}`}, wantErr: "decoding data.result.result"},
		{name: "row of the wrong type", rec: &recorder{body: list(`{"worker_id": 7}`)}, wantErr: "decoding data.result.result"},
		{name: "HTML with 200", rec: &recorder{ctype: "text/html", body: "\n  <html><head><title>Ray</title></head></html>"}, wantErr: "got an HTML page"},
		{name: "500", rec: &recorder{status: 500, body: `{"result": false, "msg": "boom"}`}, wantErr: "HTTP 500"},
		{name: "truncated JSON", rec: &recorder{body: list(worker)[:80]}, wantErr: "decoding the dashboard envelope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.rec)
			defer srv.Close()
			got, err := newClient(t, srv.URL).PausedWorkers(context.Background())
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("PausedWorkers (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("PausedWorkers = %+v, want an error containing %q", got, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), srv.URL+"/api/v0/workers?limit=100") {
				t.Errorf("error %q; want it to contain %q and name the URL", err, tc.wantErr)
			}
		})
	}
}

// A 500 is retried once by the default client (callers poll), then reported.
func TestDefaultClientRetriesOnce(t *testing.T) {
	rec := &recorder{status: 500, body: `{"result": false, "msg": "boom"}`}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := dashboard.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ClusterID(context.Background()); err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("err = %v, want HTTP 500", err)
	}
	if n := len(rec.requests()); n != 2 {
		t.Errorf("%d requests, want 2 (one retry)", n)
	}
}

func TestWorkerAndTasks(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c := newClient(t, srv.URL)
	ctx := context.Background()

	// The dashboard may list other workers too (a filter it did not apply):
	// only the one asked for counts.
	rec.body = `{"result": true, "data": {"result": {"total": 2, "result": [
		{"worker_id": "other", "ip": "10.0.0.1", "debugger_port": 1, "num_paused_threads": 1},
		{"worker_id": "w1", "ip": "10.0.0.7", "debugger_port": 54321, "num_paused_threads": 2, "is_alive": true}]}}}`
	w, err := c.Worker(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&dashboard.Worker{WorkerID: "w1", IP: "10.0.0.7", DebuggerPort: 54321, NumPausedThreads: 2, IsAlive: true}, w); diff != "" {
		t.Errorf("Worker (-want +got):\n%s", diff)
	}
	// Gone: nil, no error.
	rec.body = emptyList
	if w, err := c.Worker(ctx, "w1"); err != nil || w != nil {
		t.Errorf("Worker of a gone worker = %+v, %v; want nil, nil", w, err)
	}

	rec.body = `{"result": true, "data": {"result": {"total": 1, "result": [
		{"task_id": "t1", "name": "square", "state": "RUNNING", "job_id": "02000000", "worker_id": "w1", "func_or_class_name": "square", "attempt_number": 0}]}}}`
	ts, err := c.RunningTasks(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]dashboard.Task{{TaskID: "t1", Name: "square", State: "RUNNING", JobID: "02000000", WorkerID: "w1", FuncName: "square"}}, ts); diff != "" {
		t.Errorf("RunningTasks (-want +got):\n%s", diff)
	}
}
