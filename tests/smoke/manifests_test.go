package smoketest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	corev1 "k8s.io/api/core/v1"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/inject"
	"github.com/imagectl/imagectl/internal/testutil/kubetest"
	"github.com/imagectl/imagectl/smoke/kind"
)

// decodeAll strictly decodes every document of a multi-document YAML into
// its KubeRay or Kubernetes Go type: an unknown or misspelt field, a duplicate
// key or a wrong type fails.
func decodeAll(data []byte) ([]any, error) {
	var objs []any
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		obj, err := kubetest.DecodeStrict([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if obj == nil {
			return nil, fmt.Errorf("document %d: no apiVersion and kind", i)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// checkPods applies the sidecar rules to every pod template of a RayJob or
// RayCluster and returns the problems found.
func checkPods(obj any) []string {
	var spec *rayv1.RayClusterSpec
	var name string
	switch o := obj.(type) {
	case *rayv1.RayJob:
		spec, name = o.Spec.RayClusterSpec, "RayJob "+o.Name
		if spec == nil {
			return []string{name + ": no rayClusterSpec"}
		}
		// The documented flow submits it with `kubectl ray job submit -f`
		// (plugin v1.3 to v1.7), which refuses these.
		if o.Spec.SubmissionMode != rayv1.InteractiveMode {
			return []string{name + ": submissionMode " + string(o.Spec.SubmissionMode) + ", the kubectl ray plugin's -f needs InteractiveMode"}
		}
		if o.Spec.BackoffLimit != nil && *o.Spec.BackoffLimit > 0 {
			return []string{name + ": backoffLimit > 0, which the kubectl ray plugin (>= 1.4) refuses with InteractiveMode"}
		}
		if o.Spec.TTLSecondsAfterFinished > 0 && !o.Spec.ShutdownAfterJobFinishes {
			return []string{name + ": ttlSecondsAfterFinished without shutdownAfterJobFinishes, which the kubectl ray plugin (>= 1.4) refuses"}
		}
	case *rayv1.RayCluster:
		spec, name = &o.Spec, "RayCluster "+o.Name
	default:
		return nil
	}
	var probs []string
	bad := func(format string, a ...any) { probs = append(probs, name+": "+fmt.Sprintf(format, a...)) }

	head := spec.HeadGroupSpec.Template.Spec
	if len(head.Containers) != 2 {
		bad("head pod has %d containers, want the Ray container and the code-server sidecar", len(head.Containers))
		return probs
	}
	checkRayContainer(head, head.Containers[0], "head", bad)
	if !mountsRayTmp(head, head.Containers[0]) {
		bad("head Ray container does not mount the /tmp/ray emptyDir")
	}
	sc := head.Containers[1]
	if !hasPort(sc, 8443) {
		bad("head containers[1] %q: no port 8443, expected the code-server sidecar second", sc.Name)
	}
	if !mountsRayTmp(head, sc) {
		bad("sidecar %q does not mount the /tmp/ray emptyDir", sc.Name)
	}
	var pwFromSecret bool
	for _, e := range sc.Env {
		switch e.Name {
		case "SUDO_PASSWORD", "SUDO_PASSWORD_HASH":
			bad("sidecar sets %s: no sudo password in the examples", e.Name)
		case "PASSWORD", "HASHED_PASSWORD":
			if e.Value != "" {
				bad("sidecar %s is a plaintext value, expected valueFrom.secretKeyRef", e.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				pwFromSecret = true
			}
		case "DEFAULT_WORKSPACE":
			if e.Value != "/tmp/ray/session_latest/runtime_resources" {
				bad("sidecar DEFAULT_WORKSPACE=%q", e.Value)
			}
		}
	}
	if !pwFromSecret {
		bad("sidecar has no PASSWORD or HASHED_PASSWORD from a Secret")
	}
	if sc.Resources.Requests.Cpu().IsZero() || sc.Resources.Limits.Memory().IsZero() {
		bad("sidecar has no resources")
	}
	for _, wg := range spec.WorkerGroupSpecs {
		ws := wg.Template.Spec
		if len(ws.Containers) == 0 {
			bad("worker group %q has no containers", wg.GroupName)
			continue
		}
		checkRayContainer(ws, ws.Containers[0], "worker group "+wg.GroupName, bad)
	}
	return probs
}

func checkRayContainer(pod corev1.PodSpec, c corev1.Container, where string, bad func(string, ...any)) {
	if !strings.HasPrefix(c.Image, "rayproject/ray:") {
		bad("%s containers[0] is %q (%s), expected the Ray container first", where, c.Name, c.Image)
	}
	if c.SecurityContext == nil || c.SecurityContext.RunAsNonRoot == nil || !*c.SecurityContext.RunAsNonRoot {
		bad("%s Ray container is not runAsNonRoot", where)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		bad("%s Ray container has no resources", where)
	}
}

func hasPort(c corev1.Container, port int32) bool {
	for _, p := range c.Ports {
		if p.ContainerPort == port {
			return true
		}
	}
	return false
}

func mountsRayTmp(pod corev1.PodSpec, c corev1.Container) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath != "/tmp/ray" {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil {
				return true
			}
		}
	}
	return false
}

// checkExampleSidecar holds the hand-written examples to what imagectl
// inject writes: the sidecar starts as root whatever the pod's defaults
// (linuxserver's init needs it) without privilege escalation, and /tmp/ray
// is KubeRay's own volume name, ray-logs, so its autoscaler shares it.
func checkExampleSidecar(obj any) []string {
	var spec *rayv1.RayClusterSpec
	switch o := obj.(type) {
	case *rayv1.RayJob:
		spec = o.Spec.RayClusterSpec
	case *rayv1.RayCluster:
		spec = &o.Spec
	}
	if spec == nil || len(spec.HeadGroupSpec.Template.Spec.Containers) < 2 {
		return nil
	}
	var probs []string
	head := spec.HeadGroupSpec.Template.Spec
	sc := head.Containers[1].SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 || sc.RunAsNonRoot == nil || *sc.RunAsNonRoot ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		probs = append(probs, "sidecar securityContext is not runAsUser 0, runAsNonRoot false, allowPrivilegeEscalation false")
	}
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		probs = append(probs, "sidecar securityContext does not drop [ALL] capabilities and use the RuntimeDefault seccomp profile")
	} else {
		var add []string
		for _, c := range sc.Capabilities.Add {
			add = append(add, string(c))
		}
		if !slices.Equal(add, imagespec.StartupCapabilities) {
			probs = append(probs, fmt.Sprintf("sidecar adds capabilities %v, want %v (imagespec.StartupCapabilities)", add, imagespec.StartupCapabilities))
		}
	}
	for _, c := range head.Containers[:2] {
		for _, m := range c.VolumeMounts {
			if m.MountPath == "/tmp/ray" && m.Name != "ray-logs" {
				probs = append(probs, fmt.Sprintf("container %q mounts /tmp/ray from %q, not KubeRay's ray-logs", c.Name, m.Name))
			}
		}
	}
	return probs
}

func TestExamplesAreValid(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v", files, err)
	}
	kinds := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeAll(b)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, o := range objs {
			kinds[fmt.Sprintf("%T", o)] = true
			for _, p := range append(checkPods(o), checkExampleSidecar(o)...) {
				t.Errorf("%s: %s", f, p)
			}
		}
	}
	for _, k := range []string{"*v1.RayJob", "*v1.RayCluster"} {
		if !kinds[k] {
			t.Errorf("no example decodes as %s", k)
		}
	}
}

// TestHarnessManifestIsValid: the smoke RayJob with the sidecar added by the
// inject library (as the harness's imagectl inject does) passes the same
// checks as the examples (the plugin's among them), is one document (the
// plugin's -f reads the first) and names no namespace.
func TestHarnessManifestIsValid(t *testing.T) {
	const image = "docker.io/example/code-server-ray:ray2.46.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	out, _, err := kind.Manifest(context.Background(), kind.Params{Name: "imagectl-smoke", RayVersion: "2.46.0", Python: "3.12"},
		inject.WithImage(image))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeAll(out)
	if err != nil {
		t.Fatalf("harness manifest: %v\n%s", err, out)
	}
	if len(objs) != 1 {
		t.Fatalf("the harness manifest has %d documents, want the RayJob alone:\n%s", len(objs), out)
	}
	job, ok := objs[0].(*rayv1.RayJob)
	if !ok {
		t.Fatalf("the harness manifest is a %T, want a RayJob", objs[0])
	}
	for _, p := range checkPods(job) {
		t.Error(p)
	}
	head := job.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec
	if got := head.Containers[1].Image; got != image {
		t.Errorf("sidecar image %q, want %q", got, image)
	}
	if job.Namespace != "" {
		t.Errorf("the harness manifest names a namespace (%q): it must go where the kubeconfig points", job.Namespace)
	}
}

// TestChecksCatchMistakes proves the checks above can fail.
func TestChecksCatchMistakes(t *testing.T) {
	good, err := os.ReadFile("../../examples/rayjob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(string) string
		want   string
	}{
		{"unknown field", func(s string) string {
			return strings.Replace(s, "shutdownAfterJobFinishes: true", "shutdownAfterJobFinishes: true\n  shutdownAfterJobFinish: true", 1)
		}, "unknown field"},
		{"plaintext password", func(s string) string {
			return strings.Replace(s, "            - name: PASSWORD\n              valueFrom:\n                secretKeyRef: {name: code-server-password, key: password}\n",
				"            - {name: PASSWORD, value: hunter2}\n", 1)
		}, "plaintext"},
		{"sudo password", func(s string) string {
			return strings.Replace(s, "            - {name: TZ, value: Etc/UTC}\n", "            - {name: TZ, value: Etc/UTC}\n            - {name: SUDO_PASSWORD, value: root}\n", 1)
		}, "SUDO_PASSWORD"},
		{"no /tmp/ray in sidecar", func(s string) string {
			i := strings.Index(s, "          - name: code-server\n")
			return s[:i] + strings.Replace(s[i:], "            - {name: ray-logs, mountPath: /tmp/ray}\n", "", 1)
		}, "does not mount the /tmp/ray emptyDir"},
		{"sidecar without securityContext", func(s string) string {
			return strings.Replace(s, "              runAsUser: 0\n", "", 1)
		}, "sidecar securityContext"},
		{"volume not ray-logs", func(s string) string {
			return strings.ReplaceAll(s, "ray-logs", "ray-tmp")
		}, "not KubeRay's ray-logs"},
		{"K8sJobMode", func(s string) string {
			return strings.Replace(s, "submissionMode: InteractiveMode", "submissionMode: K8sJobMode\n  entrypoint: python x.py", 1)
		}, "needs InteractiveMode"},
		{"backoffLimit", func(s string) string {
			return strings.Replace(s, "shutdownAfterJobFinishes: true", "shutdownAfterJobFinishes: true\n  backoffLimit: 2", 1)
		}, "backoffLimit > 0"},
		{"ttl without shutdown", func(s string) string {
			return strings.Replace(s, "shutdownAfterJobFinishes: true", "shutdownAfterJobFinishes: false", 1)
		}, "ttlSecondsAfterFinished without shutdownAfterJobFinishes"},
		{"wrong ray image first", func(s string) string {
			return strings.Replace(s, "image: rayproject/ray:2.46.0-py312", "image: python:3.12", 1)
		}, "expected the Ray container first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := tt.mutate(string(good))
			if bad == string(good) {
				t.Fatal("mutation did not change the manifest")
			}
			var problems []string
			objs, err := decodeAll([]byte(bad))
			if err != nil {
				problems = append(problems, err.Error())
			}
			for _, o := range objs {
				problems = append(problems, checkPods(o)...)
				problems = append(problems, checkExampleSidecar(o)...)
			}
			all := strings.Join(problems, "\n")
			if !strings.Contains(all, tt.want) {
				t.Errorf("problems %q do not mention %q", all, tt.want)
			}
		})
	}
}
