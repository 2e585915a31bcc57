package debug

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// rayMapper maps the Ray kinds, as the API server of a cluster with
// KubeRay's CRDs does.
type rayMapper struct{}

func (rayMapper) RESTMapping(_ context.Context, gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	gvr := map[string]schema.GroupVersionResource{"RayCluster": RayClusters, "RayJob": RayJobs}[gk.Kind]
	return &meta.RESTMapping{Resource: gvr, GroupVersionKind: gvr.GroupVersion().WithKind(gk.Kind), Scope: meta.RESTScopeNamespace}, nil
}

// rayCluster is RayCluster name in namespace ns, with uid; deleting (a
// deletionTimestamp) with finalizers when given.
func rayCluster(name, uid string, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("ray.io/v1")
	u.SetKind("RayCluster")
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetUID(types.UID(uid))
	if len(finalizers) > 0 {
		now := metav1.NewTime(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC))
		u.SetDeletionTimestamp(&now)
		u.SetFinalizers(finalizers)
	}
	return u
}

// TestExisting: an object that is not being deleted exists; one being
// deleted is waited for (a waiting event naming its finalizers) and then
// does not, or exists when it was created again meanwhile; the wait ends
// at the session's timeout, or at Ctrl-C, saying which.
func TestExisting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		start   *unstructured.Unstructured
		then    func(t *testing.T, dyn *dynamicfake.FakeDynamicClient)
		cancel  bool
		want    bool
		wantErr string
		waiting bool
	}{
		{name: "absent"},
		{name: "there", start: rayCluster("rc", "1"), want: true},
		{name: "deleted while waiting", start: rayCluster("rc", "1", "ray.io/hold"), waiting: true,
			then: func(t *testing.T, dyn *dynamicfake.FakeDynamicClient) {
				if err := dyn.Tracker().Delete(RayClusters, "ns", "rc"); err != nil {
					t.Error(err)
				}
			}},
		{name: "created again while waiting", start: rayCluster("rc", "1", "ray.io/hold"), waiting: true, want: true,
			then: func(t *testing.T, dyn *dynamicfake.FakeDynamicClient) {
				if err := dyn.Tracker().Delete(RayClusters, "ns", "rc"); err != nil {
					t.Error(err)
				}
				if _, err := dyn.Resource(RayClusters).Namespace("ns").Create(context.Background(), rayCluster("rc", "2"), metav1.CreateOptions{}); err != nil {
					t.Error(err)
				}
			}},
		{name: "still there at the timeout", start: rayCluster("rc", "1", "ray.io/hold"), waiting: true,
			wantErr: "RayCluster/rc in namespace ns is still being deleted after 1s (since 2026-11-29T23:00:00Z, finalizers ray.io/hold): wait until kubectl get raycluster rc -n ns finds none"},
		{name: "Ctrl-C", start: rayCluster("rc", "1", "ray.io/hold"), waiting: true, cancel: true,
			wantErr: "interrupted while waiting for RayCluster/rc to be deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.start != nil {
				objs = append(objs, tc.start)
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{RayClusters: "RayClusterList"}, objs...)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			var events []Event
			var wg sync.WaitGroup
			s := &session{o: Options{Timeout: time.Second}, c: &Cluster{Namespace: "ns", Dynamic: dyn, Mapper: rayMapper{}},
				r: ReporterFunc(func(e Event) {
					mu.Lock()
					events = append(events, e)
					mu.Unlock()
					if e.Kind != KindWaiting {
						return
					}
					wg.Add(1)
					go func() { // while existing waits
						defer wg.Done()
						time.Sleep(100 * time.Millisecond)
						if tc.cancel {
							cancel()
						}
						if tc.then != nil {
							tc.then(t, dyn)
						}
					}()
				})}
			got, err := s.existing(ctx, rayCluster("rc", ""))
			wg.Wait()
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Errorf("existing = %v, want %v", got, tc.want)
			}
			waited := false
			for _, e := range events {
				if e.Kind == KindWaiting {
					waited = true
					if want := "RayCluster/rc is being deleted (since 2026-11-29T23:00:00Z, finalizers ray.io/hold): waiting for it to go before creating it again"; e.Message != want || e.Object != "RayCluster/rc" {
						t.Errorf("waiting event %q (object %q), want %q", e.Message, e.Object, want)
					}
				}
			}
			if waited != tc.waiting {
				t.Errorf("waited %v, want %v (events %+v)", waited, tc.waiting, events)
			}
		})
	}
}
