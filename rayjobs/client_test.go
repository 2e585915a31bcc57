package rayjobs

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/debug/dashboard/dashboardtest"
)

func newClient(t *testing.T, base string, opts ...Option) *Client {
	t.Helper()
	c, err := New(base, append([]Option{WithRetries(0), WithTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// packageRequests keeps the fake's package and job requests.
func packageRequests(reqs []string) []string {
	var out []string
	for _, r := range reqs {
		if strings.HasPrefix(r, "/api/packages/") || strings.HasPrefix(r, "/api/jobs/") {
			out = append(out, r)
		}
	}
	return out
}

// TestSubmitUploadsLikeTheSDK: a local working_dir and py_modules directory
// are packaged, checked with GET /api/packages/gcs/<name> (404: not there,
// job_head.py:451-455), uploaded with PUT (job_head.py:459-480), and
// replaced by their URIs in the submitted runtime_env; a second submission
// of the same directories uploads nothing (GET answers 200,
// job_head.py:457), as SubmissionClient._upload_package_if_needed.
func TestSubmitUploadsLikeTheSDK(t *testing.T) {
	ctx := context.Background()
	d := dashboardtest.New()
	defer d.Close()
	wd := writeTree(t, map[string]string{"sample_code.py": "print('hi')\n", "data/x.txt": "x\n", ".gitignore": "*.log\n", "debug.log": "no\n"})
	mod := writeTree(t, map[string]string{"dependency/__init__.py": "", "dependency/util.py": "X = 1\n"})
	modDir := filepath.Join(mod, "dependency")
	c := newClient(t, d.URL)

	env := map[string]any{
		"working_dir": wd,
		"py_modules":  []any{modDir, "gcs://_ray_pkg_0123456789abcdef.zip"},
		"env_vars":    map[string]any{"A": "1"},
		"pip":         []any{"debugpy"},
	}
	d.PutPackage("gcs://_ray_pkg_0123456789abcdef.zip", []byte("PK\x05\x06"+strings.Repeat("\x00", 18)))
	id, err := c.Submit(ctx, SubmitRequest{Entrypoint: "python sample_code.py", SubmissionID: "job-1", RuntimeEnv: env, Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if id != "job-1" {
		t.Errorf("submission ID %q, want job-1", id)
	}
	wdPkg, err := Package(ctx, wd, nil)
	if err != nil {
		t.Fatal(err)
	}
	modPkg, err := Package(ctx, modDir, nil, WithParentDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*Archive{wdPkg, modPkg} {
		got, ok := d.Package(p.URI)
		if !ok {
			t.Fatalf("%s was not uploaded", p.URI)
		}
		if string(got) != string(p.Zip) {
			t.Errorf("%s: the uploaded bytes differ from Package's zip", p.URI)
		}
	}
	job, ok := d.Job("job-1")
	if !ok {
		t.Fatal("the fake has no job job-1")
	}
	wantEnv := map[string]any{
		"working_dir": wdPkg.URI,
		"py_modules":  []any{modPkg.URI, "gcs://_ray_pkg_0123456789abcdef.zip"},
		"env_vars":    map[string]any{"A": "1"},
		// RuntimeEnv(**env).to_dict()'s form of a pip list.
		"pip": map[string]any{"packages": []any{"debugpy"}, "pip_check": false},
	}
	if diff := cmp.Diff(wantEnv, job.RuntimeEnv); diff != "" {
		t.Errorf("submitted runtime_env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"k": "v"}, job.Metadata); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if env["working_dir"] != wd {
		t.Errorf("Submit changed the caller's runtime_env: working_dir %v", env["working_dir"])
	}

	// Again, with the packages on the cluster: no PUT.
	before := len(d.Requests())
	if _, err := c.Submit(ctx, SubmitRequest{Entrypoint: "python sample_code.py", SubmissionID: "job-2", RuntimeEnv: env}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/api/packages/gcs/" + wdPkg.Name(),
		"/api/packages/gcs/" + modPkg.Name(),
		"/api/jobs/",
	}
	if diff := cmp.Diff(want, packageRequests(d.Requests()[before:])); diff != "" {
		t.Errorf("requests of the second submission (-want +got):\n%s", diff)
	}
	if j, _ := d.Job("job-2"); len(j.Metadata) != 0 {
		t.Errorf("job-2 metadata %v, want {}", j.Metadata)
	}
}

// TestJobLifecycle follows a job through the fake's runner: PENDING, then
// RUNNING, then SUCCEEDED with its exit code and logs; GET
// /api/jobs/{id} (job_head.py:580-598), /logs (630-665), /stop (516-546),
// DELETE (548-578).
func TestJobLifecycle(t *testing.T) {
	ctx := context.Background()
	d := dashboardtest.New()
	defer d.Close()
	release := make(chan struct{})
	d.SetJobRunner(func(j dashboardtest.Job) {
		d.UpdateJob(j.SubmissionID, func(j *dashboardtest.Job) {
			j.Status, j.JobID = dashboardtest.JobRunning, "02000000"
			j.DriverInfo = &dashboardtest.DriverInfo{ID: "02000000", NodeIPAddress: "127.0.0.1", PID: "42"}
		})
		<-release
		zero := 0
		d.UpdateJob(j.SubmissionID, func(j *dashboardtest.Job) {
			j.Logs, j.Status, j.DriverExitCode = "hello\n", dashboardtest.JobSucceeded, &zero
		})
	})
	c := newClient(t, d.URL)
	id, err := c.Submit(ctx, SubmitRequest{Entrypoint: "echo hello"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, "raysubmit_") || len(id) != len("raysubmit_")+16 {
		t.Errorf("generated submission ID %q, want raysubmit_ and 16 characters", id)
	}
	j := waitStatus(t, c, id, StatusRunning)
	if j.JobID != "02000000" || j.DriverInfo == nil || j.DriverInfo.PID != "42" || j.Message != "Job is currently running." {
		t.Errorf("running job %+v", j)
	}
	// By the driver's Ray job ID too (find_job_by_ids, utils.py:221-261).
	if byJobID, err := c.Job(ctx, "02000000"); err != nil || byJobID.SubmissionID != id {
		t.Errorf("Job(02000000): %+v, %v", byJobID, err)
	}
	if _, err := c.Delete(ctx, id); err == nil || !strings.Contains(err.Error(), "non-terminal state RUNNING") {
		t.Errorf("Delete of a running job: %v, want Ray's refusal", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if _, err := c.Wait(wctx, id, 10*time.Millisecond, nil); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for job "+id+" (last status RUNNING)") {
		t.Errorf("Wait on a running job past its context: %v", err)
	}
	cancel()
	close(release)
	var statuses []JobStatus
	j, err = c.Wait(ctx, id, 10*time.Millisecond, func(j *JobDetails) {
		if len(statuses) == 0 || statuses[len(statuses)-1] != j.Status {
			statuses = append(statuses, j.Status)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if last := statuses[len(statuses)-1]; last != StatusSucceeded || j.Status != StatusSucceeded {
		t.Errorf("Wait saw %v, returned %s", statuses, j.Status)
	}
	if j.DriverExitCode == nil || *j.DriverExitCode != 0 || j.EndTime < j.StartTime || j.Message != "Job finished successfully." {
		t.Errorf("finished job %+v", j)
	}
	logs, err := c.Logs(ctx, id)
	if err != nil || logs != "hello\n" {
		t.Errorf("Logs: %q, %v", logs, err)
	}
	if stopped, err := c.Stop(ctx, id); err != nil || stopped {
		t.Errorf("Stop of a finished job: %v, %v; want false", stopped, err)
	}
	jobs, err := c.Jobs(ctx)
	if err != nil || len(jobs) != 1 || jobs[0].SubmissionID != id || jobs[0].Type != "SUBMISSION" {
		t.Errorf("Jobs: %+v, %v", jobs, err)
	}
	if deleted, err := c.Delete(ctx, id); err != nil || !deleted {
		t.Errorf("Delete: %v, %v", deleted, err)
	}
	_, err = c.Job(ctx, id)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), d.URL+"/api/jobs/"+id) || !strings.Contains(err.Error(), "Job "+id+" does not exist") {
		t.Errorf("Job after Delete: %v; want a 404 naming the URL and Ray's text", err)
	}
}

func waitStatus(t *testing.T, c *Client, id string, want JobStatus) *JobDetails {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		j, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status == want {
			return j
		}
		if j.Status.Terminal() {
			t.Fatalf("job %s ended %s (%s), want %s", id, j.Status, j.Message, want)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s still %s, want %s", id, j.Status, want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestStopPendingJob(t *testing.T) {
	ctx := context.Background()
	d := dashboardtest.New()
	defer d.Close()
	c := newClient(t, d.URL)
	id, err := c.Submit(ctx, SubmitRequest{Entrypoint: "sleep 100", RuntimeEnv: map[string]any{"env_vars": map[string]any{"X": "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// common.py:116-135: PENDING's message names the runtime_env wait.
	if j.Status != StatusPending || j.Message != "Job has not started yet. It may be waiting for the runtime environment to be set up." {
		t.Errorf("pending job: %s %q", j.Status, j.Message)
	}
	if stopped, err := c.Stop(ctx, id); err != nil || !stopped {
		t.Fatalf("Stop: %v, %v", stopped, err)
	}
	if j, err := c.Job(ctx, id); err != nil || j.Status != StatusStopped {
		t.Errorf("after Stop: %+v, %v", j, err)
	}
}

// TestSubmitErrors: what Ray answers to a bad submission reaches the
// caller with the URL, the status and the cause, and bad local input is
// refused before anything is sent.
func TestSubmitErrors(t *testing.T) {
	ctx := context.Background()
	d := dashboardtest.New()
	defer d.Close()
	c := newClient(t, d.URL)
	if _, err := c.Submit(ctx, SubmitRequest{Entrypoint: "true", SubmissionID: "dup"}); err != nil {
		t.Fatal(err)
	}
	dir := writeTree(t, map[string]string{"m.py": "", "w.whl": "not really", "x.zip": "PK"})
	for _, tc := range []struct {
		name string
		req  SubmitRequest
		want []string
	}{
		// job_manager.py:501-508 through job_agent.py:58-62 and job_head.py:504-508.
		{"duplicate submission_id", SubmitRequest{Entrypoint: "true", SubmissionID: "dup"},
			[]string{"POST " + d.URL + "/api/jobs/", "HTTP 500", "Job with submission_id dup already exists"}},
		{"empty entrypoint", SubmitRequest{}, []string{"entrypoint is empty"}},
		{"missing working_dir", SubmitRequest{Entrypoint: "true", RuntimeEnv: map[string]any{"working_dir": filepath.Join(dir, "nope")}},
			[]string{"working_dir " + filepath.Join(dir, "nope") + " must be an existing directory"}},
		{"zip working_dir", SubmitRequest{Entrypoint: "true", RuntimeEnv: map[string]any{"working_dir": filepath.Join(dir, "x.zip")}},
			[]string{"local .zip file cannot be uploaded"}},
		{"remote working_dir not a zip", SubmitRequest{Entrypoint: "true", RuntimeEnv: map[string]any{"working_dir": "https://example.invalid/x.tar"}},
			[]string{"only .zip files are supported for remote URIs"}},
		{"py file in py_modules", SubmitRequest{Entrypoint: "true", RuntimeEnv: map[string]any{"py_modules": []any{filepath.Join(dir, "m.py")}}},
			[]string{"py_modules[0]", "single .py file"}},
		{"env_vars not strings", SubmitRequest{Entrypoint: "true", RuntimeEnv: map[string]any{"env_vars": map[string]any{"N": 1}}},
			[]string{`env_vars["N"]: want a string`}},
		{"missing requirements file", SubmitRequest{Entrypoint: "true", RuntimeEnv: map[string]any{"pip": filepath.Join(dir, "req.txt")}},
			[]string{"runtime_env pip", "req.txt is not a valid file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(d.Requests())
			_, err := c.Submit(ctx, tc.req)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if tc.name != "duplicate submission_id" && len(d.Requests()) != before {
				t.Errorf("a refused submission sent %v", d.Requests()[before:])
			}
		})
	}
}

// TestWheelAndRequirements: a local wheel in py_modules is uploaded as it
// is under gcs://<file name> (packaging.py get_uri_for_package); a pip
// requirements file is read locally (validation.py
// _handle_local_deps_requirement_file).
func TestWheelAndRequirements(t *testing.T) {
	ctx := context.Background()
	d := dashboardtest.New()
	defer d.Close()
	c := newClient(t, d.URL)
	dir := writeTree(t, map[string]string{"dep-1.0-py3-none-any.whl": "wheel bytes", "requirements.txt": "debugpy>=1.8.0\nrequests\n\n"})
	p, err := c.PrepareRuntimeEnv(ctx, map[string]any{
		"py_modules": []any{filepath.Join(dir, "dep-1.0-py3-none-any.whl")},
		"pip":        filepath.Join(dir, "requirements.txt"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"py_modules": []any{"gcs://dep-1.0-py3-none-any.whl"},
		"pip":        map[string]any{"packages": []any{"debugpy>=1.8.0", "requests"}, "pip_check": false},
	}
	if diff := cmp.Diff(want, p.RuntimeEnv); diff != "" {
		t.Errorf("runtime_env (-want +got):\n%s", diff)
	}
	if b, ok := d.Package("gcs://dep-1.0-py3-none-any.whl"); !ok || string(b) != "wheel bytes" {
		t.Errorf("wheel upload: %q, %v", b, ok)
	}
	if len(p.Uploads) != 1 || !p.Uploads[0].Uploaded {
		t.Errorf("uploads %+v", p.Uploads)
	}
}

// TestMissingPackageFailsTheJob: a runtime_env naming a gcs:// package the
// cluster never received is accepted (200) and the job then fails in its
// runtime_env setup (job_manager.py:259-268), as in Ray.
func TestMissingPackageFailsTheJob(t *testing.T) {
	ctx := context.Background()
	d := dashboardtest.New()
	defer d.Close()
	c := newClient(t, d.URL)
	id, err := c.Submit(ctx, SubmitRequest{Entrypoint: "true", RuntimeEnv: map[string]any{"working_dir": "gcs://_ray_pkg_00000000deadbeef.zip"}})
	if err != nil {
		t.Fatal(err)
	}
	j := waitStatus(t, c, id, StatusFailed)
	if !strings.HasPrefix(j.Message, "runtime_env setup failed:") || !strings.Contains(j.Message, "gcs://_ray_pkg_00000000deadbeef.zip") {
		t.Errorf("message %q", j.Message)
	}
}

func TestVersionChecks(t *testing.T) {
	ctx := context.Background()
	d := dashboardtest.New()
	defer d.Close()
	c := newClient(t, d.URL)
	v, err := c.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&Version{Version: "4", RayVersion: "2.46.0", RayCommit: "5c47023856423b87afe3abe3b6c30c9782120665", SessionName: "session_2026-11-28_12-00-00_000000_1"}, v); diff != "" {
		t.Errorf("version (-want +got):\n%s", diff)
	}
	d.SetVersion(dashboardtest.JobVersion{Version: "4", RayVersion: "2.1.0"})
	cpus := 1.0
	_, err = c.Submit(ctx, SubmitRequest{Entrypoint: "true", EntrypointNumCPUs: &cpus})
	if err == nil || !strings.Contains(err.Error(), "runs Ray 2.1.0") || !strings.Contains(err.Error(), "needs Ray 2.2 or later") {
		t.Errorf("entrypoint_num_cpus on Ray 2.1.0: %v", err)
	}
	d.SetVersion(dashboardtest.JobVersion{Version: "4", RayVersion: "2.46.0"})
	mem := int64(1 << 30)
	id, err := c.Submit(ctx, SubmitRequest{Entrypoint: "true", EntrypointNumCPUs: &cpus, EntrypointMemory: &mem, EntrypointResources: map[string]float64{"worker": 1}})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := d.Job(id)
	if j.EntrypointNumCPUs == nil || *j.EntrypointNumCPUs != 1 || j.EntrypointMemory == nil || *j.EntrypointMemory != mem || j.EntrypointResources["worker"] != 1 {
		t.Errorf("entrypoint resources as the fake parsed them: %+v", j)
	}
}

func TestTransportErrors(t *testing.T) {
	ctx := context.Background()
	d := dashboardtest.New()
	defer d.Close()
	c := newClient(t, d.URL)

	d.SetMode(dashboardtest.HTML)
	if _, err := c.Job(ctx, "x"); err == nil || !strings.Contains(err.Error(), "got an HTML page") || !strings.Contains(err.Error(), d.URL+"/api/jobs/x") {
		t.Errorf("HTML answer: %v", err)
	}
	d.SetMode(dashboardtest.ServerError)
	var he *HTTPError
	if _, err := c.PackageExists(ctx, "gcs://_ray_pkg_0000000000000000.zip"); !errors.As(err, &he) || he.Status != 500 {
		t.Errorf("HTTP 500: %v", err)
	}
	d.SetMode(dashboardtest.Normal)

	// A dashboard that never answers: the timeout ends the call.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	hc := newClient(t, hang.URL, WithTimeout(200*time.Millisecond))
	start := time.Now()
	if _, err := hc.Version(ctx); err == nil || !strings.Contains(err.Error(), hang.URL+"/api/version") {
		t.Errorf("hanging dashboard: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("the timeout took %s", time.Since(start))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Version(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}

	// A server without the Jobs API (an old Ray, another service).
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	if err := newClient(t, other.URL).CheckVersion(ctx, "2.0", "the Jobs API"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no Jobs API") || !strings.Contains(err.Error(), other.URL+"/api/version") {
		t.Errorf("CheckVersion against a 404: %v", err)
	}

	for _, bad := range []string{"", "ftp://x", "http://"} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q): no error", bad)
		}
	}
	if c2, err := New("127.0.0.1:8265/"); err != nil || c2.Base() != "http://127.0.0.1:8265" {
		t.Errorf("New without a scheme: %v, %v", c2, err)
	}
}

func TestErrorBodyKeepsTheCause(t *testing.T) {
	long := "Traceback (most recent call last):\n" + strings.Repeat("  File \"x.py\", line 1, in f\n", 200) + "ValueError: the real cause"
	got := cut(long)
	if len(got) > 1100 || !strings.HasSuffix(got, "ValueError: the real cause") || !strings.HasPrefix(got, "Traceback") {
		t.Errorf("cut kept %d bytes: %q", len(got), got)
	}
}

// TestNormalizeLikeRuntimeEnv: the runtime_env submitted is what
// RuntimeEnv(**env).to_dict() makes of it in submit_job
// (runtime_env/runtime_env.py, runtime_env/validation.py).
func TestNormalizeLikeRuntimeEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      map[string]any
		want    map[string]any
		wantErr string
	}{
		{"pip list, duplicates dropped", map[string]any{"pip": []any{"debugpy", "a", "debugpy"}},
			map[string]any{"pip": map[string]any{"packages": []any{"debugpy", "a"}, "pip_check": false}}, ""},
		{"pip map keeps pip_version", map[string]any{"pip": map[string]any{"packages": []any{"a"}, "pip_version": "==23.0"}},
			map[string]any{"pip": map[string]any{"packages": []any{"a"}, "pip_check": false, "pip_version": "==23.0"}}, ""},
		{"empty pip dropped", map[string]any{"pip": []any{}}, map[string]any{}, ""},
		{"uv map gets its defaults", map[string]any{"uv": map[string]any{"packages": []any{"a"}}},
			map[string]any{"uv": map[string]any{"packages": []any{"a"}, "uv_check": false, "uv_pip_install_options": []any{"--no-cache"}}}, ""},
		{"empty excludes and env_vars dropped", map[string]any{"excludes": []any{}, "env_vars": map[string]any{}, "image_uri": "x"},
			map[string]any{"image_uri": "x"}, ""},
		{"config defaults", map[string]any{"config": map[string]any{"setup_timeout_seconds": 30.0, "other": 1}},
			map[string]any{"config": map[string]any{"setup_timeout_seconds": 30.0, "eager_install": true, "log_files": []any{}}}, ""},
		{"pip and conda", map[string]any{"pip": []any{"a"}, "conda": "env"}, nil, "cannot be specified at the same time"},
		{"pip map without packages", map[string]any{"pip": map[string]any{"pip_check": true}}, nil, "must include field 'packages'"},
		{"pip map unknown field", map[string]any{"pip": map[string]any{"packages": []any{}, "index": "x"}}, nil, `unknown field "index"`},
		{"bad setup timeout", map[string]any{"config": map[string]any{"setup_timeout_seconds": 0.0}}, nil, "greater than zero or -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := normalize(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tc.in); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
