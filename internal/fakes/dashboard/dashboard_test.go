package dashboard

import (
	"encoding/json"
	"io"
	"net/http"
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
	if diff := cmp.Diff([]string{"a"}, ids); diff != "" {
		t.Errorf("filtered workers (-want +got):\n%s", diff)
	}
	if res["total"] != float64(4) || res["num_filtered"] != float64(1) {
		t.Errorf("total %v num_filtered %v", res["total"], res["num_filtered"])
	}
	if diff := cmp.Diff([]string{"/api/v0/workers?" + q}, s.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
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
