package inject

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// TestPrepullExampleIsGenerated: the committed examples/prepull.yaml is
// Prepull's output for examples/rayjob.yaml, byte for byte.
func TestPrepullExampleIsGenerated(t *testing.T) {
	job, err := os.ReadFile(filepath.Join("..", "examples", "rayjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := ImagesToPrepull("examples/rayjob.yaml", job)
	if err != nil {
		t.Fatal(err)
	}
	want := PrepullImages{Ray: []string{"rayproject/ray:2.46.0-py312"}, Sidecar: "docker.io/onesizefitsquorum/code-server-with-ray-distributed-debugger:4.101.2-ray2.46.0-py3.12"}
	if diff := cmp.Diff(want, imgs); diff != "" {
		t.Errorf("images of examples/rayjob.yaml (-want +got):\n%s", diff)
	}
	got, err := Prepull(imgs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "examples", "prepull.yaml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(committed), string(got)); diff != "" {
		t.Errorf("examples/prepull.yaml is not inject.Prepull's output for examples/rayjob.yaml (go test ./inject -run %s -update writes it) (-committed +generated):\n%s", t.Name(), diff)
	}
}

// TestPrepull: every distinct Ray image (head, then worker groups), the
// sidecar's (by its record, not its name) and the pods' imagePullSecrets,
// as a DaemonSet that decodes strictly; what it cannot pre-pull is named.
func TestPrepull(t *testing.T) {
	const manifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: x}
---
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: rc
spec:
  headGroupSpec:
    template:
      spec:
        imagePullSecrets: [{name: regcred}]
        containers:
        - name: ray-head
          image: registry.example/ray:2.46.0
        - name: my-debugger
          image: registry.example/cs@sha256:` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `
          env:
          - {name: IMAGECTL_INJECTED, value: "x"}
  workerGroupSpecs:
  - groupName: cpu
    template:
      spec:
        imagePullSecrets: [{name: regcred}, {name: other}]
        containers:
        - {name: ray-worker, image: registry.example/ray:2.46.0}
  - groupName: gpu
    template:
      spec:
        containers:
        - {name: ray-worker, image: registry.example/ray:2.46.0-gpu}
`
	imgs, err := ImagesToPrepull("rc.yaml", []byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	want := PrepullImages{
		Ray:         []string{"registry.example/ray:2.46.0", "registry.example/ray:2.46.0-gpu"},
		Sidecar:     "registry.example/cs@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		PullSecrets: []string{"regcred", "other"},
	}
	if diff := cmp.Diff(want, imgs); diff != "" {
		t.Fatalf("images (-want +got):\n%s", diff)
	}
	out, err := Prepull(imgs)
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(out, &ds); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	spec := ds.Spec.Template.Spec
	var got []string
	for _, ic := range spec.InitContainers {
		got = append(got, ic.Name+"="+ic.Image)
	}
	wantInit := []string{"ray=" + want.Ray[0], "ray-2=" + want.Ray[1], "code-server=" + want.Sidecar}
	if diff := cmp.Diff(wantInit, got); diff != "" {
		t.Errorf("init containers (-want +got):\n%s", diff)
	}
	if len(spec.ImagePullSecrets) != 2 || spec.ImagePullSecrets[0].Name != "regcred" || spec.ImagePullSecrets[1].Name != "other" {
		t.Errorf("imagePullSecrets %+v", spec.ImagePullSecrets)
	}
	if ds.Name != PrepullName || len(spec.Containers) != 1 || spec.Containers[0].Image != PrepullPauseImage {
		t.Errorf("DaemonSet %s containers %+v", ds.Name, spec.Containers)
	}

	for _, tc := range []struct{ name, in, want string }{
		{"no sidecar", strings.Replace(strings.Replace(manifest, "          env:\n          - {name: IMAGECTL_INJECTED, value: \"x\"}\n", "", 1), "my-debugger", "other", 1),
			`rc.yaml: document 2 (RayCluster rc): the head pod has no code-server sidecar`},
		{"no Ray document", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "nothing to pre-pull"},
		{"worker without image", strings.Replace(manifest, "{name: ray-worker, image: registry.example/ray:2.46.0-gpu}", "{name: ray-worker}", 1), "worker group 2 has no Ray container image"},
	} {
		if _, err := ImagesToPrepull("rc.yaml", []byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, bad := range []PrepullImages{
		{Sidecar: "a/b:1"},
		{Ray: []string{"a/b:1"}},
		{Ray: []string{"a/b:1\n  evil: x"}, Sidecar: "c:1"},
		{Ray: []string{"a/b:1"}, Sidecar: "c:1", PullSecrets: []string{"x\n- name: y"}},
	} {
		if out, err := Prepull(bad); err == nil {
			t.Errorf("Prepull(%+v) wrote\n%s", bad, out)
		}
	}
}
