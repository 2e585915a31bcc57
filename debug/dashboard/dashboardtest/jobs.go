package dashboardtest

// The Jobs API as Ray serves it. File:line references are to Ray commit
// 5c47023856423b87afe3abe3b6c30c9782120665 (ray-project/ray master of
// 2025-05-05, the week of Ray 2.46.0), python/ray/dashboard/modules/job/
// unless the path says otherwise.

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Job statuses (common.py:40-66).
const (
	JobPending   = "PENDING"
	JobRunning   = "RUNNING"
	JobStopped   = "STOPPED"
	JobSucceeded = "SUCCEEDED"
	JobFailed    = "FAILED"
)

func terminal(status string) bool {
	return status == JobStopped || status == JobSucceeded || status == JobFailed
}

// DriverInfo is a job's driver (pydantic_models.py:12-21).
type DriverInfo struct {
	ID            string `json:"id"`
	NodeIPAddress string `json:"node_ip_address"`
	PID           string `json:"pid"`
}

// Job is a submitted job as the fake keeps it: JobInfo (common.py:72-110)
// plus what JobDetails adds.
type Job struct {
	SubmissionID        string
	JobID               string // the driver's Ray job ID, once it runs
	Entrypoint          string
	RuntimeEnv          map[string]any
	Metadata            map[string]string
	EntrypointNumCPUs   *float64
	EntrypointNumGPUs   *float64
	EntrypointMemory    *int64
	EntrypointResources map[string]float64
	Status              string
	Message             string // "" gives JobInfo.__post_init__'s default
	ErrorType           string
	StartTime, EndTime  int64 // Unix ms; EndTime 0 until terminal
	DriverInfo          *DriverInfo
	DriverAgentAddress  string
	DriverNodeID        string
	DriverExitCode      *int
	Logs                string
}

// JobVersion is what GET /api/version answers (version.py VersionResponse;
// job_head.py:419-433).
type JobVersion struct {
	Version     string `json:"version"`
	RayVersion  string `json:"ray_version"`
	RayCommit   string `json:"ray_commit"`
	SessionName string `json:"session_name"`
}

// Limits Ray applies to a package upload.
const (
	// MaxRequestBody is the dashboard's aiohttp client_max_size
	// (ray_constants.py:164 DASHBOARD_CLIENT_MAX_SIZE, used at
	// dashboard/http_server_head.py:253): a body this large or larger is
	// refused with 413.
	MaxRequestBody = 100 << 20
)

func (s *Server) routeJobs() {
	s.mux.HandleFunc("GET /api/version", s.versionHandler)
	s.mux.HandleFunc("GET /api/packages/{protocol}/{package_name}", s.getPackage)
	s.mux.HandleFunc("PUT /api/packages/{protocol}/{package_name}", s.putPackage)
	s.mux.HandleFunc("POST /api/jobs/{$}", s.submitJob)
	s.mux.HandleFunc("GET /api/jobs/{$}", s.listJobs)
	s.mux.HandleFunc("GET /api/jobs/{id}", s.getJob)
	s.mux.HandleFunc("DELETE /api/jobs/{id}", s.deleteJob)
	s.mux.HandleFunc("GET /api/jobs/{id}/logs", s.jobLogs)
	s.mux.HandleFunc("POST /api/jobs/{id}/stop", s.stopJob)
}

// SetVersion changes what GET /api/version answers.
func (s *Server) SetVersion(v JobVersion) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = v
}

// SetJobRunner makes the fake call run, in its own goroutine, for every job
// it accepts (after the package check: a job whose packages were never
// uploaded fails without running, as in Ray). run drives the job through
// UpdateJob. Without a runner a job stays PENDING until the test moves it.
func (s *Server) SetJobRunner(run func(Job)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runner = run
}

// SetStopper makes POST /api/jobs/{id}/stop call stop for a job that is
// not terminal (default: the job becomes STOPPED at once).
func (s *Server) SetStopper(stop func(Job)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopper = stop
}

// UpdateJob changes the job with the given submission ID under the fake's
// lock, as the JobSupervisor updates Ray's job table; a terminal status
// sets EndTime (common.py put_status). It reports whether the job exists.
func (s *Server) UpdateJob(id string, f func(*Job)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return false
	}
	was := j.Status
	f(j)
	if terminal(j.Status) && !terminal(was) && j.EndTime == 0 {
		j.EndTime = time.Now().UnixMilli()
	}
	return true
}

// Job returns a copy of a submitted job.
func (s *Server) Job(id string) (Job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return Job{}, false
	}
	return *j, true
}

// Package returns an uploaded package's bytes.
func (s *Server) Package(uri string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.packages[uri]
	return b, ok
}

// PutPackage stores a package as an upload would.
func (s *Server) PutPackage(uri string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.packages[uri] = append([]byte(nil), data...)
}

// traceback is an answer body as Ray's handlers write it
// (traceback.format_exc()): the exception on the last line.
func traceback(where, exc string) string {
	return "Traceback (most recent call last):\n  File \"" + where + "\", in <handler>\n" + exc + "\n"
}

func text(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func jsonStatus(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) versionHandler(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	v := s.version
	s.mu.Unlock()
	jsonStatus(w, http.StatusOK, v)
}

// rayProtocols is runtime_env/protocol.py ProtocolsProvider.get_protocols.
var rayProtocols = map[string]bool{"gcs": true, "conda": true, "pip": true, "uv": true, "https": true, "s3": true, "gs": true, "file": true}

// packageURI is http_uri_components_to_uri (common.py:390-391), and the
// check parse_uri makes (packaging.py parse_uri): an unknown protocol
// raises ValueError, one other than gcs NotImplementedError
// (package_exists). Neither is caught by the handlers (job_head.py:452,
// 462-473), so aiohttp answers 500.
func packageURI(w http.ResponseWriter, r *http.Request) (string, bool) {
	proto, name := r.PathValue("protocol"), r.PathValue("package_name")
	uri := proto + "://" + name
	if !rayProtocols[proto] {
		text(w, http.StatusInternalServerError, "500 Internal Server Error\n\nServer got itself in trouble")
		return "", false
	}
	if proto != "gcs" {
		text(w, http.StatusInternalServerError, traceback("job_head.py", "NotImplementedError: Protocol Protocol."+strings.ToUpper(proto)+" is not supported"))
		return "", false
	}
	return uri, true
}

// getPackage is job_head.py:435-457: 200 with an empty body when the
// package is in the GCS, else 404 "Package <uri> does not exist".
func (s *Server) getPackage(w http.ResponseWriter, r *http.Request) {
	uri, ok := packageURI(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	_, exists := s.packages[uri]
	s.mu.Unlock()
	if !exists {
		text(w, http.StatusNotFound, "Package "+uri+" does not exist")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// putPackage is job_head.py:459-480: the body is stored under the URI
// (upload_package_to_gcs), 200 with an empty body; a failure is 500 with
// the traceback. A body of MaxRequestBody or more never reaches the
// handler: aiohttp answers 413. (The GCS's own limit, GCS_STORAGE_MAX_SIZE
// of 512 MiB, packaging.py:37-40, is never reached through it.)
func (s *Server) putPackage(w http.ResponseWriter, r *http.Request) {
	uri, ok := packageURI(w, r)
	if !ok {
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBody))
	if err != nil {
		text(w, http.StatusInternalServerError, traceback("job_head.py", "aiohttp.web_exceptions.HTTPBadRequest: "+err.Error()))
		return
	}
	if len(data) >= MaxRequestBody {
		text(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Maximum request body size %d exceeded", MaxRequestBody))
		return
	}
	s.mu.Lock()
	s.packages[uri] = data
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// submitFields are JobSubmitRequest's fields (common.py:398-426).
var submitFields = map[string]bool{
	"entrypoint": true, "submission_id": true, "job_id": true, "runtime_env": true, "metadata": true,
	"entrypoint_num_cpus": true, "entrypoint_num_gpus": true, "entrypoint_memory": true, "entrypoint_resources": true,
}

// submitJob is job_head.py:482-514 with the agent's job_agent.py:35-73 and
// JobManager.submit_job (job_manager.py:423-579):
//   - the body is read as JSON (utils.py:139, outside the try: a body that
//     is not a JSON object is an unhandled exception, 500);
//   - keys whose value is null are dropped (utils.py:49-51, 139), then
//     JobSubmitRequest(**body) (common.py:394-396): an unknown key or a
//     missing entrypoint is a TypeError, and so is a field of the wrong
//     type (__post_init__, common.py:428-512): 400 with the traceback
//     (utils.py:140-147);
//   - a submission_id already used: JobManager raises ValueError
//     (job_manager.py:501-508), the agent answers 400 (job_agent.py:58-62),
//     which the head's agent client turns into RuntimeError("Request
//     failed with status code 400: …") (job_head.py:128-131) and the head
//     into 500 (job_head.py:504-508);
//   - otherwise 200 {"job_id": id, "submission_id": id} (job_agent.py:57,
//     job_head.py:510-514), the ID generated as raysubmit_<16 characters>
//     when none was given (job_manager.py:46-57); the job is PENDING with
//     start_time now (job_manager.py:490-500).
//
// A runtime_env naming a gcs:// package that was never uploaded is
// accepted all the same; the job then fails when Ray sets up its
// runtime_env (job_manager.py:259-268: "runtime_env setup failed: …", the
// download error of packaging.py:744-757).
func (s *Server) submitJob(w http.ResponseWriter, r *http.Request) {
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	var body any
	if err := dec.Decode(&body); err != nil {
		text(w, http.StatusInternalServerError, "500 Internal Server Error\n\nServer got itself in trouble")
		return
	}
	m, ok := body.(map[string]any)
	if !ok {
		text(w, http.StatusInternalServerError, "500 Internal Server Error\n\nServer got itself in trouble")
		return
	}
	for k, v := range m {
		if v == nil {
			delete(m, k)
		}
	}
	job, err := parseSubmit(m)
	if err != nil {
		text(w, http.StatusBadRequest, traceback("utils.py", err.Error()))
		return
	}
	s.mu.Lock()
	if job.SubmissionID == "" {
		job.SubmissionID = generateJobID()
	}
	if _, dup := s.jobs[job.SubmissionID]; dup {
		s.mu.Unlock()
		agent := traceback("job_agent.py", "ValueError: Job with submission_id "+job.SubmissionID+" already exists. Please use a different submission_id.")
		text(w, http.StatusInternalServerError, traceback("job_head.py", "RuntimeError: Request failed with status code 400: "+agent+"."))
		return
	}
	job.Status = JobPending
	job.StartTime = time.Now().UnixMilli()
	missing := s.missingPackages(job.RuntimeEnv)
	s.jobs[job.SubmissionID] = job
	s.jobOrder = append(s.jobOrder, job.SubmissionID)
	run := s.runner
	s.mu.Unlock()
	if len(missing) > 0 {
		id := job.SubmissionID
		go s.UpdateJob(id, func(j *Job) {
			j.Status = JobFailed
			j.Message = "runtime_env setup failed: Failed to set up runtime environment.\n" + traceback("packaging.py",
				"OSError: Failed to download runtime_env file package "+missing[0]+" from the GCS to the Ray worker node. The package may have prematurely been deleted from the GCS due to a long upload time or a problem with Ray. Try setting the environment variable RAY_RUNTIME_ENV_TEMPORARY_REFERENCE_EXPIRATION_S  to a value larger than the upload time in seconds (the default is 600). If this fails, try re-running after making any change to a file in the file package.")
		})
	} else if run != nil {
		go run(*job)
	}
	jsonStatus(w, http.StatusOK, map[string]string{"job_id": job.SubmissionID, "submission_id": job.SubmissionID})
}

// missingPackages lists the gcs:// URIs of env's working_dir and py_modules
// that were never uploaded. Call with s.mu held.
func (s *Server) missingPackages(env map[string]any) []string {
	var uris []string
	if wd, ok := env["working_dir"].(string); ok {
		uris = append(uris, wd)
	}
	if pm, ok := env["py_modules"].([]any); ok {
		for _, u := range pm {
			if s, ok := u.(string); ok {
				uris = append(uris, s)
			}
		}
	}
	var missing []string
	for _, u := range uris {
		if strings.HasPrefix(u, "gcs://") {
			if _, ok := s.packages[u]; !ok {
				missing = append(missing, u)
			}
		}
	}
	return missing
}

// parseSubmit is JobSubmitRequest(**m) with its __post_init__ checks
// (common.py:428-512); the error is the Python exception line.
func parseSubmit(m map[string]any) (*Job, error) {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !submitFields[k] {
			return nil, fmt.Errorf("TypeError: JobSubmitRequest.__init__() got an unexpected keyword argument '%s'", k)
		}
	}
	ep, ok := m["entrypoint"]
	if !ok {
		return nil, fmt.Errorf("TypeError: JobSubmitRequest.__init__() missing 1 required positional argument: 'entrypoint'")
	}
	j := &Job{}
	if j.Entrypoint, ok = ep.(string); !ok {
		return nil, fmt.Errorf("TypeError: entrypoint must be a string, got %s", pyType(ep))
	}
	for _, k := range []string{"submission_id", "job_id"} {
		if v, ok := m[k]; ok {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("TypeError: %s must be a string if provided, got %s", k, pyType(v))
			}
			if j.SubmissionID == "" {
				// submission_id or job_id (job_agent.py:43).
				j.SubmissionID = s
			}
		}
	}
	if v, ok := m["runtime_env"]; ok {
		env, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("TypeError: runtime_env must be a dict, got %s", pyType(v))
		}
		j.RuntimeEnv = plain(env).(map[string]any)
	}
	if v, ok := m["metadata"]; ok {
		md, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("TypeError: metadata must be a dict, got %s", pyType(v))
		}
		j.Metadata = map[string]string{}
		for k, x := range md {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("TypeError: metadata values must be strings, got %s", pyType(x))
			}
			j.Metadata[k] = s
		}
	}
	for _, f := range []struct {
		key string
		dst **float64
	}{{"entrypoint_num_cpus", &j.EntrypointNumCPUs}, {"entrypoint_num_gpus", &j.EntrypointNumGPUs}} {
		if v, ok := m[f.key]; ok {
			n, ok := v.(json.Number)
			if !ok {
				return nil, fmt.Errorf("TypeError: %s must be a number, got %s", f.key, pyType(v))
			}
			x, _ := n.Float64()
			*f.dst = &x
		}
	}
	if v, ok := m["entrypoint_memory"]; ok {
		n, ok := v.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil {
			return nil, fmt.Errorf("TypeError: entrypoint_memory must be an integer, got %s", pyType(v))
		}
		j.EntrypointMemory = &i
	}
	if v, ok := m["entrypoint_resources"]; ok {
		res, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("TypeError: entrypoint_resources must be a dict, got %s", pyType(v))
		}
		j.EntrypointResources = map[string]float64{}
		for k, x := range res {
			n, ok := x.(json.Number)
			if !ok {
				return nil, fmt.Errorf("TypeError: entrypoint_resources values must be numbers, got %s", pyType(x))
			}
			j.EntrypointResources[k], _ = n.Float64()
		}
	}
	return j, nil
}

// plain turns json.Numbers back into float64 or int64, as Python's json
// would give ints and floats.
func plain(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = plain(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = plain(e)
		}
		return x
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// pyType names a JSON value's Python type as type(x) prints it.
func pyType(v any) string {
	switch x := v.(type) {
	case string:
		return "<class 'str'>"
	case bool:
		return "<class 'bool'>"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "<class 'int'>"
		}
		return "<class 'float'>"
	case map[string]any:
		return "<class 'dict'>"
	case []any:
		return "<class 'list'>"
	}
	return "<class 'NoneType'>"
}

const jobIDChars = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz123456789"

// generateJobID is job_manager.py:46-57: raysubmit_ and 16 characters
// from letters and digits without I, l, o, O and 0.
func generateJobID() string {
	var b strings.Builder
	b.WriteString("raysubmit_")
	for i := 0; i < 16; i++ {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(jobIDChars))))
		b.WriteByte(jobIDChars[n.Int64()])
	}
	return b.String()
}

// details is JobDetails.dict() (pydantic_models.py:38-105) for a
// submission job, built as find_job_by_ids builds it (utils.py:251-261).
func details(j *Job) map[string]any {
	var jobID, driver, agent, node, exit, end any
	if j.JobID != "" {
		jobID = j.JobID
	}
	if j.DriverInfo != nil {
		driver = *j.DriverInfo
	}
	if j.DriverAgentAddress != "" {
		agent = j.DriverAgentAddress
	}
	if j.DriverNodeID != "" {
		node = j.DriverNodeID
	}
	if j.DriverExitCode != nil {
		exit = *j.DriverExitCode
	}
	if j.EndTime != 0 {
		end = j.EndTime
	}
	var errType any
	if j.ErrorType != "" {
		errType = j.ErrorType
	}
	return map[string]any{
		"type": "SUBMISSION", "job_id": jobID, "submission_id": j.SubmissionID, "driver_info": driver,
		"status": j.Status, "entrypoint": j.Entrypoint, "message": message(j), "error_type": errType,
		"start_time": j.StartTime, "end_time": end, "metadata": orEmpty(j.Metadata), "runtime_env": j.RuntimeEnv,
		"driver_agent_http_address": agent, "driver_node_id": node, "driver_exit_code": exit,
	}
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// message is JobInfo.__post_init__'s default message (common.py:112-145).
func message(j *Job) string {
	if j.Message != "" {
		return j.Message
	}
	switch j.Status {
	case JobPending:
		m := "Job has not started yet."
		if (j.EntrypointNumCPUs != nil && *j.EntrypointNumCPUs > 0) || (j.EntrypointNumGPUs != nil && *j.EntrypointNumGPUs > 0) ||
			(j.EntrypointMemory != nil && *j.EntrypointMemory > 0) || len(j.EntrypointResources) > 0 {
			m += " It may be waiting for resources (CPUs, GPUs, memory, custom resources) to become available."
		}
		if len(j.RuntimeEnv) > 0 {
			m += " It may be waiting for the runtime environment to be set up."
		}
		return m
	case JobRunning:
		return "Job is currently running."
	case JobStopped:
		return "Job was intentionally stopped."
	case JobSucceeded:
		return "Job finished successfully."
	case JobFailed:
		return "Job failed."
	}
	return ""
}

// findJob is find_job_by_ids (utils.py:221-261): a submission ID, or the
// Ray job ID of a submission's driver. Call with s.mu held.
func (s *Server) findJob(id string) *Job {
	if j, ok := s.jobs[id]; ok {
		return j
	}
	for _, sid := range s.jobOrder {
		if j := s.jobs[sid]; j != nil && j.JobID == id {
			return j
		}
	}
	return nil
}

// listJobs is job_head.py:602-628: every submission job, as a JSON list.
func (s *Server) listJobs(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := []map[string]any{}
	for _, id := range s.jobOrder {
		if j := s.jobs[id]; j != nil {
			out = append(out, details(j))
		}
	}
	s.mu.Unlock()
	jsonStatus(w, http.StatusOK, out)
}

// getJob is job_head.py:580-598: 404 "Job <id> does not exist", else 200
// with JobDetails.
func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	j := s.findJob(id)
	var d map[string]any
	if j != nil {
		d = details(j)
	}
	s.mu.Unlock()
	if j == nil {
		text(w, http.StatusNotFound, "Job "+id+" does not exist")
		return
	}
	jsonStatus(w, http.StatusOK, d)
}

// jobLogs is job_head.py:630-665: 404 for an unknown job, else 200
// {"logs": "…"} ("" before the driver has an agent).
func (s *Server) jobLogs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	j := s.findJob(id)
	var logs string
	if j != nil {
		logs = j.Logs
	}
	s.mu.Unlock()
	if j == nil {
		text(w, http.StatusNotFound, "Job "+id+" does not exist")
		return
	}
	jsonStatus(w, http.StatusOK, map[string]string{"logs": logs})
}

// stopJob is job_head.py:516-546: 404 for an unknown job, else 200
// {"stopped": true} when the job's supervisor was still alive (the job not
// terminal; JobManager.stop_job, job_manager.py:581-593), false otherwise.
func (s *Server) stopJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	j := s.findJob(id)
	var stopped bool
	var copyJob Job
	stop := s.stopper
	if j != nil && !terminal(j.Status) {
		stopped = true
		copyJob = *j
		if stop == nil {
			j.Status = JobStopped
			j.EndTime = time.Now().UnixMilli()
		}
	}
	s.mu.Unlock()
	if j == nil {
		text(w, http.StatusNotFound, "Job "+id+" does not exist")
		return
	}
	if stopped && stop != nil {
		stop(copyJob)
	}
	jsonStatus(w, http.StatusOK, map[string]bool{"stopped": stopped})
}

// deleteJob is job_head.py:548-578: 404 for an unknown job; a job that is
// not terminal makes JobManager.delete_job raise RuntimeError
// (job_manager.py:595-603), 500 through the agent; else 200
// {"deleted": true}.
func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.findJob(id)
	if j == nil {
		text(w, http.StatusNotFound, "Job "+id+" does not exist")
		return
	}
	if !terminal(j.Status) {
		agent := traceback("job_manager.py", fmt.Sprintf("RuntimeError: Attempted to delete job '%s', but it is in a non-terminal state %s.", j.SubmissionID, j.Status))
		text(w, http.StatusInternalServerError, traceback("job_head.py", "RuntimeError: Request failed with status code 500: "+agent+"."))
		return
	}
	delete(s.jobs, j.SubmissionID)
	for i, sid := range s.jobOrder {
		if sid == j.SubmissionID {
			s.jobOrder = append(s.jobOrder[:i], s.jobOrder[i+1:]...)
			break
		}
	}
	jsonStatus(w, http.StatusOK, map[string]bool{"deleted": true})
}
