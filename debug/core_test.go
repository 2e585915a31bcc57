package debug

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// clientsetCore is the CoreAPI of a client-go clientset, for tests that
// use client-go's fake clientset (its label and field selectors, its
// NotFound errors). Connect's REST implementation meets a real API server
// in tests/kube.
type clientsetCore struct{ kubernetes.Interface }

var _ CoreAPI = clientsetCore{}

func (c clientsetCore) ListPods(ctx context.Context, ns, sel string) (*corev1.PodList, error) {
	return c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
}

func (c clientsetCore) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	return c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
}

func (c clientsetCore) GetSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	return c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

func (c clientsetCore) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
}

func (c clientsetCore) ListEvents(ctx context.Context, ns, sel string) (*corev1.EventList, error) {
	return c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
}

func (c clientsetCore) PodLogs(ctx context.Context, ns, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return c.CoreV1().Pods(ns).GetLogs(pod, opts).Stream(ctx)
}

func (c clientsetCore) ReviewAccess(ctx context.Context, r *authv1.SelfSubjectAccessReview) (*authv1.SelfSubjectAccessReview, error) {
	return c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, r, metav1.CreateOptions{})
}

func (c clientsetCore) PodSubresourceURL(string, string, string, runtime.Object) *url.URL {
	panic("clientsetCore: the fake clientset has no URLs; exec and port-forward are tested against a real API server (tests/kube)")
}

// TestResourceMapper: kinds are mapped from their group version's
// resource list, read once; subresources are not kinds; a group version
// the server does not serve is a NoKindMatchError (which mapping turns
// into "is the KubeRay operator installed?") and is asked again next
// time, as a CRD may have been installed since.
func TestResourceMapper(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	rayServed := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		served := rayServed
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/v1":
			// The API server lists pods/log (kind Pod's subresources carry
			// other kinds) before pods.
			io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[
				{"name":"pods/log","singularName":"","namespaced":true,"kind":"Pod","verbs":["get"]},
				{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get","list"]},
				{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["get"]}]}`)
		case r.URL.Path == "/apis/ray.io/v1" && served:
			io.WriteString(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"ray.io/v1","resources":[
				{"name":"rayjobs","singularName":"rayjob","namespaced":true,"kind":"RayJob","verbs":["get","patch"]}]}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`)
		}
	}))
	defer srv.Close()
	m, err := newResourceMapper(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gk     schema.GroupKind
		want   schema.GroupVersionResource
		wantNS bool
	}{
		{schema.GroupKind{Kind: "Pod"}, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true},
		{schema.GroupKind{Kind: "Namespace"}, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false},
	} {
		got, err := m.RESTMapping(context.Background(), tc.gk, "v1")
		if err != nil {
			t.Fatalf("RESTMapping(%v): %v", tc.gk, err)
		}
		if got.Resource != tc.want || (got.Scope.Name() == meta.RESTScopeNameNamespace) != tc.wantNS {
			t.Errorf("RESTMapping(%v) = %v %s, want %v namespaced=%v", tc.gk, got.Resource, got.Scope.Name(), tc.want, tc.wantNS)
		}
	}
	if _, err := m.RESTMapping(context.Background(), schema.GroupKind{Kind: "ConfigMap"}, "v1"); !meta.IsNoMatchError(err) {
		t.Errorf("an unlisted kind: got %v, want a NoKindMatchError", err)
	}
	rayJob := schema.GroupKind{Group: "ray.io", Kind: "RayJob"}
	if _, err := m.RESTMapping(context.Background(), rayJob, "v1"); !meta.IsNoMatchError(err) {
		t.Errorf("a group version the server does not serve: got %v, want a NoKindMatchError", err)
	}
	mu.Lock()
	rayServed = true
	mu.Unlock()
	got, err := m.RESTMapping(context.Background(), rayJob, "v1")
	if err != nil {
		t.Fatalf("once the CRD is served: %v", err)
	}
	if want := (schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayjobs"}); got.Resource != want {
		t.Errorf("RayJob: %v, want %v", got.Resource, want)
	}
	if _, err := m.RESTMapping(context.Background(), rayJob, "v1"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(map[string]int{"/api/v1": 1, "/apis/ray.io/v1": 2}, hits); diff != "" {
		t.Errorf("discovery requests (-want +got):\n%s", diff)
	}
}

// TestResourceMapperServerError: an answer other than 404 is an error
// naming the URL, not "not served".
func TestResourceMapperServerError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"system:anonymous\" cannot get path \"/apis/ray.io/v1\"","reason":"Forbidden","details":{},"code":403}`)
	}))
	defer srv.Close()
	m, err := newResourceMapper(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.RESTMapping(context.Background(), schema.GroupKind{Group: "ray.io", Kind: "RayJob"}, "v1")
	if err == nil || meta.IsNoMatchError(err) || !strings.Contains(err.Error(), srv.URL+"/apis/ray.io/v1") || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("got %v, want a forbidden error naming %s/apis/ray.io/v1", err, srv.URL)
	}
}

// TestEnforcesRestricted: the session reads its namespace's PodSecurity
// enforce label; a Namespace it cannot read (not found here, forbidden on
// a cluster) is not restricted.
func TestEnforcesRestricted(t *testing.T) {
	ns := func(name, level string) *corev1.Namespace {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if level != "" {
			n.Labels = map[string]string{"pod-security.kubernetes.io/enforce": level}
		}
		return n
	}
	core := clientsetCore{kubefake.NewSimpleClientset(ns("locked", "restricted"), ns("base", "baseline"), ns("plain", ""))}
	for name, want := range map[string]bool{"locked": true, "base": false, "plain": false, "absent": false} {
		s := &session{c: &Cluster{Namespace: name, Core: core}}
		if got := s.enforcesRestricted(context.Background()); got != want {
			t.Errorf("namespace %s: enforcesRestricted %v, want %v", name, got, want)
		}
	}
}
