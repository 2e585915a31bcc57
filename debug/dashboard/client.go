package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/imagectl/imagectl/upstream/httpx"
)

// maxBody bounds one dashboard answer.
const maxBody = 16 << 20

// PausedWorkersQuery is the query the extension sends to list workers with
// num_paused_threads != 0 and is_alive = True, drivers excluded.
const PausedWorkersQuery = "limit=100&timeout=24&detail=True&filter_keys=num_paused_threads&filter_keys=is_alive&filter_predicates=%21%3D&filter_predicates=%3D&filter_values=0&filter_values=True&exclude_driver=True&server_timeout_multiplier=0.8"

// WorkerQuery returns the per-worker query the extension sends.
func WorkerQuery(workerID string) string {
	return "timeout=30&filter_keys=worker_id&filter_predicates=%3D&filter_values=" + url.QueryEscape(workerID) + "&detail=True"
}

// RunningTasksQuery returns the query the extension sends for the RUNNING
// tasks of a worker (0.1.6's dist/extension.js, checked by
// extensions/contract).
func RunningTasksQuery(workerID string) string {
	return "limit=100&timeout=24&detail=False&filter_keys=worker_id&filter_keys=state&filter_predicates=%3D&filter_predicates=%3D&filter_values=" + url.QueryEscape(workerID) + "&filter_values=RUNNING&exclude_driver=True&server_timeout_multiplier=0.8"
}

// Worker is one row of /api/v0/workers (Ray's WorkerState), the fields the
// debugger uses.
type Worker struct {
	WorkerID         string `json:"worker_id"`
	IsAlive          bool   `json:"is_alive"`
	WorkerType       string `json:"worker_type,omitempty"`
	NodeID           string `json:"node_id,omitempty"`
	IP               string `json:"ip"`
	PID              int    `json:"pid,omitempty"`
	DebuggerPort     int    `json:"debugger_port"`
	NumPausedThreads int    `json:"num_paused_threads"`
}

// Task is one row of /api/v0/tasks (Ray's TaskState), the fields the
// debugger uses.
type Task struct {
	TaskID   string `json:"task_id"`
	Name     string `json:"name"`
	State    string `json:"state"`
	JobID    string `json:"job_id"`
	WorkerID string `json:"worker_id,omitempty"`
	FuncName string `json:"func_or_class_name,omitempty"`
}

// Client talks to one Ray dashboard.
type Client struct {
	base *url.URL
	http *http.Client
}

type options struct {
	httpClient *http.Client
	timeout    time.Duration
}

// Option configures New.
type Option func(*options)

// WithHTTPClient sets the HTTP client (default: httpx.New with a short
// per-attempt timeout and one retry, since callers poll).
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithTimeout sets the per-attempt timeout of the default HTTP client.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// New returns a client for the dashboard at base: "http://host:8265" or a
// bare "host:port" as the extension's clusterDashboards setting holds it.
func New(base string, opts ...Option) (*Client, error) {
	o := options{timeout: 30 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("dashboard address %q: %w", base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("dashboard address %q: expected http://host:port", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	hc := o.httpClient
	if hc == nil {
		hc = httpx.New(httpx.WithTimeout(o.timeout), httpx.WithRetries(1), httpx.WithBackoff(200*time.Millisecond, time.Second))
	}
	return &Client{base: u, http: hc}, nil
}

// URL returns the dashboard base URL.
func (c *Client) URL() string { return c.base.String() }

// envelope is the dashboard's REST answer.
type envelope struct {
	Result *bool           `json:"result"`
	Msg    string          `json:"msg"`
	Data   json.RawMessage `json:"data"`
}

// listResult is data.result of a State API list call.
type listResult struct {
	Total              *int            `json:"total"`
	NumAfterTruncation int             `json:"num_after_truncation"`
	NumFiltered        int             `json:"num_filtered"`
	Result             json.RawMessage `json:"result"`
	PartialFailure     json.RawMessage `json:"partial_failure_warning"`
	Warnings           json.RawMessage `json:"warnings"`
}

func (c *Client) get(ctx context.Context, path, rawQuery string) (json.RawMessage, string, error) {
	u := *c.base
	u.Path += path
	u.RawQuery = rawQuery
	s := u.String()
	resp, err := httpx.Get(ctx, c.http, s, http.Header{"Accept": {"application/json"}})
	if err != nil {
		return nil, s, err
	}
	defer resp.Body.Close()
	b, err := httpx.ReadJSONBody(resp.Body, s, maxBody)
	if err != nil {
		return nil, s, err
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, s, fmt.Errorf("GET %s: decoding the dashboard envelope: %w", s, err)
	}
	if env.Result == nil {
		return nil, s, fmt.Errorf("GET %s: not a dashboard answer: no \"result\" field", s)
	}
	if !*env.Result {
		return nil, s, fmt.Errorf("GET %s: dashboard answered result=false: %s", s, env.Msg)
	}
	return env.Data, s, nil
}

// ClusterID calls GET /cluster_id, the extension's liveness check.
func (c *Client) ClusterID(ctx context.Context) (string, error) {
	data, s, err := c.get(ctx, "/cluster_id", "")
	if err != nil {
		return "", err
	}
	var d struct {
		ClusterID  string `json:"clusterId"`
		ClusterID2 string `json:"cluster_id"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return "", fmt.Errorf("GET %s: decoding data: %w", s, err)
	}
	id := d.ClusterID
	if id == "" {
		id = d.ClusterID2
	}
	if id == "" {
		return "", fmt.Errorf("GET %s: data has no clusterId", s)
	}
	return id, nil
}

func list[T any](ctx context.Context, c *Client, path, query string) ([]T, error) {
	data, s, err := c.get(ctx, path, query)
	if err != nil {
		return nil, err
	}
	var d struct {
		Result *listResult `json:"result"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("GET %s: decoding data: %w", s, err)
	}
	if d.Result == nil || d.Result.Total == nil {
		return nil, fmt.Errorf("GET %s: data.result is not a State API list (no total)", s)
	}
	var rows []T
	if len(d.Result.Result) > 0 && string(d.Result.Result) != "null" {
		if err := json.Unmarshal(d.Result.Result, &rows); err != nil {
			return nil, fmt.Errorf("GET %s: decoding data.result.result: %w", s, err)
		}
	}
	return rows, nil
}

// PausedWorkers lists the live workers with paused threads.
func (c *Client) PausedWorkers(ctx context.Context) ([]Worker, error) {
	return list[Worker](ctx, c, "/api/v0/workers", PausedWorkersQuery)
}

// Worker fetches one worker by id; it returns nil when the dashboard no
// longer lists it.
func (c *Client) Worker(ctx context.Context, id string) (*Worker, error) {
	ws, err := list[Worker](ctx, c, "/api/v0/workers", WorkerQuery(id))
	if err != nil {
		return nil, err
	}
	for i := range ws {
		if ws[i].WorkerID == id {
			return &ws[i], nil
		}
	}
	return nil, nil
}

// RunningTasks lists the RUNNING tasks of a worker.
func (c *Client) RunningTasks(ctx context.Context, workerID string) ([]Task, error) {
	return list[Task](ctx, c, "/api/v0/tasks", RunningTasksQuery(workerID))
}
