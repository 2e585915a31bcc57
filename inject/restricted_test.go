package inject

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/testutil/kubetest"
)

// hardenedCluster is plainCluster with a head pod as PodSecurity
// "restricted" wants it: a non-root Ray container (1000:100), no privilege
// escalation, every capability dropped, RuntimeDefault seccomp.
const hardenedCluster = `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: c
spec:
  rayVersion: "2.46.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        securityContext:
          runAsNonRoot: true
          runAsUser: 1000
          runAsGroup: 100
          fsGroup: 100
          seccompProfile:
            type: RuntimeDefault
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
          securityContext:
            allowPrivilegeEscalation: false
            capabilities:
              drop: [ALL]
`

// restrictedPod applies inject with opts to input and returns the head
// pod, decoded as the API server would.
func restrictedPod(t *testing.T, input string, opts ...Option) (*Result, *corev1.PodSpec) {
	t.Helper()
	res, err := Apply(context.Background(), "f.yaml", []byte(input), append([]Option{WithImage("example.com/cs:1")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	docs := splitDocuments(res.Output)
	obj, err := kubetest.DecodeStrict(docs[len(docs)-1])
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Output)
	}
	return res, &clusterSpec(obj).HeadGroupSpec.Template.Spec
}

func ptr[T any](v T) *T { return &v }

// TestRestrictedSidecar: --restricted writes the sidecar PodSecurity
// "restricted" admits, in linuxserver's non-root mode, as the Ray
// container's user; its init container copies the image's /config into
// the /config emptyDir; --remove gives the input back byte for byte.
func TestRestrictedSidecar(t *testing.T) {
	for _, tt := range []struct {
		name     string
		opt      Option
		uid, gid *int64
	}{
		{"restricted", WithRestricted(), ptr[int64](1000), ptr[int64](100)},
		{"arbitrary UID", WithArbitraryUID(), nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, pod := restrictedPod(t, hardenedCluster, tt.opt)
			if len(res.Warnings) != 0 {
				t.Errorf("warnings for a restricted Ray container: %q", res.Warnings)
			}
			wantSC := &corev1.SecurityContext{
				RunAsUser: tt.uid, RunAsGroup: tt.gid, RunAsNonRoot: ptr(true),
				AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true),
				Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			}
			sc := pod.Containers[len(pod.Containers)-1]
			if d := cmp.Diff(wantSC, sc.SecurityContext); d != "" {
				t.Errorf("sidecar securityContext (-want +got):\n%s", d)
			}
			env := map[string]string{}
			for _, e := range sc.Env {
				env[e.Name] = e.Value
			}
			if env[imagespec.NonRootEnv] != "1" {
				t.Errorf("sidecar env %s = %q, want 1", imagespec.NonRootEnv, env[imagespec.NonRootEnv])
			}
			if _, ok := env["PUID"]; ok {
				t.Errorf("sidecar env has PUID: linuxserver's non-root mode runs as the container's user")
			}
			emptyDirs := map[string]bool{}
			for _, v := range pod.Volumes {
				if v.EmptyDir != nil {
					emptyDirs[v.Name] = true
				}
			}
			mounts := map[string]string{}
			for _, m := range sc.VolumeMounts {
				mounts[m.MountPath] = m.Name
				if want := map[string]string{"/config": "config"}[m.MountPath]; m.SubPath != want {
					t.Errorf("sidecar mounts %s with subPath %q, want %q", m.MountPath, m.SubPath, want)
				}
			}
			for _, p := range []string{"/run", "/tmp", "/config", RayTmp} {
				if !emptyDirs[mounts[p]] {
					t.Errorf("sidecar mounts %s from %q, want an emptyDir of the pod (volumes %+v)", p, mounts[p], pod.Volumes)
				}
			}
			if len(pod.InitContainers) != 1 {
				t.Fatalf("init containers %+v, want the /config copy", pod.InitContainers)
			}
			ic := pod.InitContainers[0]
			if d := cmp.Diff(ConfigCopyCommand, ic.Command); d != "" || ic.Name != "code-server-config" || ic.Image != "example.com/cs:1" {
				t.Errorf("init container %s image %s command (-want +got):\n%s", ic.Name, ic.Image, d)
			}
			if len(ic.VolumeMounts) != 1 || ic.VolumeMounts[0].Name != mounts["/config"] || ic.VolumeMounts[0].MountPath != configCopyMount {
				t.Errorf("init container mounts %+v, want the /config emptyDir %q at %s", ic.VolumeMounts, mounts["/config"], configCopyMount)
			}
			if d := cmp.Diff(sc.Resources, ic.Resources); d != "" {
				t.Errorf("init container resources, want the sidecar's (-sidecar +init):\n%s", d)
			}
			if d := cmp.Diff(wantSC, ic.SecurityContext); d != "" {
				t.Errorf("init container securityContext (-want +got):\n%s", d)
			}
			again, err := Apply(context.Background(), "f.yaml", res.Output, WithImage("example.com/cs:1"), tt.opt)
			if err != nil || string(again.Output) != string(res.Output) {
				t.Errorf("injecting again: %v; changed the output:\n%s", err, again.Output)
			}
			back, err := Remove("f.yaml", res.Output)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(hardenedCluster, string(back.Output)); d != "" {
				t.Errorf("--remove (-input +removed):\n%s", d)
			}
			// Back to root mode: the restricted items go.
			root, err := Apply(context.Background(), "f.yaml", res.Output, WithImage("example.com/cs:1"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(root.Output), "initContainers") || strings.Contains(string(root.Output), imagespec.NonRootEnv) {
				t.Errorf("root mode over a restricted injection kept restricted items:\n%s", root.Output)
			}
		})
	}
}

// TestRestrictedWarnsAboutTheRayContainer: inject changes only the
// sidecar; a Ray container PodSecurity "restricted" refuses makes the API
// server refuse the whole pod, and the warning names each field.
func TestRestrictedWarnsAboutTheRayContainer(t *testing.T) {
	res, _ := restrictedPod(t, plainCluster+"          securityContext:\n            runAsUser: 1000\n", WithRestricted())
	if len(res.Warnings) != 1 {
		t.Fatalf("warnings %q, want one", res.Warnings)
	}
	for _, want := range []string{"securityContext.runAsNonRoot: true", "securityContext.allowPrivilegeEscalation: false",
		"securityContext.capabilities.drop: [ALL]", "securityContext.seccompProfile.type: RuntimeDefault", "FailedToCreateHeadPod", "#hardened-pods"} {
		if !strings.Contains(res.Warnings[0], want) {
			t.Errorf("warning %q lacks %q", res.Warnings[0], want)
		}
	}
}

func TestRestrictedRefusals(t *testing.T) {
	for _, tt := range []struct {
		name, input string
		want        string
	}{
		{"Ray as root", strings.Replace(hardenedCluster, "runAsUser: 1000", "runAsUser: 0", 1), "the Ray container runs as root (runAsUser 0)"},
		{"token authentication", strings.Replace(hardenedCluster, "  rayVersion: \"2.46.0\"\n", "  rayVersion: \"2.52.0\"\n  authOptions:\n    mode: token\n", 1),
			"token authentication with a restricted sidecar is not supported"},
		{"volume name taken", hardenedCluster + "        volumes:\n        - name: code-server-run\n          emptyDir: {}\n", `volume named "code-server-run" that imagectl inject did not add`},
		{"init container name taken", strings.Replace(hardenedCluster, "        containers:\n", "        initContainers:\n        - name: code-server-config\n          image: busybox\n        containers:\n", 1),
			`container named "code-server-config" that imagectl inject did not add`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Apply(context.Background(), "f.yaml", []byte(tt.input), WithImage("example.com/cs:1"), WithRestricted())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestRestrictedHelmValues: in a values file of KubeRay's ray-cluster chart
// the restricted items go to head.volumes and head.initContainers, and
// --remove gives the file back byte for byte.
func TestRestrictedHelmValues(t *testing.T) {
	in, err := os.ReadFile("testdata/helm-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Apply(context.Background(), "v.yaml", in, WithHelmValues(), WithImage("example.com/cs:1"), WithRestricted())
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Head struct {
			Volumes           []corev1.Volume    `json:"volumes"`
			InitContainers    []corev1.Container `json:"initContainers"`
			SidecarContainers []corev1.Container `json:"sidecarContainers"`
		} `json:"head"`
	}
	if err := yaml.Unmarshal(res.Output, &values); err != nil {
		t.Fatal(err)
	}
	h := values.Head
	if len(h.InitContainers) != 1 || h.InitContainers[0].Name != "code-server-config" || len(h.SidecarContainers) != 1 {
		t.Fatalf("head.initContainers %+v, head.sidecarContainers %+v", h.InitContainers, h.SidecarContainers)
	}
	if sc := h.SidecarContainers[0].SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("sidecar securityContext %+v, want the restricted one", sc)
	}
	var names []string
	for _, v := range h.Volumes {
		names = append(names, v.Name)
	}
	if d := cmp.Diff([]string{"log-volume", "code-server-run", "code-server-tmp", "code-server-config"}, names); d != "" {
		t.Errorf("head.volumes (-want +got):\n%s", d)
	}
	back, err := Remove("v.yaml", res.Output)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(in), string(back.Output)); d != "" {
		t.Errorf("--remove (-input +removed):\n%s", d)
	}
}
