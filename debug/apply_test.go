package debug

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/imagectl/imagectl/inject"
)

// TestExplainForbidden: a refusal names what was done, to what, where,
// which RBAC verbs it needs (an apply is a patch that creates), and keeps
// the API server's message (which names the user).
func TestExplainForbidden(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("ray.io/v1")
	u.SetKind("RayJob")
	u.SetName("dbg")
	u.SetNamespace("team-a")
	server := apierrors.NewForbidden(schema.GroupResource{Group: "ray.io", Resource: "rayjobs"}, "dbg",
		errorString(`User "alice" cannot patch resource "rayjobs" in API group "ray.io" in the namespace "team-a"`))
	c := &Cluster{}
	for _, tc := range []struct{ verb, want string }{
		{"apply (server-side dry run)", `apply (server-side dry run) RayJob/dbg in namespace team-a: forbidden by the cluster's RBAC or admission (ask for "create" and "patch" on rayjobs.ray.io in namespace "team-a"): rayjobs.ray.io "dbg" is forbidden: User "alice" cannot patch resource "rayjobs" in API group "ray.io" in the namespace "team-a"`},
		{"get", `get RayJob/dbg in namespace team-a: forbidden by the cluster's RBAC or admission (ask for "get" on rayjobs.ray.io in namespace "team-a"): rayjobs.ray.io "dbg" is forbidden: User "alice" cannot patch resource "rayjobs" in API group "ray.io" in the namespace "team-a"`},
	} {
		err := c.explain(server, tc.verb, u)
		if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.verb, diff)
		}
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: the API error is not wrapped: %v", tc.verb, err)
		}
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// TestPrepullDaemonSet: --prepull's DaemonSet is inject.Prepull's for the
// injected manifest, byte for byte the same object, in the session's
// namespace; for examples/rayjob.yaml it is examples/prepull.yaml.
func TestPrepullDaemonSet(t *testing.T) {
	job, err := os.ReadFile(filepath.Join("..", "examples", "rayjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := &session{o: Options{File: "examples/rayjob.yaml"}, c: &Cluster{Namespace: "team-a"}}
	ds, imgs, err := s.prepull(job)
	if err != nil {
		t.Fatal(err)
	}
	want := inject.PrepullImages{Ray: []string{"rayproject/ray:2.46.0-py312"}, Sidecar: "docker.io/onesizefitsquorum/code-server-with-ray-distributed-debugger:4.101.2-ray2.46.0-py3.12"}
	if diff := cmp.Diff(want, imgs); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
	if got := ds.GetNamespace() + "/" + ref(ds); got != "team-a/DaemonSet/"+inject.PrepullName {
		t.Errorf("the DaemonSet is %s", got)
	}
	example, err := os.ReadFile(filepath.Join("..", "examples", "prepull.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := ParseDocuments("examples/prepull.yaml", example)
	if err != nil || len(docs) != 1 {
		t.Fatalf("examples/prepull.yaml: %d documents, %v", len(docs), err)
	}
	docs[0].Object.SetNamespace("team-a")
	if diff := cmp.Diff(docs[0].Object.Object, ds.Object); diff != "" {
		t.Errorf("the DaemonSet differs from examples/prepull.yaml (-example +debug):\n%s", diff)
	}

	// A manifest whose head has no sidecar cannot be pre-pulled: named.
	_, _, err = s.prepull([]byte("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: rc}\nspec:\n  headGroupSpec:\n    template:\n      spec:\n        containers: [{name: ray-head, image: rayproject/ray:2.46.0}]\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "--prepull: ") || !strings.Contains(err.Error(), "no code-server sidecar") {
		t.Errorf("prepull of a head without the sidecar: %v", err)
	}
}

// TestInjectWarningsReported: a default sidecar image whose tag inject did
// not check (--no-resolve) is a warning event of the session, as imagectl
// inject prints it, beside inject's own warnings.
func TestInjectWarningsReported(t *testing.T) {
	const job = `apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: j
spec:
  submissionMode: InteractiveMode
  rayClusterSpec:
    rayVersion: "2.46.0"
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.46.0-py312
`
	res, err := inject.Apply(t.Context(), "rayjob.yaml", []byte(job)) // no image, no tag lister: unchecked
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unchecked) == 0 {
		t.Fatal("inject checked a default tag without a tag lister: the test needs an unchecked one")
	}
	var got []string
	s := &session{o: Options{File: "rayjob.yaml"}, c: &Cluster{Namespace: "ns"}, r: ReporterFunc(func(e Event) {
		if e.Kind == KindWarning {
			got = append(got, e.Message)
		}
	})}
	s.reportInjectWarnings(res)
	want := "warning: rayjob.yaml: " + res.Unchecked[0]
	if !slices.Contains(got, want) {
		t.Errorf("warning events %q lack %q", got, want)
	}
}
