package inject

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
	ds, _ := prepullDaemonSet(t, imgs)
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
	if ds.Name != PrepullName || len(spec.Containers) != 1 || spec.Containers[0].Image != want.Sidecar || !slices.Equal(spec.Containers[0].Command, PrepullHoldCommand) {
		t.Errorf("DaemonSet %s containers %+v, want one running %q in the sidecar's image", ds.Name, spec.Containers, PrepullHoldCommand)
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g != 1 {
		t.Errorf("terminationGracePeriodSeconds %v, want 1 (sleep, PID 1, ignores SIGTERM)", g)
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

// TestPrepullRestricted: for a restricted sidecar (a namespace that
// enforces PodSecurity "restricted" refuses any other Pod), the pre-pull
// DaemonSet's Pods are restricted too, as the sidecar's user, or with no
// UID of their own when the platform picks it (WithArbitraryUID); an
// unrestricted sidecar keeps the DaemonSet as examples/prepull.yaml has it.
func TestPrepullRestricted(t *testing.T) {
	withUser := strings.Replace(plainCluster, "          image: rayproject/ray:2.46.0\n",
		"          image: rayproject/ray:2.46.0\n          securityContext: {runAsUser: 1001, runAsGroup: 100}\n", 1)
	for _, tc := range []struct {
		name, manifest string
		opt            Option
		want           PrepullImages
	}{
		{"the Ray container's user", withUser, WithRestricted(), PrepullImages{Restricted: true, RunAsUser: "1001", RunAsGroup: "100"}},
		{"default user", plainCluster, WithRestricted(), PrepullImages{Restricted: true, RunAsUser: "1000", RunAsGroup: "1000"}},
		{"arbitrary UID", plainCluster, WithArbitraryUID(), PrepullImages{Restricted: true}},
		{"not restricted", plainCluster, WithName(DefaultName), PrepullImages{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Apply(context.Background(), "f.yaml", []byte(tc.manifest), WithImage("example.com/cs:1"), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			imgs, err := ImagesToPrepull("f.yaml", res.Output)
			if err != nil {
				t.Fatal(err)
			}
			got := PrepullImages{Restricted: imgs.Restricted, RunAsUser: imgs.RunAsUser, RunAsGroup: imgs.RunAsGroup}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("what the sidecar says of the Pods (-want +got):\n%s", diff)
			}
			ds, out := prepullDaemonSet(t, imgs)
			spec := ds.Spec.Template.Spec
			psc := spec.SecurityContext
			if !tc.want.Restricted {
				if psc != nil {
					t.Errorf("an unrestricted sidecar's DaemonSet has a pod securityContext %+v", psc)
				}
				return
			}
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != "RuntimeDefault" {
				t.Fatalf("pod securityContext %+v: want runAsNonRoot and the RuntimeDefault seccomp profile\n%s", psc, out)
			}
			uid, gid := "", ""
			if psc.RunAsUser != nil {
				uid = strconv.FormatInt(*psc.RunAsUser, 10)
			}
			if psc.RunAsGroup != nil {
				gid = strconv.FormatInt(*psc.RunAsGroup, 10)
			}
			if uid != tc.want.RunAsUser || gid != tc.want.RunAsGroup {
				t.Errorf("pod runAsUser %q runAsGroup %q, want %q %q", uid, gid, tc.want.RunAsUser, tc.want.RunAsGroup)
			}
			for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
				sc := c.SecurityContext
				if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
					len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
					t.Errorf("container %s securityContext %+v: want no privilege escalation, every capability dropped, a read-only root", c.Name, sc)
				}
			}
		})
	}
}

// TestPrepullIDs: the sidecar's IDs are written as decimal numbers, and a
// root or non-numeric one is refused with the field named.
func TestPrepullIDs(t *testing.T) {
	base := PrepullImages{Ray: []string{"r.example/ray:1"}, Sidecar: "r.example/cs:1", Restricted: true}
	for _, tc := range []struct{ user, group, want, wantErr string }{
		{"+0100", "010", "runAsUser: 100\n        runAsGroup: 10\n", ""},
		{"0", "", "", `runAsUser is 0 (root)`},
		{"ray", "", "", `runAsUser "ray": expected a number`},
		{"1000", "-1", "", `runAsGroup "-1": expected a number`},
	} {
		p := base
		p.RunAsUser, p.RunAsGroup = tc.user, tc.group
		out, err := Prepull(p)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q/%q: error %v, want one saying %q", tc.user, tc.group, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%q/%q: %v, want %q in:\n%s", tc.user, tc.group, err, tc.want, out)
		}
	}
}

// prepullDaemonSet is Prepull's output for imgs, decoded strictly, and the
// output itself.
func prepullDaemonSet(t *testing.T, imgs PrepullImages) (*appsv1.DaemonSet, []byte) {
	t.Helper()
	out, err := Prepull(imgs)
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(out, &ds); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return &ds, out
}
