package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// What README and docs/inject.md promise about the sidecar, written out here
// rather than taken from the inject package, so that a change there shows.
const (
	sidecarName    = "code-server"
	sidecarPort    = 8443
	secretName     = "code-server-password"
	secretKey      = "password"
	workspace      = "/tmp/ray/session_latest/runtime_resources"
	rayTmp         = "/tmp/ray"
	defaultRepo    = "docker.io/onesizefitsquorum/code-server-with-ray-distributed-debugger:"
	dashboardPort  = 8265
	saTokenMountAt = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// rayObject is a RayJob, RayCluster or RayService of a manifest.
type rayObject struct {
	Kind, Name string
	Head       corev1.PodTemplateSpec // the head group's template, as written
	// Dashboard is the dashboard's port: the head's rayStartParams
	// dashboard-port, else Ray's default 8265.
	Dashboard int32
}

// rayObjects reads the Ray objects of a multi-document manifest.
func rayObjects(t *testing.T, manifest []byte) []rayObject {
	t.Helper()
	var objs []rayObject
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading the manifest: %v", err)
		}
		var o struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				HeadGroupSpec    *headGroup                         `json:"headGroupSpec"`
				RayClusterSpec   *struct{ HeadGroupSpec headGroup } `json:"rayClusterSpec"`
				RayClusterConfig *struct{ HeadGroupSpec headGroup } `json:"rayClusterConfig"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("reading a document of the manifest: %v\n%s", err, doc)
		}
		if o.APIVersion != "ray.io/v1" {
			continue
		}
		ro := rayObject{Kind: o.Kind, Name: o.Metadata.Name}
		var hg headGroup
		switch {
		case o.Kind == "RayCluster" && o.Spec.HeadGroupSpec != nil:
			hg = *o.Spec.HeadGroupSpec
		case o.Kind == "RayJob" && o.Spec.RayClusterSpec != nil:
			hg = o.Spec.RayClusterSpec.HeadGroupSpec
		case o.Kind == "RayService" && o.Spec.RayClusterConfig != nil:
			hg = o.Spec.RayClusterConfig.HeadGroupSpec
		default:
			t.Fatalf("%s %s: no head group template", o.Kind, o.Metadata.Name)
		}
		ro.Head, ro.Dashboard = hg.Template, dashboardPort
		if p := hg.RayStartParams["dashboard-port"]; p != "" {
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				t.Fatalf("%s %s: rayStartParams dashboard-port %q: %v", o.Kind, o.Metadata.Name, p, err)
			}
			ro.Dashboard = int32(n)
		}
		objs = append(objs, ro)
	}
	return objs
}

type headGroup struct {
	RayStartParams map[string]string      `json:"rayStartParams"`
	Template       corev1.PodTemplateSpec `json:"template"`
}

var namespaceLine = regexp.MustCompile(`(?m)^(\s*namespace:[ \t]*)\S+[ \t]*$`)

// inNamespace moves every document that names a namespace into ns (the
// test's own).
func inNamespace(manifest []byte, ns string) []byte {
	return namespaceLine.ReplaceAll(manifest, []byte("${1}"+ns))
}

// rayCluster waits for the RayCluster that holds o's head group and returns
// its name: o itself for a RayCluster; for a RayJob or RayService the one
// the operator creates under a generated name and labels
// ray.io/originated-from-crd and ray.io/originated-from-cr-name. KubeRay
// does not copy those two labels to the Pods, which carry only
// ray.io/cluster.
func (c *cluster) rayCluster(t *testing.T, ns string, o rayObject) string {
	t.Helper()
	if o.Kind == "RayCluster" {
		return o.Name
	}
	sel := "ray.io/originated-from-crd=" + o.Kind + ",ray.io/originated-from-cr-name=" + o.Name
	var name string
	c.waitFor(t, 90*time.Second, fmt.Sprintf("the RayCluster of %s %s in %s (%s)", o.Kind, o.Name, ns, sel), func() (bool, error) {
		out, err := c.kubectl(t, nil, "get", "rayclusters", "-n", ns, "-l", sel, "-o", `jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}`)
		if err != nil {
			return false, err
		}
		f := strings.Fields(out)
		if len(f) > 1 {
			return false, fmt.Errorf("%d RayClusters, want 1: %v", len(f), f)
		}
		if len(f) == 1 {
			name = f[0]
		}
		return name != "", nil
	})
	return name
}

// headSelector selects the head Pod of o's RayCluster.
func (c *cluster) headSelector(t *testing.T, ns string, o rayObject) string {
	t.Helper()
	return "ray.io/node-type=head,ray.io/cluster=" + c.rayCluster(t, ns, o)
}

// headPod waits for the head Pod the operator makes for o in ns.
func (c *cluster) headPod(t *testing.T, ns string, o rayObject) corev1.Pod {
	t.Helper()
	sel := c.headSelector(t, ns, o)
	var pods []corev1.Pod
	c.waitFor(t, 90*time.Second, fmt.Sprintf("the head Pod of %s %s in %s (%s)", o.Kind, o.Name, ns, sel), func() (bool, error) {
		pods = c.pods(t, ns, sel)
		if len(pods) == 0 {
			if ev := c.events(t, ns, "FailedToCreateHeadPod"); len(ev) > 0 {
				return false, fmt.Errorf("the operator could not create it: %s", ev[0].Message)
			}
		}
		return len(pods) > 0, nil
	})
	if len(pods) != 1 {
		t.Fatalf("%d head Pods for %s %s, want 1", len(pods), o.Kind, o.Name)
	}
	return pods[0]
}

// defaulted is the template's Pod spec as the API server stores it
// (defaults filled in), from a server-side dry-run create in ns.
func (c *cluster) defaulted(t *testing.T, ns string, tmpl corev1.PodTemplateSpec) corev1.PodSpec {
	t.Helper()
	p := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "dry-run"}, "spec": tmpl.Spec}
	j, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	out := c.must(t, j, "create", "--dry-run=server", "-n", ns, "-o", "json", "-f", "-")
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(out), &pod); err != nil {
		t.Fatal(err)
	}
	return pod.Spec
}

// withoutTokenMount drops the ServiceAccount token mount that admission adds
// to every container under a generated name.
func withoutTokenMount(ct corev1.Container) corev1.Container {
	ct.VolumeMounts = slices.DeleteFunc(slices.Clone(ct.VolumeMounts), func(m corev1.VolumeMount) bool { return m.MountPath == saTokenMountAt })
	return ct
}

func container(spec corev1.PodSpec, name string) (int, *corev1.Container) {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return i, &spec.Containers[i]
		}
	}
	return -1, nil
}

// checkHeadPod checks the head Pod KubeRay wrote for o against what the
// manifest asked for. wantImage, when set, is the sidecar image inject
// was told to use.
func (c *cluster) checkHeadPod(t *testing.T, ns string, o rayObject, pod corev1.Pod, wantImage string) {
	t.Helper()
	tmpl := o.Head.Spec
	if len(pod.Spec.Containers) == 0 || pod.Spec.Containers[0].Name != tmpl.Containers[0].Name {
		t.Errorf("%s %s: head Pod's containers[0] is %v, want the Ray container %q", o.Kind, o.Name, names(pod.Spec.Containers), tmpl.Containers[0].Name)
	}
	ti, tsc := container(tmpl, sidecarName)
	pi, psc := container(pod.Spec, sidecarName)
	if tsc == nil {
		if psc != nil {
			t.Errorf("%s %s: the manifest has no sidecar, the head Pod has one: %v", o.Kind, o.Name, names(pod.Spec.Containers))
		}
		c.checkTmpRay(t, o, pod)
		return
	}
	if psc == nil {
		t.Fatalf("%s %s: head Pod has no %s container: %v", o.Kind, o.Name, sidecarName, names(pod.Spec.Containers))
	}
	// Order: KubeRay keeps the template's containers in order; the sidecar
	// comes right after the Ray container unless the head had more.
	if pi != ti {
		t.Errorf("%s %s: sidecar at containers[%d] of the Pod, containers[%d] of the manifest", o.Kind, o.Name, pi, ti)
	}
	if len(tmpl.Containers) == 2 && pi != 1 {
		t.Errorf("%s %s: sidecar at containers[%d], want 1 (second)", o.Kind, o.Name, pi)
	}
	// The operator leaves the sidecar as written: the same container as the
	// API server makes of the template's own (defaults filled in).
	want := withoutTokenMount(c.defaulted(t, ns, o.Head).Containers[ti])
	if d := diffJSON(want, withoutTokenMount(*psc)); d != "" {
		t.Errorf("%s %s: the operator changed the sidecar (template as the API server defaults it -> head Pod):\n%s", o.Kind, o.Name, d)
	}
	// What README promises, literally.
	if wantImage != "" && psc.Image != wantImage {
		t.Errorf("sidecar image %q, want %q", psc.Image, wantImage)
	}
	if wantImage == "" && !strings.HasPrefix(psc.Image, defaultRepo) {
		t.Errorf("sidecar image %q, want the published %s...", psc.Image, defaultRepo)
	}
	if !slices.ContainsFunc(psc.Ports, func(p corev1.ContainerPort) bool {
		return p.ContainerPort == sidecarPort && p.Name == sidecarName && p.Protocol == corev1.ProtocolTCP
	}) {
		t.Errorf("sidecar ports %+v, want %s %d/TCP", psc.Ports, sidecarName, sidecarPort)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range psc.Env {
		env[e.Name] = e
	}
	if env["DEFAULT_WORKSPACE"].Value != workspace {
		t.Errorf("sidecar DEFAULT_WORKSPACE %+v, want %s", env["DEFAULT_WORKSPACE"], workspace)
	}
	pw := env["PASSWORD"]
	if pw.Value != "" || pw.ValueFrom == nil || pw.ValueFrom.SecretKeyRef == nil ||
		pw.ValueFrom.SecretKeyRef.Name != secretName || pw.ValueFrom.SecretKeyRef.Key != secretKey {
		t.Errorf("sidecar PASSWORD %+v, want valueFrom secretKeyRef %s/%s", pw, secretName, secretKey)
	}
	if len(psc.Args) != 0 || len(psc.Command) != 0 {
		t.Errorf("sidecar command %q args %q: the image's own entrypoint must run", psc.Command, psc.Args)
	}
	if psc.ReadinessProbe != nil || psc.LivenessProbe != nil || psc.StartupProbe != nil {
		// inject writes no probes; KubeRay adds its own only to containers[0].
		t.Errorf("sidecar probes readiness=%v liveness=%v startup=%v, want none", psc.ReadinessProbe, psc.LivenessProbe, psc.StartupProbe)
	}
	sc := psc.SecurityContext
	wantCaps := []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID"}
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 || sc.RunAsNonRoot == nil || *sc.RunAsNonRoot ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Add, wantCaps) || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || (sc.Privileged != nil && *sc.Privileged) {
		j, _ := json.Marshal(sc)
		t.Errorf("sidecar securityContext %s, want runAsUser 0, runAsNonRoot false, allowPrivilegeEscalation false, capabilities drop [ALL] add %v, seccompProfile RuntimeDefault", j, wantCaps)
	}
	// The Secret the sidecar reads exists, with a password.
	out, err := c.kubectl(t, nil, "get", "secret", secretName, "-n", ns, "-o", "jsonpath={.data."+secretKey+"}")
	if err != nil || out == "" {
		t.Errorf("Secret %s in %s: %q, %v: want a non-empty %s", secretName, ns, out, err, secretKey)
	}
	c.checkTmpRay(t, o, pod)
}

// checkTmpRay: every container that mounts /tmp/ray mounts the same volume,
// the Ray container and the sidecar among them, and the Pod has that
// volume once.
func (c *cluster) checkTmpRay(t *testing.T, o rayObject, pod corev1.Pod) {
	t.Helper()
	vols := map[string][]string{} // volume -> containers mounting it at /tmp/ray
	for _, ct := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		for _, m := range ct.VolumeMounts {
			if filepath.Clean(m.MountPath) == rayTmp {
				vols[m.Name] = append(vols[m.Name], ct.Name)
			}
		}
	}
	_, sc := container(pod.Spec, sidecarName)
	if sc == nil && len(vols) == 0 {
		return // no sidecar, no /tmp/ray volume of the manifest's own
	}
	if len(vols) != 1 {
		t.Errorf("%s %s: /tmp/ray is %d volumes in the head Pod, want 1: %v", o.Kind, o.Name, len(vols), vols)
		return
	}
	for v, cts := range vols {
		n := 0
		for _, pv := range pod.Spec.Volumes {
			if pv.Name == v {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s %s: volume %s defined %d times", o.Kind, o.Name, v, n)
		}
		want := []string{pod.Spec.Containers[0].Name}
		if sc != nil {
			want = append(want, sidecarName)
		}
		for _, w := range want {
			if !slices.Contains(cts, w) {
				t.Errorf("%s %s: /tmp/ray volume %s is mounted by %v, not by %s", o.Kind, o.Name, v, cts, w)
			}
		}
	}
}

// checkHeadService: the head Service KubeRay makes for the Pod's cluster
// exposes the dashboard README port-forwards (service/<cluster>-head-svc
// 8265:8265, or o's own dashboard port). The sidecar's 8443 is reached
// through the Pod.
func (c *cluster) checkHeadService(t *testing.T, ns string, o rayObject, pod corev1.Pod) []int32 {
	t.Helper()
	cl := pod.Labels["ray.io/cluster"]
	var svc corev1.Service
	c.waitFor(t, 60*time.Second, "Service "+cl+"-head-svc in "+ns, func() (bool, error) {
		out, err := c.kubectl(t, nil, "get", "service", cl+"-head-svc", "-n", ns, "-o", "json")
		if err != nil {
			return false, nil
		}
		return true, json.Unmarshal([]byte(out), &svc)
	})
	var ports []int32
	for _, p := range svc.Spec.Ports {
		ports = append(ports, p.Port)
	}
	if !slices.Contains(ports, o.Dashboard) {
		t.Errorf("Service %s-head-svc ports %v: no dashboard %d to port-forward", cl, ports, o.Dashboard)
	}
	if svc.Spec.Selector["ray.io/cluster"] != cl || svc.Spec.Selector["ray.io/node-type"] != "head" {
		t.Errorf("Service %s-head-svc selects %v, not the head Pod of %s", cl, svc.Spec.Selector, cl)
	}
	return ports
}

func names(cs []corev1.Container) []string {
	var n []string
	for _, c := range cs {
		n = append(n, c.Name)
	}
	return n
}

// diffJSON compares a and b as JSON, line by line.
func diffJSON(a, b any) string {
	ja, _ := json.MarshalIndent(a, "", "  ")
	jb, _ := json.MarshalIndent(b, "", "  ")
	if bytes.Equal(ja, jb) {
		return ""
	}
	return "want:\n" + string(ja) + "\ngot:\n" + string(jb)
}

// inject runs `imagectl inject` in dir, returning its stdout and its
// warnings (stderr lines).
func inject(t *testing.T, dir string, args ...string) ([]byte, string) {
	t.Helper()
	bin := imagectlBin(t) // before the timeout starts: the first call builds it
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, stderr, err := run(ctx, dir, []string{"DOCKER_CONFIG=" + filepath.Join(dir, ".docker")}, nil, bin, append([]string{"inject"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(out), stderr
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
