package rayjobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/imagectl/imagectl/internal/pep440"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// JobStatus is a job's status (job/common.py JobStatus).
type JobStatus string

// The statuses a job goes through; the last three are terminal.
const (
	StatusPending   JobStatus = "PENDING"
	StatusRunning   JobStatus = "RUNNING"
	StatusStopped   JobStatus = "STOPPED"
	StatusSucceeded JobStatus = "SUCCEEDED"
	StatusFailed    JobStatus = "FAILED"
)

// Terminal reports whether s can no longer change (JobStatus.is_terminal).
func (s JobStatus) Terminal() bool {
	return s == StatusStopped || s == StatusSucceeded || s == StatusFailed
}

// DriverInfo is the driver of a job (pydantic_models.py DriverInfo).
type DriverInfo struct {
	ID            string `json:"id"`
	NodeIPAddress string `json:"node_ip_address"`
	PID           string `json:"pid"`
}

// JobDetails is what GET /api/jobs/{id} returns (pydantic_models.py
// JobDetails). Times are Unix milliseconds; 0 when Ray sent null.
type JobDetails struct {
	Type                   string            `json:"type"` // SUBMISSION or DRIVER
	JobID                  string            `json:"job_id"`
	SubmissionID           string            `json:"submission_id"`
	DriverInfo             *DriverInfo       `json:"driver_info"`
	Status                 JobStatus         `json:"status"`
	Entrypoint             string            `json:"entrypoint"`
	Message                string            `json:"message"`
	ErrorType              string            `json:"error_type"`
	StartTime              int64             `json:"start_time"`
	EndTime                int64             `json:"end_time"`
	Metadata               map[string]string `json:"metadata"`
	RuntimeEnv             map[string]any    `json:"runtime_env"`
	DriverAgentHTTPAddress string            `json:"driver_agent_http_address"`
	DriverNodeID           string            `json:"driver_node_id"`
	DriverExitCode         *int              `json:"driver_exit_code"`
}

// Version is GET /api/version (modules/version.py VersionResponse).
type Version struct {
	Version     string `json:"version"`
	RayVersion  string `json:"ray_version"`
	RayCommit   string `json:"ray_commit"`
	SessionName string `json:"session_name"`
}

// SubmitRequest is a job to submit (job/common.py JobSubmitRequest; the
// deprecated job_id is left out). RuntimeEnv may name local directories in
// working_dir and py_modules: Submit uploads them first, as the SDK does.
type SubmitRequest struct {
	Entrypoint   string
	SubmissionID string
	RuntimeEnv   map[string]any
	Metadata     map[string]string
	// Resources reserved for the entrypoint command (Ray 2.2+; memory
	// 2.8+); nil leaves them out.
	EntrypointNumCPUs   *float64
	EntrypointNumGPUs   *float64
	EntrypointMemory    *int64
	EntrypointResources map[string]float64
}

// ErrNotFound is the dashboard's 404: no such job, package or endpoint.
var ErrNotFound = errors.New("not found")

// HTTPError is an answer other than 200. Body is Ray's text (often a Python
// traceback, whose last lines say what failed), shortened to its start and
// end, control characters escaped.
type HTTPError struct {
	Method, URL string
	Status      int
	Body        string
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s %s: HTTP %d %s", e.Method, e.URL, e.Status, http.StatusText(e.Status))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Is makes errors.Is(err, ErrNotFound) true for a 404.
func (e *HTTPError) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound
}

// Client talks to a Ray dashboard's Jobs API as ray.job_submission's
// JobSubmissionClient does.
type Client struct {
	base    string
	header  http.Header
	api     *http.Client // GET, PUT: retried
	once    *http.Client // POST: never retried (a submission must not run twice)
	upload  *http.Client
	maxBody int64
}

type options struct {
	header        http.Header
	hc            *http.Client
	timeout       time.Duration
	uploadTimeout time.Duration
	retries       int
}

// Option configures New.
type Option func(*options)

// WithHeader adds a header to every request (the SDK's headers argument,
// e.g. Authorization for a cluster with token authentication).
func WithHeader(key, value string) Option {
	return func(o *options) { o.header.Add(key, value) }
}

// WithHTTPClient uses hc for every request instead of the project's
// retrying client (tests; a port-forward's dialer).
func WithHTTPClient(hc *http.Client) Option { return func(o *options) { o.hc = hc } }

// WithTimeout bounds the wait for each answer's headers (default 30s).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithUploadTimeout bounds a package upload until the answer's headers,
// the body's transfer included (default 10m).
func WithUploadTimeout(d time.Duration) Option { return func(o *options) { o.uploadTimeout = d } }

// WithRetries sets how often a failed GET or PUT is retried (default 2); a
// POST is never retried.
func WithRetries(n int) Option { return func(o *options) { o.retries = n } }

// New returns a client of the dashboard at base, e.g.
// http://127.0.0.1:8265. As the SDK, it takes host:port without a scheme
// as http:// and drops trailing slashes. It sends nothing until called.
func New(base string, opts ...Option) (*Client, error) {
	o := options{header: http.Header{}, timeout: 30 * time.Second, uploadTimeout: 10 * time.Minute, retries: 2}
	for _, opt := range opts {
		opt(&o)
	}
	if base == "" {
		return nil, errors.New("dashboard address is empty: want http://HOST:PORT")
	}
	raw := base
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	raw = strings.TrimRight(raw, "/")
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("dashboard address %q: want http://HOST:PORT or https://HOST:PORT", safetext.URL(base))
	}
	c := &Client{base: raw, header: o.header, maxBody: 64 << 20}
	if o.hc != nil {
		c.api, c.once, c.upload = o.hc, o.hc, o.hc
	} else {
		c.api = httpx.New(httpx.WithTimeout(o.timeout), httpx.WithRetries(o.retries))
		c.once = httpx.New(httpx.WithTimeout(o.timeout), httpx.WithRetries(0))
		c.upload = httpx.New(httpx.WithTimeout(o.uploadTimeout), httpx.WithRetries(o.retries))
	}
	return c, nil
}

// Base is the dashboard's URL as the client uses it.
func (c *Client) Base() string { return c.base }

// do sends one request and returns the body of a 200; anything else is an
// *HTTPError naming the URL, the status and Ray's text.
func (c *Client) do(ctx context.Context, hc *http.Client, method, path string, body []byte, contentType string) ([]byte, error) {
	u := c.base + path
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, safetext.URL(u), err)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s %s: %w", method, safetext.URL(u), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, safetext.URL(u), err)
	}
	if int64(len(b)) > c.maxBody {
		return nil, fmt.Errorf("%s %s: answer larger than %d bytes", method, safetext.URL(u), c.maxBody)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &HTTPError{Method: method, URL: safetext.URL(u), Status: resp.StatusCode, Body: cut(string(b))}
	}
	return b, nil
}

// cut keeps the start and the end of a long text: a traceback's last lines
// name the error.
func cut(s string) string {
	s = strings.TrimSpace(safetext.Sanitize(s))
	const head, tail = 200, 800
	if len(s) <= head+tail+10 {
		return s
	}
	return strings.ToValidUTF8(s[:head], "") + " […] " + strings.ToValidUTF8(s[len(s)-tail:], "")
}

func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	b, err := c.do(ctx, c.api, http.MethodGet, path, nil, "")
	if err != nil {
		return err
	}
	return decode(b, c.base+path, v)
}

func decode(b []byte, u string, v any) error {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '<' {
		return fmt.Errorf("%s: got an HTML page, expected JSON (is this the Ray dashboard?)", safetext.URL(u))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: decoding the answer: %w", safetext.URL(u), err)
	}
	return nil
}

// Version is GET /api/version.
func (c *Client) Version(ctx context.Context) (*Version, error) {
	var v Version
	if err := c.getJSON(ctx, "/api/version", &v); err != nil {
		return nil, err
	}
	if v.RayVersion == "" {
		return nil, fmt.Errorf("%s: no ray_version in the answer", safetext.URL(c.base+"/api/version"))
	}
	return &v, nil
}

// CheckVersion fails unless the cluster runs Ray min or later
// (SubmissionClient._check_connection_and_version); what names the
// feature that needs it.
func (c *Client) CheckVersion(ctx context.Context, min, what string) error {
	v, err := c.Version(ctx)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: the dashboard has no /api/version, so no Jobs API; %s needs Ray %s or later", err, what, min)
	}
	if err != nil {
		return err
	}
	have, err := pep440.Parse(v.RayVersion)
	if err != nil {
		return fmt.Errorf("%s: ray_version %q: %w", safetext.URL(c.base+"/api/version"), v.RayVersion, err)
	}
	want, err := pep440.Parse(min)
	if err != nil {
		return err
	}
	if have.LessThan(want) {
		return fmt.Errorf("the cluster at %s runs Ray %s; %s needs Ray %s or later", safetext.URL(c.base), v.RayVersion, what, min)
	}
	return nil
}

func packagePath(uri string) (string, error) {
	proto, name, ok := strings.Cut(uri, "://")
	if !ok || proto == "" || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("package URI %q: want PROTOCOL://NAME.zip or PROTOCOL://NAME.whl", uri)
	}
	if !strings.HasSuffix(name, ".zip") && !strings.HasSuffix(name, ".whl") {
		// job/common.py uri_to_http_components
		return "", fmt.Errorf("package URI %q does not end in .zip or .whl", uri)
	}
	return "/api/packages/" + url.PathEscape(proto) + "/" + url.PathEscape(name), nil
}

// PackageExists is GET /api/packages/{protocol}/{name}: 200 true, 404
// false (SubmissionClient._package_exists). Ray also pins the package for
// a while (RAY_RUNTIME_ENV_URI_PIN_EXPIRATION_S, default 10 minutes).
func (c *Client) PackageExists(ctx context.Context, uri string) (bool, error) {
	p, err := packagePath(uri)
	if err != nil {
		return false, err
	}
	if _, err := c.do(ctx, c.api, http.MethodGet, p, nil, ""); err != nil {
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// UploadPackage is PUT /api/packages/{protocol}/{name} with the archive as
// the body (SubmissionClient._upload_package).
func (c *Client) UploadPackage(ctx context.Context, uri string, data []byte) error {
	p, err := packagePath(uri)
	if err != nil {
		return err
	}
	if int64(len(data)) >= DashboardMaxBody {
		return fmt.Errorf("package %s is %s: Ray's dashboard takes a request body smaller than %s", uri, mib(int64(len(data))), mib(DashboardMaxBody))
	}
	_, err = c.do(ctx, c.upload, http.MethodPut, p, data, "")
	return err
}

// Submit submits a job as JobSubmissionClient.submit_job: local
// working_dir and py_modules are packaged and uploaded when the cluster
// lacks them (PrepareRuntimeEnv), entrypoint resources check the cluster's
// Ray version, then POST /api/jobs/. It returns the submission ID (Ray
// makes one, raysubmit_…, when SubmissionID is empty).
func (c *Client) Submit(ctx context.Context, req SubmitRequest) (string, error) {
	if req.Entrypoint == "" {
		return "", errors.New("submit: the entrypoint is empty")
	}
	if req.EntrypointNumCPUs != nil || req.EntrypointNumGPUs != nil || len(req.EntrypointResources) > 0 {
		if err := c.CheckVersion(ctx, "2.2", "entrypoint_num_cpus, entrypoint_num_gpus and entrypoint_resources"); err != nil {
			return "", err
		}
	}
	if req.EntrypointMemory != nil {
		if err := c.CheckVersion(ctx, "2.8", "entrypoint_memory"); err != nil {
			return "", err
		}
	}
	prep, err := c.PrepareRuntimeEnv(ctx, req.RuntimeEnv)
	if err != nil {
		return "", err
	}
	body := map[string]any{
		"entrypoint":  req.Entrypoint,
		"runtime_env": prep.RuntimeEnv,
		"metadata":    req.Metadata,
	}
	if req.Metadata == nil {
		body["metadata"] = map[string]string{}
	}
	if req.SubmissionID != "" {
		body["submission_id"] = req.SubmissionID
	}
	if req.EntrypointNumCPUs != nil {
		body["entrypoint_num_cpus"] = *req.EntrypointNumCPUs
	}
	if req.EntrypointNumGPUs != nil {
		body["entrypoint_num_gpus"] = *req.EntrypointNumGPUs
	}
	if req.EntrypointMemory != nil {
		body["entrypoint_memory"] = *req.EntrypointMemory
	}
	if req.EntrypointResources != nil {
		body["entrypoint_resources"] = req.EntrypointResources
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("submit: encoding the request: %w", err)
	}
	out, err := c.do(ctx, c.once, http.MethodPost, "/api/jobs/", b, "application/json")
	if err != nil {
		return "", err
	}
	var resp struct {
		JobID        string `json:"job_id"`
		SubmissionID string `json:"submission_id"`
	}
	if err := decode(out, c.base+"/api/jobs/", &resp); err != nil {
		return "", err
	}
	if resp.SubmissionID == "" {
		return "", fmt.Errorf("%s: no submission_id in the answer", safetext.URL(c.base+"/api/jobs/"))
	}
	return resp.SubmissionID, nil
}

// Job is GET /api/jobs/{id} (a submission ID or a Ray job ID); a job Ray
// does not know is an error that errors.Is ErrNotFound.
func (c *Client) Job(ctx context.Context, id string) (*JobDetails, error) {
	if id == "" {
		return nil, errors.New("job: empty job or submission ID")
	}
	var d JobDetails
	if err := c.getJSON(ctx, "/api/jobs/"+url.PathEscape(id), &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// Wait polls Job every interval until the job is in a terminal state and
// returns it; seen, when not nil, gets every answer (progress). It ends
// with ctx.
func (c *Client) Wait(ctx context.Context, id string, interval time.Duration, seen func(*JobDetails)) (*JobDetails, error) {
	if interval <= 0 {
		return nil, fmt.Errorf("wait for job %s: interval %s must be positive", id, interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	last := JobStatus("unknown")
	for {
		j, err := c.Job(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("waiting for job %s (last status %s): %w", id, last, err)
			}
			return nil, err
		}
		last = j.Status
		if seen != nil {
			seen(j)
		}
		if j.Status.Terminal() {
			return j, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for job %s (last status %s): %w", id, last, ctx.Err())
		case <-t.C:
		}
	}
}

// Jobs is GET /api/jobs/: every job, submitted ones first.
func (c *Client) Jobs(ctx context.Context) ([]JobDetails, error) {
	var ds []JobDetails
	if err := c.getJSON(ctx, "/api/jobs/", &ds); err != nil {
		return nil, err
	}
	return ds, nil
}

// Logs is GET /api/jobs/{id}/logs: the entrypoint's output so far.
func (c *Client) Logs(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", errors.New("logs: empty job or submission ID")
	}
	var r struct {
		Logs string `json:"logs"`
	}
	if err := c.getJSON(ctx, "/api/jobs/"+url.PathEscape(id)+"/logs", &r); err != nil {
		return "", err
	}
	return r.Logs, nil
}

// Stop is POST /api/jobs/{id}/stop: whether the job was still running (and
// is now being stopped).
func (c *Client) Stop(ctx context.Context, id string) (bool, error) {
	return c.post(ctx, http.MethodPost, "/api/jobs/"+url.PathEscape(id)+"/stop", "stopped", id)
}

// Delete is DELETE /api/jobs/{id}: Ray deletes only a job in a terminal
// state.
func (c *Client) Delete(ctx context.Context, id string) (bool, error) {
	return c.post(ctx, http.MethodDelete, "/api/jobs/"+url.PathEscape(id), "deleted", id)
}

func (c *Client) post(ctx context.Context, method, path, key, id string) (bool, error) {
	if id == "" {
		return false, errors.New("empty job or submission ID")
	}
	b, err := c.do(ctx, c.once, method, path, nil, "")
	if err != nil {
		return false, err
	}
	var r map[string]bool
	if err := decode(b, c.base+path, &r); err != nil {
		return false, err
	}
	v, ok := r[key]
	if !ok {
		return false, fmt.Errorf("%s: no %q in the answer", safetext.URL(c.base+path), key)
	}
	return v, nil
}
