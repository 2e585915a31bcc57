package inject

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/imagectl/imagectl/internal/testutil/kubetest"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// clusterSpec is the RayClusterSpec inside a Ray object.
func clusterSpec(obj any) *rayv1.RayClusterSpec {
	switch o := obj.(type) {
	case *rayv1.RayJob:
		return o.Spec.RayClusterSpec
	case *rayv1.RayCluster:
		return &o.Spec
	case *rayv1.RayService:
		return &o.Spec.RayClusterSpec
	}
	return nil
}

type sidecarWant struct {
	image     string
	volume    string // the /tmp/ray volume shared by Ray and the sidecar
	dashboard string // non-default dashboard written by postStart, or ""
	uid, gid  string
}

// checkSidecar checks the injected pod spec after against before: the Ray
// container first and unchanged but for a /tmp/ray mount, the sidecar last
// and right, the /tmp/ray volume once, and nothing else changed.
func checkSidecar(t *testing.T, where string, before, after *corev1.PodSpec, want sidecarWant) {
	t.Helper()
	if len(after.Containers) != len(before.Containers)+1 {
		t.Fatalf("%s: %d containers, want %d (one sidecar more)", where, len(after.Containers), len(before.Containers)+1)
	}
	ray := after.Containers[0]
	if ray.Name != before.Containers[0].Name {
		t.Errorf("%s: containers[0] is %q, want the Ray container %q", where, ray.Name, before.Containers[0].Name)
	}
	var rayMounts []corev1.VolumeMount
	for _, m := range ray.VolumeMounts {
		if strings.TrimRight(m.MountPath, "/") == RayTmp {
			rayMounts = append(rayMounts, m)
		}
	}
	if len(rayMounts) != 1 || rayMounts[0].Name != want.volume {
		t.Errorf("%s: the Ray container mounts /tmp/ray %d times (%+v), want once from volume %q", where, len(rayMounts), rayMounts, want.volume)
	}
	sc := after.Containers[len(after.Containers)-1]
	if sc.Name != DefaultName || sc.Image != want.image {
		t.Errorf("%s: sidecar %q image %q, want %q image %q", where, sc.Name, sc.Image, DefaultName, want.image)
	}
	if len(sc.Ports) != 1 || sc.Ports[0].ContainerPort != DefaultPort || sc.Ports[0].Name != PortName {
		t.Errorf("%s: sidecar ports %+v, want %s:%d", where, sc.Ports, PortName, DefaultPort)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range sc.Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("%s: sidecar env %s twice", where, e.Name)
		}
		env[e.Name] = e
	}
	for _, bad := range []string{"SUDO_PASSWORD", "SUDO_PASSWORD_HASH"} {
		if _, ok := env[bad]; ok {
			t.Errorf("%s: sidecar sets %s", where, bad)
		}
	}
	if pw := env["PASSWORD"]; pw.Value != "" || pw.ValueFrom == nil || pw.ValueFrom.SecretKeyRef == nil ||
		pw.ValueFrom.SecretKeyRef.Name != DefaultSecretName || pw.ValueFrom.SecretKeyRef.Key != DefaultSecretKey {
		t.Errorf("%s: sidecar PASSWORD %+v, want only a secretKeyRef to %s/%s", where, pw, DefaultSecretName, DefaultSecretKey)
	}
	if got := env["DEFAULT_WORKSPACE"].Value; got != Workspace {
		t.Errorf("%s: DEFAULT_WORKSPACE=%q", where, got)
	}
	if env["PUID"].Value != want.uid || env["PGID"].Value != want.gid {
		t.Errorf("%s: PUID=%q PGID=%q, want %s and %s", where, env["PUID"].Value, env["PGID"].Value, want.uid, want.gid)
	}
	if len(sc.VolumeMounts) != 1 || sc.VolumeMounts[0].MountPath != RayTmp || sc.VolumeMounts[0].Name != want.volume {
		t.Errorf("%s: sidecar mounts %+v, want only %s from %q", where, sc.VolumeMounts, RayTmp, want.volume)
	}
	if ctx := sc.SecurityContext; ctx == nil || ctx.RunAsUser == nil || *ctx.RunAsUser != 0 || ctx.RunAsNonRoot == nil || *ctx.RunAsNonRoot {
		t.Errorf("%s: sidecar securityContext %+v, want runAsUser 0 and runAsNonRoot false", where, ctx)
	}
	if sc.Resources.Requests.Cpu().IsZero() || sc.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: sidecar has no resources: %+v", where, sc.Resources)
	}
	switch {
	case want.dashboard == "" && sc.Lifecycle != nil:
		t.Errorf("%s: sidecar has a lifecycle hook for the default dashboard: %+v", where, sc.Lifecycle)
	case want.dashboard != "":
		if sc.Lifecycle == nil || sc.Lifecycle.PostStart == nil || sc.Lifecycle.PostStart.Exec == nil {
			t.Errorf("%s: no postStart hook writing the dashboard %s", where, want.dashboard)
		} else if cmd := sc.Lifecycle.PostStart.Exec.Command; len(cmd) != 4 || cmd[3] != want.dashboard || !strings.Contains(cmd[2], DashboardsSetting) {
			t.Errorf("%s: postStart %q does not write %s into %s", where, cmd, want.dashboard, DashboardsSetting)
		}
	}
	var vols []corev1.Volume
	for _, v := range after.Volumes {
		if v.Name == want.volume {
			vols = append(vols, v)
		}
	}
	if len(vols) != 1 {
		t.Errorf("%s: volume %q appears %d times", where, want.volume, len(vols))
	}

	// Nothing else changed: undo the additions and compare.
	undone := after.DeepCopy()
	undone.Containers = undone.Containers[:len(before.Containers)]
	if n := len(before.Containers[0].VolumeMounts); len(undone.Containers[0].VolumeMounts) > n {
		undone.Containers[0].VolumeMounts = undone.Containers[0].VolumeMounts[:n]
	}
	if len(undone.Volumes) > len(before.Volumes) {
		undone.Volumes = undone.Volumes[:len(before.Volumes)]
	}
	if d := cmp.Diff(before, undone, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("%s: more changed than the sidecar, its mount and volume (-before +after):\n%s", where, d)
	}
}

type corpusCase struct {
	file     string
	opts     []Option
	warnings []string // substrings, one per expected warning
	want     sidecarWant
}

// published is the default image without a tag lookup: the floating tag of
// the manifest's Ray minor.
const published = DefaultRepository + ":ray2.46"

var corpus = []corpusCase{
	// InteractiveMode: kubectl ray job submit -f passes spec.runtimeEnvYAML
	// on, and its --runtime-env-json would replace it whole.
	{file: "rayjob-plain.yaml",
		warnings: []string{`lacks debugpy>=1.8.0 and the Ray image rayproject/ray:2.46.0-py312 does not ship it: breakpoint() will log "Module 'debugpy>=1.8.0' cannot be loaded" and not pause; add "debugpy>=1.8.0" to pip in spec.runtimeEnvYAML`},
		want:     sidecarWant{image: published, volume: DefaultVolume, uid: "1000", gid: "1000"}},
	// KubeRay mounts its emptyDir "ray-logs" at /tmp/ray in the autoscaler
	// unless the pod has a volume of that name: the sidecar's must be it.
	{file: "raycluster-autoscaler.yaml",
		want: sidecarWant{image: DefaultRepository + ":ray2.47", volume: "ray-logs", uid: "1000", gid: "1000"}},
	{file: "raycluster-volumes.yaml",
		want: sidecarWant{image: published, volume: DefaultVolume, uid: "1000", gid: "100"}},
	{file: "raycluster-tmpray.yaml", opts: []Option{WithImage("registry.example/me/code-server-ray@sha256:" + strings.Repeat("ab", 32))},
		want: sidecarWant{image: "registry.example/me/code-server-ray@sha256:" + strings.Repeat("ab", 32), volume: "ray-logs", uid: "1000", gid: "1000"}},
	{file: "raycluster-tls.yaml",
		warnings: []string{`worker group "workers"'s Ray container sets RAY_DEBUG=legacy`},
		want:     sidecarWant{image: published, volume: "ray-tmp", dashboard: "127.0.0.1:8266", uid: "1000", gid: "1000"}},
	// The RayJob is K8sJobMode (unset) and third, after a ConfigMap.
	{file: "multi-doc.yaml",
		warnings: []string{"document 3 (RayJob job): submissionMode K8sJobMode (unset: KubeRay's default), not InteractiveMode: KubeRay submits the entrypoint itself",
			"document 3 (RayJob job): this RayJob (submissionMode K8sJobMode (unset: KubeRay's default)) is not the first document of the file: `kubectl ray job submit -f` reads only the first, document 1 (ConfigMap job-code)"},
		want: sidecarWant{image: published, volume: DefaultVolume, uid: "1000", gid: "1000"}},
	{file: "rayservice.yaml",
		warnings: []string{`the head's Ray container sets RAY_DEBUG=0: breakpoint() does nothing`},
		want:     sidecarWant{image: published, volume: DefaultVolume, uid: "1000", gid: "1000"}},
}

// zeros is a deterministic password source for golden files.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0
	}
	return len(p), nil
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./inject -run %s -update to write it)", err, t.Name())
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, d)
	}
}

func TestCorpus(t *testing.T) {
	ctx := context.Background()
	for _, tc := range corpus {
		t.Run(tc.file, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			opts := append([]Option{WithRandom(zeros{})}, tc.opts...)
			res, err := Apply(ctx, tc.file, in, opts...)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.file, res.Output)
			if len(res.Warnings) != len(tc.warnings) {
				t.Errorf("warnings %q, want %d", res.Warnings, len(tc.warnings))
			}
			for i, w := range tc.warnings {
				if i < len(res.Warnings) && !strings.Contains(res.Warnings[i], w) {
					t.Errorf("warning %q lacks %q", res.Warnings[i], w)
				}
			}

			inDocs, outDocs := splitDocuments(in), splitDocuments(res.Output)
			if len(outDocs) != len(inDocs) {
				t.Fatalf("%d documents out of %d in: inject adds none to the stream", len(outDocs), len(inDocs))
			}
			rays := 0
			for i := range inDocs {
				before, err := kubetest.DecodeStrict(inDocs[i])
				if err != nil {
					t.Fatalf("input document %d: %v", i+1, err)
				}
				after, err := kubetest.DecodeStrict(outDocs[i])
				if err != nil {
					t.Fatalf("output document %d: %v\n%s", i+1, err, outDocs[i])
				}
				bs := clusterSpec(before)
				if bs == nil {
					// Not a Ray kind: byte for byte.
					got := string(outDocs[i])
					if got != string(inDocs[i]) {
						t.Errorf("document %d changed:\n%s", i+1, cmp.Diff(string(inDocs[i]), got))
					}
					continue
				}
				rays++
				as := clusterSpec(after)
				checkSidecar(t, fmt.Sprintf("document %d head", i+1), &bs.HeadGroupSpec.Template.Spec, &as.HeadGroupSpec.Template.Spec, tc.want)
				// Everything outside the head pod spec is as it was.
				as.HeadGroupSpec.Template.Spec = bs.HeadGroupSpec.Template.Spec
				if d := cmp.Diff(before, after); d != "" {
					t.Errorf("document %d: changed outside the head pod (-before +after):\n%s", i+1, d)
				}
			}
			if rays == 0 {
				t.Fatal("no Ray document in the case")
			}

			again, err := Apply(ctx, tc.file, res.Output, opts...)
			if err != nil {
				t.Fatalf("injecting again: %v", err)
			}
			if d := cmp.Diff(string(res.Output), string(again.Output)); d != "" || again.Changed {
				t.Errorf("injecting an injected manifest changed it (changed=%v):\n%s", again.Changed, d)
			}
			removed, err := Remove(tc.file, res.Output)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(in), string(removed.Output)); d != "" {
				t.Errorf("Remove did not give the original bytes back (-original +removed):\n%s", d)
			}
		})
	}
}

// TestUnknownFieldsKept: fields no schema knows stay, with their comments.
func TestUnknownFieldsKept(t *testing.T) {
	in, err := os.ReadFile("testdata/unknown-fields.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Apply(context.Background(), "unknown-fields.yaml", in)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "unknown-fields.yaml", res.Output)
	for _, l := range []string{
		"          x-probe-hint: fast   # unknown to Kubernetes: kept as it is\n",
		"        # Unknown to KubeRay and Kubernetes alike; kept as it is.\n        x-team-notes: keep me\n",
		"    x-head-extra: {keep: me}\n",
	} {
		if !strings.Contains(string(res.Output), l) {
			t.Errorf("output lost %q:\n%s", l, res.Output)
		}
	}
	// The strict decoder rejects exactly the unknown fields, before and after.
	_, errIn := kubetest.DecodeStrict(in)
	_, errOut := kubetest.DecodeStrict(res.Output)
	if errIn == nil || errOut == nil || errIn.Error() != errOut.Error() {
		t.Errorf("strict decoding: input %v, output %v; want the same unknown-field error", errIn, errOut)
	}
	removed, err := Remove("unknown-fields.yaml", res.Output)
	if err != nil || !bytes.Equal(removed.Output, in) {
		t.Errorf("Remove: %v\n%s", err, removed.Output)
	}
}

func TestHelmValues(t *testing.T) {
	in, err := os.ReadFile("testdata/helm-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := Apply(ctx, "helm-values.yaml", in, WithHelmValues())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "helm-values.yaml", res.Output)
	var values struct {
		Head struct {
			SidecarContainers []json.RawMessage `json:"sidecarContainers"`
			Volumes           []json.RawMessage `json:"volumes"`
			VolumeMounts      []json.RawMessage `json:"volumeMounts"`
		} `json:"head"`
	}
	if err := yaml.Unmarshal(res.Output, &values); err != nil {
		t.Fatal(err)
	}
	if len(values.Head.SidecarContainers) != 1 || len(values.Head.Volumes) != 1 || len(values.Head.VolumeMounts) != 1 {
		t.Fatalf("head: %d sidecars, %d volumes, %d mounts; want 1, 1 (log-volume reused), 1:\n%s",
			len(values.Head.SidecarContainers), len(values.Head.Volumes), len(values.Head.VolumeMounts), res.Output)
	}
	var sc corev1.Container
	if err := yaml.UnmarshalStrict(values.Head.SidecarContainers[0], &sc); err != nil {
		t.Fatalf("head.sidecarContainers[0] is not a core/v1 Container: %v", err)
	}
	var vol corev1.Volume
	var mount corev1.VolumeMount
	if err := yaml.UnmarshalStrict(values.Head.Volumes[0], &vol); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(values.Head.VolumeMounts[0], &mount); err != nil {
		t.Fatal(err)
	}
	before := corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-head", VolumeMounts: []corev1.VolumeMount{mount}}}, Volumes: []corev1.Volume{vol}}
	after := before.DeepCopy()
	after.Containers = append(after.Containers, sc)
	checkSidecar(t, "head", &before, after, sidecarWant{image: published, volume: "log-volume", uid: "1000", gid: "1000"})

	again, err := Apply(ctx, "helm-values.yaml", res.Output, WithHelmValues())
	if err != nil || again.Changed {
		t.Errorf("injecting again: changed=%v err=%v", again != nil && again.Changed, err)
	}
	removed, err := Remove("helm-values.yaml", res.Output)
	if err != nil || !bytes.Equal(removed.Output, in) {
		t.Errorf("Remove: %v\n%s", err, cmp.Diff(string(in), string(removed.Output)))
	}

	// No head volume yet: inject writes volumes and volumeMounts (they
	// replace the chart's defaults as a whole, so both name the same one).
	bare := []byte("image:\n  tag: 2.46.0\nhead:\n  rayStartParams: {}\n")
	res, err = Apply(ctx, "bare.yaml", bare, WithHelmValues())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "helm-values-bare.yaml", res.Output)
	if removed, _ := Remove("bare.yaml", res.Output); !bytes.Equal(removed.Output, bare) {
		t.Errorf("Remove(bare):\n%s", removed.Output)
	}
}

// TestKubeRaySamples: KubeRay's own samples come back byte for byte from
// Remove when nothing is injected, and from Remove after Apply; every
// document that is not a Ray kind, and every part of a Ray document outside
// the head pod, is untouched; injecting twice changes nothing.
func TestKubeRaySamples(t *testing.T) {
	ctx := context.Background()
	refused := map[string]string{
		"ray-cluster.verl.yaml":                `containers[0] (name "ray-head", image "hiyouga/verl:ngc-th2.6.0-cu126-vllm0.8.4-flashinfer0.2.2-cxx11abi0") is not a Ray container`,
		"ray-job.use-existing-raycluster.yaml": "runs on an existing cluster",
	}
	files, err := filepath.Glob("testdata/kuberay-samples/v1.5.0/*.yaml")
	if err != nil || len(files) < 15 {
		t.Fatalf("%d samples (%v)", len(files), err)
	}
	const image = "example.com/code-server-ray:1"
	for _, f := range files {
		base := filepath.Base(f)
		t.Run(base, func(t *testing.T) {
			in := mustRead(t, f)
			plain, err := Remove(base, in)
			if err != nil || !bytes.Equal(plain.Output, in) || plain.Changed {
				t.Fatalf("Remove of the sample as it is: %v\n%s", err, cmp.Diff(string(in), string(plain.Output)))
			}
			res, err := Apply(ctx, base, in, WithImage(image))
			if want, ok := refused[base]; ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("Apply: error %v, want one containing %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			inDocs, outDocs := splitDocuments(in), splitDocuments(res.Output)
			if len(inDocs) != len(outDocs) {
				t.Fatalf("%d documents out of %d", len(outDocs), len(inDocs))
			}
			rays := 0
			for i := range inDocs {
				root, err := parseDoc(outDocs[i])
				if err != nil {
					t.Fatalf("output document %d does not parse: %v", i+1, err)
				}
				if _, ok := rayDoc(root); !ok {
					if !bytes.Equal(inDocs[i], outDocs[i]) {
						t.Errorf("document %d (not a Ray kind) changed:\n%s", i+1, cmp.Diff(string(inDocs[i]), string(outDocs[i])))
					}
					continue
				}
				rays++
				before, err := kubetest.DecodeStrict(inDocs[i])
				if err != nil {
					t.Fatalf("input document %d: %v", i+1, err)
				}
				after, err := kubetest.DecodeStrict(outDocs[i])
				if err != nil {
					t.Fatalf("output document %d: %v", i+1, err)
				}
				bs, as := clusterSpec(before), clusterSpec(after)
				bp, ap := bs.HeadGroupSpec.Template.Spec, as.HeadGroupSpec.Template.Spec
				if len(ap.Containers) != len(bp.Containers)+1 || ap.Containers[len(ap.Containers)-1].Image != image {
					t.Errorf("document %d: head containers %d (was %d), want the sidecar last with image %s", i+1, len(ap.Containers), len(bp.Containers), image)
				}
				as.HeadGroupSpec.Template.Spec = bp
				if d := cmp.Diff(before, after); d != "" {
					t.Errorf("document %d: changed outside the head pod (-before +after):\n%s", i+1, d)
				}
			}
			if rays == 0 {
				t.Fatal("no Ray document")
			}
			again, err := Apply(ctx, base, res.Output, WithImage(image))
			if err != nil || again.Changed {
				t.Errorf("injecting again: changed=%v err=%v", again != nil && again.Changed, err)
			}
			removed, err := Remove(base, res.Output)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(in), string(removed.Output)); d != "" {
				t.Errorf("Remove did not give the sample back (-sample +removed):\n%s", d)
			}
		})
	}
}
