package dashboardtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func get(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v: %s", url, err, b)
	}
	return m
}

func TestFiltersLikeRay(t *testing.T) {
	s := New()
	defer s.Close()
	s.SetWorkers(
		Worker{WorkerID: "a", IsAlive: true, WorkerType: "WORKER", NumPausedThreads: 1},
		Worker{WorkerID: "b", IsAlive: true, WorkerType: "WORKER"},
		Worker{WorkerID: "c", IsAlive: false, WorkerType: "WORKER", NumPausedThreads: 1},
		Worker{WorkerID: "d", IsAlive: true, WorkerType: "DRIVER", NumPausedThreads: 1},
	)
	q := "limit=100&timeout=24&detail=True&filter_keys=num_paused_threads&filter_keys=is_alive&filter_predicates=%21%3D&filter_predicates=%3D&filter_values=0&filter_values=True&exclude_driver=True"
	m := get(t, s.URL+"/api/v0/workers?"+q)
	if m["result"] != true {
		t.Fatalf("envelope %v", m)
	}
	res := m["data"].(map[string]any)["result"].(map[string]any)
	var ids []string
	for _, r := range res["result"].([]any) {
		ids = append(ids, r.(map[string]any)["worker_id"].(string))
	}
	// The paused driver is listed: Ray's list_workers does not apply
	// exclude_driver (only list_tasks does).
	if diff := cmp.Diff([]string{"a", "d"}, ids); diff != "" {
		t.Errorf("filtered workers (-want +got):\n%s", diff)
	}
	if res["total"] != float64(4) || res["num_filtered"] != float64(2) {
		t.Errorf("total %v num_filtered %v", res["total"], res["num_filtered"])
	}
	if diff := cmp.Diff([]string{"/api/v0/workers?" + q}, s.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestExcludeDriverDropsOnlyDriverTasks: exclude_driver=True drops the
// DRIVER_TASK rows of /api/v0/tasks (the GCS's task filter) and nothing
// from /api/v0/workers.
func TestExcludeDriverDropsOnlyDriverTasks(t *testing.T) {
	s := New()
	defer s.Close()
	s.SetWorkers(
		Worker{WorkerID: "w", IsAlive: true, WorkerType: "WORKER"},
		Worker{WorkerID: "d", IsAlive: true, WorkerType: "DRIVER"},
	)
	s.SetTasks(
		Task{TaskID: "t1", Name: "f", State: "RUNNING", Type: "NORMAL_TASK", WorkerID: "w"},
		Task{TaskID: "t2", Name: "main", State: "RUNNING", Type: "DRIVER_TASK", WorkerID: "d"},
	)
	ids := func(path, key string) []string {
		m := get(t, s.URL+path)
		var out []string
		for _, r := range m["data"].(map[string]any)["result"].(map[string]any)["result"].([]any) {
			out = append(out, r.(map[string]any)[key].(string))
		}
		return out
	}
	for _, tc := range []struct {
		path, key string
		want      []string
	}{
		{"/api/v0/workers?exclude_driver=True", "worker_id", []string{"w", "d"}},
		{"/api/v0/workers?exclude_driver=False", "worker_id", []string{"w", "d"}},
		{"/api/v0/tasks?exclude_driver=True", "task_id", []string{"t1"}},
		{"/api/v0/tasks?exclude_driver=False", "task_id", []string{"t1", "t2"}},
	} {
		if diff := cmp.Diff(tc.want, ids(tc.path, tc.key)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.path, diff)
		}
	}
}

func TestMismatchedFiltersAreRejected(t *testing.T) {
	s := New()
	defer s.Close()
	m := get(t, s.URL+"/api/v0/tasks?filter_keys=state&filter_values=RUNNING")
	if m["result"] != false {
		t.Fatalf("expected result=false, got %v", m)
	}
}

// TestJobsAPIStrictLikeRay sends raw requests, as a client other than ours
// could, and checks the status and text Ray's handlers give (jobs.go cites
// job_head.py and the rest for each).
func TestJobsAPIStrictLikeRay(t *testing.T) {
	s := New()
	defer s.Close()
	s.PutPackage("gcs://_ray_pkg_00000000000000aa.zip", []byte("zip"))
	if _, err := send(t, s.URL, "POST", "/api/jobs/", `{"entrypoint":"true","submission_id":"taken"}`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path, body string
		want                     answer
	}{
		{"unknown field", "POST", "/api/jobs/", `{"entrypoint":"true","entrypoint_num_cpu":1}`, answer{400, "TypeError: JobSubmitRequest.__init__() got an unexpected keyword argument 'entrypoint_num_cpu'"}},
		{"unknown field set to null is dropped", "POST", "/api/jobs/", `{"entrypoint":"true","future_field":null}`, answer{200, `"submission_id":"raysubmit_`}},
		{"missing entrypoint", "POST", "/api/jobs/", `{"runtime_env":{}}`, answer{400, "missing 1 required positional argument: 'entrypoint'"}},
		{"metadata value not a string", "POST", "/api/jobs/", `{"entrypoint":"true","metadata":{"a":1}}`, answer{400, "TypeError: metadata values must be strings, got <class 'int'>"}},
		{"memory not an integer", "POST", "/api/jobs/", `{"entrypoint":"true","entrypoint_memory":1.5}`, answer{400, "TypeError: entrypoint_memory must be an integer, got <class 'float'>"}},
		{"runtime_env a list", "POST", "/api/jobs/", `{"entrypoint":"true","runtime_env":[]}`, answer{400, "TypeError: runtime_env must be a dict, got <class 'list'>"}},
		{"not JSON", "POST", "/api/jobs/", `entrypoint=true`, answer{500, "Internal Server Error"}},
		{"duplicate submission_id", "POST", "/api/jobs/", `{"entrypoint":"true","submission_id":"taken"}`, answer{500, "RuntimeError: Request failed with status code 400: Traceback"}},
		{"job_id stands for submission_id", "POST", "/api/jobs/", `{"entrypoint":"true","job_id":"old-style"}`, answer{200, `"submission_id":"old-style"`}},
		{"package missing", "GET", "/api/packages/gcs/_ray_pkg_00000000000000bb.zip", "", answer{404, "Package gcs://_ray_pkg_00000000000000bb.zip does not exist"}},
		{"package present", "GET", "/api/packages/gcs/_ray_pkg_00000000000000aa.zip", "", answer{200, ""}},
		{"package upload", "PUT", "/api/packages/gcs/_ray_pkg_00000000000000cc.zip", "PK", answer{200, ""}},
		{"unknown protocol", "GET", "/api/packages/ftp/x.zip", "", answer{500, "Internal Server Error"}},
		{"protocol other than gcs", "GET", "/api/packages/s3/x.zip", "", answer{500, "NotImplementedError"}},
		{"unknown job", "GET", "/api/jobs/nope", "", answer{404, "Job nope does not exist"}},
		{"logs of an unknown job", "GET", "/api/jobs/nope/logs", "", answer{404, "Job nope does not exist"}},
		{"stop an unknown job", "POST", "/api/jobs/nope/stop", "", answer{404, "Job nope does not exist"}},
		{"stop a pending job", "POST", "/api/jobs/taken/stop", "", answer{200, `{"stopped":true}`}},
		{"version", "GET", "/api/version", "", answer{200, `"ray_version":"2.46.0"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := send(t, s.URL, tc.method, tc.path, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got.Has, tc.want.Has) {
				t.Errorf("body %q does not hold %q", got.Has, tc.want.Has)
			}
			got.Has = tc.want.Has
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if b, ok := s.Package("gcs://_ray_pkg_00000000000000cc.zip"); !ok || string(b) != "PK" {
		t.Errorf("uploaded package: %q, %v", b, ok)
	}
}

// answer is a status and a text the body must hold.
type answer struct {
	Status int
	Has    string
}

func send(t *testing.T, base, method, path, body string) (answer, error) {
	t.Helper()
	var out answer
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return out, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out.Status, out.Has = resp.StatusCode, string(b)
	return out, nil
}
