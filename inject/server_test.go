package inject

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"gopkg.in/yaml.v3"

	"github.com/imagectl/imagectl/internal/testutil/kubetest"
)

// fromServer is what `kubectl get rayjob job -o yaml` prints: the fields
// the API server fills in around what the user applied.
const fromServer = `apiVersion: ray.io/v1
kind: RayJob
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"ray.io/v1","kind":"RayJob","metadata":{"annotations":{},"name":"job","namespace":"default"},"spec":{"entrypoint":"python x.py"}}
  creationTimestamp: "2026-11-28T10:00:00Z"
  finalizers:
  - ray.io/rayjob-finalizer
  generation: 1
  managedFields:
  - apiVersion: ray.io/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:annotations: {}
    manager: kubectl-client-side-apply
    operation: Update
    time: "2026-11-28T10:00:00Z"
  name: job
  namespace: default
  resourceVersion: "12345"
  selfLink: /apis/ray.io/v1/namespaces/default/rayjobs/job
  uid: 0b4c0a35-8a4f-4b4e-9c55-1d2e3f4a5b6c
spec:
  entrypoint: python x.py
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - image: rayproject/ray:2.46.0
            name: ray-head
    rayVersion: 2.46.0
  submissionMode: K8sJobMode
status:
  jobDeploymentStatus: Running
  rayClusterName: job-abcde
`

// fromServerStripped is fromServer as a manifest to apply.
const fromServerStripped = `apiVersion: ray.io/v1
kind: RayJob
metadata:
  finalizers:
  - ray.io/rayjob-finalizer
  name: job
  namespace: default
spec:
  entrypoint: python x.py
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - image: rayproject/ray:2.46.0
            name: ray-head
    rayVersion: 2.46.0
  submissionMode: K8sJobMode
`

// indent prefixes every line of s but the first with n spaces, for a
// document written as an item of a List.
func indent(s string, n int) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := 1; i < len(lines); i++ {
		if lines[i] != "" {
			lines[i] = strings.Repeat(" ", n) + lines[i]
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// asList is what `kubectl get rayjobs,rayclusters,configmaps -o yaml`
// prints: one List holding the documents.
func asList(docs ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nitems:\n")
	for _, d := range docs {
		b.WriteString("- " + indent(d, 2))
	}
	b.WriteString("kind: List\nmetadata:\n  resourceVersion: \"\"\n")
	return b.String()
}

// listItems decodes each item of a List strictly (kubetest.DecodeStrict).
func listItems(t *testing.T, out []byte) []any {
	t.Helper()
	var l struct {
		Kind  string      `yaml:"kind"`
		Items []yaml.Node `yaml:"items"`
	}
	if err := yaml.Unmarshal(out, &l); err != nil || l.Kind != "List" {
		t.Fatalf("not a List (%v):\n%s", err, out)
	}
	var objs []any
	for _, it := range l.Items {
		b, err := yaml.Marshal(&it)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := kubetest.DecodeStrict(b)
		if err != nil {
			t.Fatalf("item: %v\n%s", err, b)
		}
		objs = append(objs, obj)
	}
	return objs
}

func hasSidecar(containers []string) bool {
	return len(containers) == 2 && containers[1] == DefaultName
}

// TestObjectReadFromTheServer: a RayJob as the API server returns it
// loses what the server fills in (status, resourceVersion, uid,
// creationTimestamp, generation, managedFields, selfLink, the
// last-applied-configuration annotation), with a note that also says the
// running head Pod gets the sidecar only once it is recreated; Remove then
// gives back that manifest (issue 35 item 13).
func TestObjectReadFromTheServer(t *testing.T) {
	ctx := context.Background()
	res, err := Apply(ctx, "job.yaml", []byte(fromServer), WithImage("example.com/cs:1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"status:", "resourceVersion", "uid:", "creationTimestamp", "generation:", "managedFields", "selfLink", "last-applied-configuration", "annotations:"} {
		if strings.Contains(string(res.Output), gone) {
			t.Errorf("output keeps %q:\n%s", gone, res.Output)
		}
	}
	obj, err := kubetest.DecodeStrict(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	job := obj.(*rayv1.RayJob)
	var cts []string
	for _, c := range job.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers {
		cts = append(cts, c.Name)
	}
	if !hasSidecar(cts) || len(job.Finalizers) != 1 || job.Namespace != "default" {
		t.Errorf("containers %v, finalizers %v, namespace %q: want the sidecar added and the rest kept", cts, job.Finalizers, job.Namespace)
	}
	note := strings.Join(res.Notes, "\n")
	for _, w := range []string{"status", "metadata.resourceVersion", "metadata.managedFields", "kubectl.kubernetes.io/last-applied-configuration", "head Pod", "recreated"} {
		if !strings.Contains(note, w) {
			t.Errorf("notes lack %q:\n%s", w, note)
		}
	}

	stripped, err := StripServerFields("job.yaml", []byte(fromServer))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(fromServerStripped, string(stripped.Output)); d != "" {
		t.Errorf("StripServerFields (-want +got):\n%s", d)
	}
	removed, err := Remove("job.yaml", res.Output)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(fromServerStripped, string(removed.Output)); d != "" {
		t.Errorf("Remove(Apply(from the server)) (-want +got):\n%s", d)
	}

	// A manifest as the user writes it gets no such note.
	plain, err := Apply(ctx, "job.yaml", []byte(fromServerStripped), WithImage("example.com/cs:1"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Join(plain.Notes, "\n"); strings.Contains(n, "recreated") {
		t.Errorf("a manifest not read from a server got the note %q", n)
	}
}

// TestList: the items of a List (kubectl get -o yaml of several objects)
// are walked: every Ray item gets the sidecar and loses its server fields,
// other items stay as they are, and Remove takes it all out again.
func TestList(t *testing.T) {
	ctx := context.Background()
	configMap := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  resourceVersion: \"7\"\ndata:\n  k: v\n"
	in := asList(fromServer, configMap, plainCluster)
	res, err := Apply(ctx, "list.yaml", []byte(in), WithImage("example.com/cs:1"))
	if err != nil {
		t.Fatalf("Apply of a List: %v", err)
	}
	want := []Target{
		{Document: 1, Item: 1, Kind: "RayJob", Name: "job", Image: "example.com/cs:1"},
		{Document: 1, Item: 3, Kind: "RayCluster", Name: "c", Image: "example.com/cs:1"},
	}
	if d := cmp.Diff(want, res.Targets); d != "" {
		t.Errorf("targets (-want +got):\n%s", d)
	}
	objs := listItems(t, res.Output)
	if len(objs) != 3 {
		t.Fatalf("%d items, want 3", len(objs))
	}
	var jobCts, clusterCts []string
	for _, c := range objs[0].(*rayv1.RayJob).Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers {
		jobCts = append(jobCts, c.Name)
	}
	for _, c := range clusterSpec(objs[2]).HeadGroupSpec.Template.Spec.Containers {
		clusterCts = append(clusterCts, c.Name)
	}
	if !hasSidecar(jobCts) || !hasSidecar(clusterCts) {
		t.Errorf("containers: RayJob %v, RayCluster %v; want the sidecar in both", jobCts, clusterCts)
	}
	if !strings.Contains(string(res.Output), "  resourceVersion: \"7\"") {
		t.Errorf("the ConfigMap item was changed:\n%s", res.Output)
	}
	stripped, err := StripServerFields("list.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(asList(fromServerStripped, configMap, plainCluster), string(stripped.Output)); d != "" {
		t.Errorf("StripServerFields of the List (-want +got):\n%s", d)
	}
	removed, err := Remove("list.yaml", res.Output)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(stripped.Output), string(removed.Output)); d != "" {
		t.Errorf("Remove(Apply(List)) (-want +got):\n%s", d)
	}
	if len(removed.Targets) != 2 {
		t.Errorf("Remove targets %+v, want the two Ray items", removed.Targets)
	}
}
