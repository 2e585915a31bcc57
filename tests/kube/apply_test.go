package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/imagectl/imagectl/smoke/kind"
)

// testImage is a sidecar image named by digest, as the smoke harness
// passes it (--image REF@sha256:...); nothing pulls it.
const testImage = "registry.example/code-server-ray:4.101.2-ray2.46.0-py3.12@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// applyCase is one manifest the project ships or produces.
type applyCase struct {
	name string
	// make writes the manifest (and, when it makes one, secret.yaml) in
	// dir and returns the manifest and the sidecar image it asked for ("":
	// the published default).
	make func(t *testing.T, dir string) (manifest []byte, image string)
	// createSecret: the Secret is created the README's other way
	// (kubectl create secret generic) instead of from secret.yaml.
	createSecret bool
	// refused: strict field validation refuses the manifest; the error
	// must match.
	refused *regexp.Regexp
	// renderOnly: make's own checks are the test; the manifest is not
	// applied (a Helm chart newer than the operator's CRDs).
	renderOnly bool
}

// injectInputs are inject's test inputs that are meant to be applied:
// RayJob, RayCluster (autoscaler, TLS init container, an existing /tmp/ray
// volume, other volumes) and RayService, alone and among other documents.
var injectInputs = []string{
	"rayjob-plain.yaml",
	"raycluster-autoscaler.yaml",
	"raycluster-tls.yaml",
	"raycluster-tmpray.yaml",
	"raycluster-volumes.yaml",
	"rayservice.yaml",
	"multi-doc.yaml",
}

// applyCases are the manifests to apply against the KubeRay operator of
// version kuberay.
func applyCases(t *testing.T, kuberay string) []applyCase {
	root := repoRoot(t)
	asIs := func(path string) func(*testing.T, string) ([]byte, string) {
		return func(t *testing.T, _ string) ([]byte, string) { return readFile(t, path), "" }
	}
	var cases []applyCase
	for _, f := range []string{"rayjob.yaml", "raycluster.yaml", "prepull.yaml"} {
		cases = append(cases, applyCase{name: "examples/" + f, make: asIs(filepath.Join(root, "examples", f)), createSecret: true})
	}
	for _, f := range injectInputs {
		in := filepath.Join(root, "inject", "testdata", f)
		cases = append(cases,
			applyCase{name: "inject/" + f + "/secret-file", make: func(t *testing.T, dir string) ([]byte, string) {
				writeFile(t, filepath.Join(dir, "in.yaml"), readFile(t, in))
				out, _ := inject(t, dir, "-f", "in.yaml", "--secret-file", "secret.yaml", "--no-resolve")
				return out, ""
			}},
			applyCase{name: "inject/" + f + "/image-created-secret", createSecret: true, make: func(t *testing.T, dir string) ([]byte, string) {
				writeFile(t, filepath.Join(dir, "in.yaml"), readFile(t, in))
				out, _ := inject(t, dir, "-f", "in.yaml", "--image", testImage)
				return out, testImage
			}},
			applyCase{name: "inject/" + f + "/remove", make: func(t *testing.T, dir string) ([]byte, string) {
				orig := readFile(t, in)
				writeFile(t, filepath.Join(dir, "in.yaml"), orig)
				out, _ := inject(t, dir, "-f", "in.yaml", "--no-resolve")
				writeFile(t, filepath.Join(dir, "injected.yaml"), out)
				back, _ := inject(t, dir, "-f", "injected.yaml", "--remove")
				if string(back) != string(orig) {
					t.Errorf("inject --remove did not give back %s", f)
				}
				return back, ""
			}},
		)
	}
	cases = append(cases, helmCases(t, kuberay)...)
	// A manifest with fields neither Kubernetes nor KubeRay knows: inject
	// keeps them, and strict validation refuses them, naming one (which
	// one depends on the CRD's schema: KubeRay v1.3.0 names x-head-extra
	// first).
	cases = append(cases, applyCase{
		name: "inject/unknown-fields.yaml/secret-file",
		make: func(t *testing.T, dir string) ([]byte, string) {
			writeFile(t, filepath.Join(dir, "in.yaml"), readFile(t, filepath.Join(root, "inject", "testdata", "unknown-fields.yaml")))
			out, _ := inject(t, dir, "-f", "in.yaml", "--secret-file", "secret.yaml", "--no-resolve")
			return out, ""
		},
		refused: regexp.MustCompile(`x-probe-hint|x-team-notes|x-head-extra`),
	})
	// The smoke harness's RayJob, injected as the harness does it (README
	// step 2 with the image under test by digest).
	cases = append(cases, applyCase{name: "smoke/kind", make: func(t *testing.T, dir string) ([]byte, string) {
		return smokeRayJob(t, dir), testImage
	}})
	return cases
}

// helmCases are inject's --helm-values outputs for KubeRay's ray-cluster
// chart (inject/testdata/ray-cluster-chart/<tag>: its values.yaml as
// released), rendered by helm (IMAGECTL_KUBE_HELM, which with-kube.sh
// builds) as `helm install` would render them: with --secret-file, with
// --image and the Secret created by kubectl, and after --remove. Every
// chart is rendered and must render the sidecar; only the charts of the
// operator's minor release and older are applied: KubeRay releases the
// chart with the operator, and a newer chart may render what the older
// CRDs refuse whatever inject does (from v1.5 the chart leaves out an empty
// rayStartParams, which the v1.3 CRDs require).
func helmCases(t *testing.T, kuberay string) []applyCase {
	charts, err := filepath.Glob(filepath.Join(repoRoot(t), "inject", "testdata", "ray-cluster-chart", "v*"))
	if err != nil || len(charts) == 0 {
		t.Fatalf("no charts in inject/testdata/ray-cluster-chart (%v)", err)
	}
	operator, err := semver.NewVersion(kuberay)
	if err != nil {
		t.Fatalf("IMAGECTL_KUBE_KUBERAY=%s: %v", kuberay, err)
	}
	var cases []applyCase
	applied := 0
	for _, chart := range charts {
		tag := filepath.Base(chart)
		v, err := semver.NewVersion(tag)
		if err != nil {
			t.Fatalf("chart %s: %v", chart, err)
		}
		renderOnly := v.Major() != operator.Major() || v.Minor() > operator.Minor()
		if !renderOnly {
			applied++
		}
		values := filepath.Join(chart, "values.yaml")
		chartCases := []applyCase{
			{name: "helm/ray-cluster-" + tag + "/secret-file", make: func(t *testing.T, dir string) ([]byte, string) {
				writeFile(t, filepath.Join(dir, "values.yaml"), readFile(t, values))
				inject(t, dir, "-f", "values.yaml", "--helm-values", "-i", "--secret-file", "secret.yaml", "--no-resolve")
				return helmTemplate(t, dir, chart, "values.yaml", true), ""
			}},
			{name: "helm/ray-cluster-" + tag + "/image-created-secret", createSecret: true, make: func(t *testing.T, dir string) ([]byte, string) {
				writeFile(t, filepath.Join(dir, "values.yaml"), readFile(t, values))
				inject(t, dir, "-f", "values.yaml", "--helm-values", "-i", "--image", testImage)
				return helmTemplate(t, dir, chart, "values.yaml", true), testImage
			}},
			{name: "helm/ray-cluster-" + tag + "/remove", make: func(t *testing.T, dir string) ([]byte, string) {
				orig := readFile(t, values)
				writeFile(t, filepath.Join(dir, "values.yaml"), orig)
				inject(t, dir, "-f", "values.yaml", "--helm-values", "-i", "--no-resolve")
				inject(t, dir, "-f", "values.yaml", "--helm-values", "-i", "--remove")
				if back := readFile(t, filepath.Join(dir, "values.yaml")); string(back) != string(orig) {
					t.Errorf("inject --helm-values --remove did not give back %s's values.yaml", tag)
				}
				return helmTemplate(t, dir, chart, "values.yaml", false), ""
			}},
		}
		for _, c := range chartCases {
			if renderOnly {
				c.name += "/render-only"
				c.renderOnly = true
			}
			cases = append(cases, c)
		}
	}
	if applied == 0 {
		t.Fatalf("no ray-cluster chart in inject/testdata/ray-cluster-chart is of KubeRay %s's minor release or older: nothing would be applied", kuberay)
	}
	return cases
}

// helmTemplate renders chart with the values file in dir, as `helm
// install debug CHART -f VALUES` would send it to the API server, and
// checks that the head template it renders has the sidecar (or has not):
// the Pod checks compare the Pod with the manifest, so values the chart
// ignored would otherwise pass as a manifest without a sidecar.
func helmTemplate(t *testing.T, dir, chart, values string, sidecar bool) []byte {
	t.Helper()
	helm := os.Getenv("IMAGECTL_KUBE_HELM")
	if helm == "" {
		t.Fatal("IMAGECTL_KUBE_HELM is not set: with-kube.sh exports it (the helm hack/deps.d/kube.sh builds)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, stderr, err := run(ctx, dir, []string{"HELM_CACHE_HOME=" + filepath.Join(dir, ".helm"), "HELM_CONFIG_HOME=" + filepath.Join(dir, ".helm"), "HELM_DATA_HOME=" + filepath.Join(dir, ".helm")},
		nil, helm, "template", "debug", chart, "-f", values, "--namespace", "default")
	if err != nil {
		t.Fatalf("helm template debug %s -f %s: %v\n%s", chart, values, err, stderr)
	}
	objs := rayObjects(t, []byte(out))
	if len(objs) != 1 {
		t.Fatalf("helm template %s rendered %d Ray objects, want 1", chart, len(objs))
	}
	if _, sc := container(objs[0].Head.Spec, sidecarName); (sc != nil) != sidecar {
		t.Fatalf("helm template %s: the head template's containers are %v; want the %s sidecar: %v", chart, names(objs[0].Head.Spec.Containers), sidecarName, sidecar)
	}
	return []byte(out)
}

// smokeRayJob writes the smoke harness's plain RayJob (kind.PlainFile) and
// its injected form (kind.InjectedFile, with kind.SecretFile) in dir, as
// the harness does, and returns the injected one.
func smokeRayJob(t *testing.T, dir string) []byte {
	t.Helper()
	plain, err := kind.RenderPlain(kind.Params{Name: "smoke", RayVersion: "2.46.0", Python: "3.12"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, kind.PlainFile), plain)
	out, _ := inject(t, dir, "-f", kind.PlainFile, "--secret-file", kind.SecretFile, "--image", testImage)
	writeFile(t, filepath.Join(dir, kind.InjectedFile), out)
	return out
}

// TestApply applies every manifest server-side with strict field
// validation, in a namespace of its own, and checks the head Pod and head
// Service the real KubeRay operator makes of each Ray object.
func TestApply(t *testing.T) {
	c := needCluster(t)
	for _, tc := range applyCases(t, c.kuberay) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			manifest, image := tc.make(t, dir)
			if tc.renderOnly {
				return
			}
			ns := c.namespace(t, nil)
			manifest = inNamespace(manifest, ns)
			if _, err := os.Stat(filepath.Join(dir, "secret.yaml")); err == nil {
				if tc.createSecret {
					t.Fatal("the case both writes secret.yaml and creates the Secret")
				}
				c.must(t, inNamespace(readFile(t, filepath.Join(dir, "secret.yaml")), ns), "apply", "--server-side", "--validate=strict", "-n", ns, "-f", "-")
			} else if tc.createSecret {
				c.must(t, nil, "create", "secret", "generic", secretName, "-n", ns, "--from-literal="+secretKey+"=test-password")
			}
			err := c.apply(t, ns, manifest)
			if tc.refused != nil {
				if err == nil || !tc.refused.MatchString(err.Error()) {
					t.Fatalf("kubectl apply --server-side --validate=strict: %v, want an error matching %s", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range rayObjects(t, manifest) {
				pod := c.headPod(t, ns, o)
				c.checkHeadPod(t, ns, o, pod, image)
				ports := c.checkHeadService(t, ns, o, pod)
				t.Logf("%s %s: head Pod %s containers %v; head Service ports %v", o.Kind, o.Name, pod.Name, names(pod.Spec.Containers), ports)
			}
		})
	}
}

// A head Pod's fate under PodSecurity: admitted, or refused with the
// operator's FailedToCreateHeadPod event.
func (c *cluster) admitted(t *testing.T, ns string, o rayObject) (bool, string) {
	t.Helper()
	sel := c.headSelector(t, ns, o)
	var ok bool
	var why string
	c.waitFor(t, 90*time.Second, "the head Pod of "+o.Name+" or its refusal in "+ns, func() (bool, error) {
		if len(c.pods(t, ns, sel)) > 0 {
			ok = true
			return true, nil
		}
		if ev := c.events(t, ns, "FailedToCreateHeadPod"); len(ev) > 0 {
			why = ev[0].Message
			return true, nil
		}
		return false, nil
	})
	return ok, why
}

// TestPodSecurity applies inject's output in namespaces that enforce the
// baseline and restricted Pod Security Standards (the Namespace document
// in the input, where inject reads the level from) and records which head
// Pods the API server's admission lets in. inject must warn about exactly
// the ones it refuses. examples/rayjob.yaml carries the sidecar already
// and is applied as it is: docs/inject.md (Hardened pods) says baseline
// admits it and restricted refuses it.
func TestPodSecurity(t *testing.T) {
	c := needCluster(t)
	root := repoRoot(t)
	testdata := func(f string) func(t *testing.T) []byte {
		return func(t *testing.T) []byte { return readFile(t, filepath.Join(root, "inject", "testdata", f)) }
	}
	hardened := func(t *testing.T) []byte {
		return restrictedRayJob(t, "smoke", kind.Params{RayVersion: "2.46.0", Python: "3.12"}.RayImage())
	}
	inputs := map[string]struct {
		input func(t *testing.T) []byte
		asIs  bool     // applied without inject
		args  []string // inject's flags
		// admitted, when set, is what PodSecurity must answer at both levels.
		admitted *bool
	}{
		// inject --restricted: PodSecurity "restricted" admits the sidecar;
		// the head pod as a whole only with a restricted Ray container, and
		// inject warns otherwise.
		"smoke/kind hardened --restricted":      {input: hardened, args: []string{"--restricted"}, admitted: ptrTo(true)},
		"smoke/kind hardened --arbitrary-uid":   {input: hardened, args: []string{"--arbitrary-uid"}, admitted: ptrTo(true)},
		"inject/rayjob-plain.yaml --restricted": {input: testdata("rayjob-plain.yaml"), args: []string{"--restricted"}},
		"inject/rayjob-plain.yaml":              {input: testdata("rayjob-plain.yaml")},
		"inject/raycluster-autoscaler.yaml":     {input: testdata("raycluster-autoscaler.yaml")},
		"inject/rayservice.yaml":                {input: testdata("rayservice.yaml")},
		"examples/rayjob.yaml": {asIs: true, input: func(t *testing.T) []byte {
			return readFile(t, filepath.Join(root, "examples", "rayjob.yaml"))
		}},
		"smoke/kind": {input: func(t *testing.T) []byte {
			p, err := kind.RenderPlain(kind.Params{Name: "smoke", RayVersion: "2.46.0", Python: "3.12"})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}},
	}
	for _, level := range []string{"baseline", "restricted"} {
		for name, in := range inputs {
			t.Run(level+"/"+name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				ns := c.namespace(t, nil)
				// The level comes with the input, as a Namespace document,
				// so that inject can see it.
				nsDoc := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n    pod-security.kubernetes.io/enforce: %s\n---\n", ns, level)
				input := append([]byte(nsDoc), inNamespaceDocs(in.input(t), ns)...)
				var out []byte
				var warned string
				if in.asIs {
					out = input
					c.must(t, nil, "create", "secret", "generic", secretName, "-n", ns, "--from-literal="+secretKey+"=test-password")
				} else {
					writeFile(t, filepath.Join(dir, "in.yaml"), input)
					var warnings string
					out, warnings = inject(t, dir, append([]string{"-f", "in.yaml", "--secret-file", "secret.yaml", "--no-resolve"}, in.args...)...)
					c.must(t, readFile(t, filepath.Join(dir, "secret.yaml")), "apply", "--server-side", "--validate=strict", "-n", ns, "-f", "-")
					warned = podSecurityWarning(warnings)
				}
				if err := c.apply(t, ns, out); err != nil {
					t.Fatal(err)
				}
				for _, o := range rayObjects(t, out) {
					ok, why := c.admitted(t, ns, o)
					t.Logf("PodSecurity %s, %s %s: admitted=%v inject warned=%v %s", level, o.Kind, o.Name, ok, warned != "", why)
					switch {
					case in.admitted != nil && ok != *in.admitted:
						t.Errorf("PodSecurity %s: head Pod of %s %s admitted=%v, want %v: %s", level, o.Kind, o.Name, ok, *in.admitted, why)
					case in.asIs:
						if want := level != "restricted"; ok != want {
							t.Errorf("PodSecurity %s: head Pod of %s %s admitted=%v, want %v (docs/inject.md, Hardened pods): %s", level, o.Kind, o.Name, ok, want, why)
						}
					case !ok && warned == "":
						t.Errorf("PodSecurity %s refused the head Pod of %s %s and inject said nothing about it:\n%s", level, o.Kind, o.Name, why)
					case ok && warned != "":
						t.Errorf("PodSecurity %s admitted the head Pod of %s %s but inject warned that it is refused:\n%s", level, o.Kind, o.Name, warned)
					}
				}
			})
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// podSecurityWarning is inject's warning that the head Pod will be
// refused (PodSecurity or runAsNonRoot), or "".
func podSecurityWarning(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "FailedToCreateHeadPod") {
			return l
		}
	}
	return ""
}

// inNamespaceDocs puts every document of manifest into ns: those without a
// namespace get one (their metadata is the first "metadata:" line).
func inNamespaceDocs(manifest []byte, ns string) []byte {
	manifest = inNamespace(manifest, ns)
	docs := strings.Split(string(manifest), "\n---")
	for i, d := range docs {
		if !strings.Contains(d, "\n  namespace:") {
			docs[i] = strings.Replace(d, "\nmetadata:\n", "\nmetadata:\n  namespace: "+ns+"\n", 1)
		}
	}
	return []byte(strings.Join(docs, "\n---"))
}
