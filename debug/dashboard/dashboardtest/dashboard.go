package dashboardtest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
)

// Worker is a row of /api/v0/workers as Ray's WorkerState serialises it.
type Worker struct {
	WorkerID         string `json:"worker_id"`
	IsAlive          bool   `json:"is_alive"`
	WorkerType       string `json:"worker_type"` // WORKER or DRIVER
	ExitType         any    `json:"exit_type"`
	NodeID           string `json:"node_id"`
	IP               string `json:"ip"`
	PID              int    `json:"pid"`
	ExitDetail       any    `json:"exit_detail"`
	WorkerLaunchTime int64  `json:"worker_launch_time"`
	StartTimeMS      int64  `json:"start_time_ms"`
	EndTimeMS        int64  `json:"end_time_ms"`
	DebuggerPort     int    `json:"debugger_port"`
	NumPausedThreads int    `json:"num_paused_threads"`
}

// Task is a row of /api/v0/tasks as Ray's TaskState serialises it.
type Task struct {
	TaskID          string `json:"task_id"`
	AttemptNumber   int    `json:"attempt_number"`
	Name            string `json:"name"`
	State           string `json:"state"`
	JobID           string `json:"job_id"`
	ActorID         any    `json:"actor_id"`
	Type            string `json:"type"`
	FuncOrClassName string `json:"func_or_class_name"`
	ParentTaskID    string `json:"parent_task_id"`
	NodeID          string `json:"node_id"`
	WorkerID        string `json:"worker_id"`
	WorkerPID       int    `json:"worker_pid"`
	ErrorType       any    `json:"error_type"`
}

// Mode selects how the fake answers.
type Mode int

const (
	// Normal answers like a healthy dashboard.
	Normal Mode = iota
	// HTML answers every request with 200 and an HTML page (a proxy login
	// page or the dashboard UI behind a wrong path).
	HTML
	// ServerError answers every request with HTTP 500.
	ServerError
	// ResultFalse answers with the envelope and result=false, as Ray does
	// when the State API call fails.
	ResultFalse
)

// Server is the fake dashboard.
type Server struct {
	*httptest.Server

	mux *http.ServeMux

	mu        sync.Mutex
	clusterID string
	workers   []Worker
	tasks     []Task
	mode      Mode
	requests  []string
	authToken string // token authentication (auth.go) when not ""

	// The Jobs API (jobs.go).
	version  JobVersion
	packages map[string][]byte
	jobs     map[string]*Job
	jobOrder []string
	runner   func(Job)
	stopper  func(Job)
}

// New starts a fake dashboard on a loopback port; Close it when done.
func New() *Server { return NewOn(nil) }

// NewOn starts a fake dashboard serving on l (a loopback port when l is
// nil), as tests/kube's Ray stand-in does on a Pod's port 8265 (all
// addresses); Close it when done.
func NewOn(l net.Listener) *Server {
	s := &Server{
		clusterID: "f0c0a3c5d3b1e6f1d6a4f4d7b9b1c1e0e8f7a6b5c4d3e2f1a0b9c8d7", mux: http.NewServeMux(),
		version:  JobVersion{Version: "4", RayVersion: "2.46.0", RayCommit: "5c47023856423b87afe3abe3b6c30c9782120665", SessionName: "session_2026-11-28_12-00-00_000000_1"},
		packages: map[string][]byte{}, jobs: map[string]*Job{},
	}
	s.routeJobs()
	s.mux.HandleFunc("GET /cluster_id", s.clusterIDHandler)
	s.mux.HandleFunc("GET /api/v0/workers", s.listHandler(func() []any { return rows(s.workers) }, nil))
	s.mux.HandleFunc("GET /api/v0/tasks", s.listHandler(func() []any { return rows(s.tasks) }, isDriverTask))
	s.Server = httptest.NewUnstartedServer(s.wrap(s.mux))
	if l != nil {
		s.Server.Listener.Close()
		s.Server.Listener = l
	}
	s.Server.Start()
	return s
}

// HandleFunc serves pattern with h besides the State API (e.g. the
// dashboard's GET /api/gcs_healthz).
func (s *Server) HandleFunc(pattern string, h http.HandlerFunc) { s.mux.HandleFunc(pattern, h) }

func rows[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i := range xs {
		out[i] = xs[i]
	}
	return out
}

// SetWorkers replaces the worker rows.
func (s *Server) SetWorkers(ws ...Worker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workers = append([]Worker(nil), ws...)
}

// SetTasks replaces the task rows.
func (s *Server) SetTasks(ts ...Task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks = append([]Task(nil), ts...)
}

// SetMode changes how the fake answers.
func (s *Server) SetMode(m Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = m
}

// Requests returns the request URIs (path?query) received so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// Address returns host:port, as the extension's clusterDashboards setting
// holds it.
func (s *Server) Address() string { return s.Listener.Addr().String() }

func (s *Server) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.URL.RequestURI())
		mode, token := s.mode, s.authToken
		s.mu.Unlock()
		if refuse(w, r, token) {
			return
		}
		switch mode {
		case HTML:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, "<!doctype html><html><head><title>Ray Dashboard</title></head><body><div id=\"root\"></div></body></html>\n")
			return
		case ServerError:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "500 Internal Server Error\n\nServer got itself in trouble")
			return
		case ResultFalse:
			writeJSON(w, map[string]any{"result": false, "msg": "Failed to query the GCS: Deadline Exceeded", "data": map[string]any{}})
			return
		}
		h.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (s *Server) clusterIDHandler(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	id := s.clusterID
	s.mu.Unlock()
	// rest_response converts data keys to camelCase.
	writeJSON(w, map[string]any{"result": true, "msg": "Fetched cluster id", "data": map[string]any{"clusterId": id}})
}

// isDriverTask is what exclude_driver=True drops from /api/v0/tasks: the GCS
// skips task events whose type is DRIVER_TASK (gcs_task_manager.cc:488 at
// Ray commit 7ec4330081, June 2025).
func isDriverTask(row map[string]any) bool { return row["type"] == "DRIVER_TASK" }

// listHandler serves a State API list of the rows all returns. driver,
// when set, marks the rows exclude_driver=True drops: Ray's list_tasks
// passes exclude_driver to the GCS, list_workers does not
// (dashboard/state_aggregator.py:226-237 and 298-310, util/state/
// state_manager.py get_all_worker_info, at the same commit), so a DRIVER
// worker paused at breakpoint() is listed even with exclude_driver=True,
// the query the debugger extension sends.
func (s *Server) listHandler(all func() []any, driver func(map[string]any) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		keys, preds, vals := q["filter_keys"], q["filter_predicates"], q["filter_values"]
		if len(keys) != len(preds) || len(keys) != len(vals) {
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]any{"result": false, "msg": "filter_keys, filter_predicates and filter_values must have the same length", "data": map[string]any{}})
			return
		}
		limit := 100
		if l := q.Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				writeJSON(w, map[string]any{"result": false, "msg": "invalid limit " + l, "data": map[string]any{}})
				return
			}
			limit = n
		}
		s.mu.Lock()
		src := all()
		s.mu.Unlock()
		var out []map[string]any
		total := len(src)
		for _, row := range src {
			m := toMap(row)
			if driver != nil && q.Get("exclude_driver") == "True" && driver(m) {
				continue
			}
			if !matches(m, keys, preds, vals) {
				continue
			}
			out = append(out, m)
		}
		filtered := len(out)
		if len(out) > limit {
			out = out[:limit]
		}
		if out == nil {
			out = []map[string]any{}
		}
		writeJSON(w, map[string]any{
			"result": true,
			"msg":    "",
			"data": map[string]any{"result": map[string]any{
				"total":                   total,
				"num_after_truncation":    len(out),
				"num_filtered":            filtered,
				"result":                  out,
				"partial_failure_warning": "",
				"warnings":                nil,
			}},
		})
	}
}

func toMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// matches applies Ray's filters: the value is compared as a string, booleans
// as "True"/"False" as the Python side spells them.
func matches(m map[string]any, keys, preds, vals []string) bool {
	for i, k := range keys {
		got := pyString(m[k])
		want := vals[i]
		switch preds[i] {
		case "=":
			if got != want {
				return false
			}
		case "!=":
			if got == want {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func pyString(v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "True"
		}
		return "False"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return "None"
	case string:
		return x
	}
	return fmt.Sprint(v)
}
