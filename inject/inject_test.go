package inject

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	yaml3 "gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/testimage"
	"github.com/imagectl/imagectl/matrix"
)

const plainCluster = `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: c
spec:
  rayVersion: "2.46.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
`

func TestErrorsNameFileAndDocument(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	tests := []struct {
		name  string
		input string
		opts  []Option
		want  []string // substrings of the error
	}{
		{"not a Ray kind", cm, nil, []string{"f.yaml: no ray.io/v1 RayJob, RayCluster or RayService in 1 document(s)"}},
		{"old api version", strings.Replace(plainCluster, "ray.io/v1", "ray.io/v1alpha1", 1), nil,
			[]string{"f.yaml: document 1 (RayCluster c): apiVersion ray.io/v1alpha1: expected ray.io/v1"}},
		{"no head group", "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: c\nspec:\n  workerGroupSpecs: []\n", nil,
			[]string{"document 1 (RayCluster c): no head group: spec.headGroupSpec is missing"}},
		{"RayJob on an existing cluster", "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: j\nspec:\n  clusterSelector:\n    ray.io/cluster: c\n", nil,
			[]string{"(RayJob j): no head group: the RayJob runs on an existing cluster (spec.clusterSelector)"}},
		{"RayService without rayClusterConfig", "apiVersion: ray.io/v1\nkind: RayService\nmetadata:\n  name: s\nspec:\n  serveConfigV2: x\n", nil,
			[]string{"(RayService s): no head group: spec.rayClusterConfig is missing"}},
		{"no containers", strings.Replace(plainCluster, "        - name: ray-head\n          image: rayproject/ray:2.46.0\n", "        - \n", 1) + "", nil,
			[]string{"spec.headGroupSpec.template.spec.containers[0] is not a mapping"}},
		{"empty containers", strings.Replace(plainCluster, "        containers:\n        - name: ray-head\n          image: rayproject/ray:2.46.0\n", "        containers: []\n", 1), nil,
			[]string{"no containers: spec.headGroupSpec.template.spec.containers is missing or empty"}},
		{"a code-server that is not ours", plainCluster + "        - name: code-server\n          image: me/code-server\n", nil,
			[]string{`already has a container named "code-server" that imagectl inject did not add`, "--name"}},
		{"the Ray container named like the sidecar", strings.Replace(plainCluster, "name: ray-head", "name: code-server", 1), nil,
			[]string{`already has a container named "code-server"`}},
		{"invalid YAML in the second document", cm + "---\n" + plainCluster + "  bad: [\n", nil,
			[]string{"f.yaml: document 2: invalid YAML"}},
		{"top level not a mapping", "- a\n- b\n", nil, []string{"document 1: expected a mapping at the top, found a sequence"}},
		{"flow sequence of containers", strings.Replace(plainCluster, "        containers:\n        - name: ray-head\n          image: rayproject/ray:2.46.0\n",
			"        containers: [{name: ray-head, image: \"rayproject/ray:2.46.0\"}]\n", 1), nil,
			[]string{"spec.headGroupSpec.template.spec.containers is a flow sequence ([...]) at line 11"}},
		{"port taken", plainCluster + "          ports:\n          - containerPort: 8443\n", nil,
			[]string{"port 8443 is already used", "--port"}},
		{"no Ray version", strings.NewReplacer(`  rayVersion: "2.46.0"`+"\n", "", "rayproject/ray:2.46.0", "me/ray:custom").Replace(plainCluster), nil,
			[]string{`no Ray version: spec.headGroupSpec.template.spec has no rayVersion and the Ray image "me/ray:custom" has no X.Y.Z tag; pass the sidecar image (--image)`}},
		{"alias", "x: &t\n  spec:\n    containers: [{name: a}]\n" + strings.Replace(strings.Replace(plainCluster, "    template:\n      spec:\n        containers:\n        - name: ray-head\n          image: rayproject/ray:2.46.0\n", "    template: *t\n", 1), "", "", 1), nil,
			[]string{"spec.headGroupSpec.template is an alias (*t)"}},
		{"Helm values without head", "image:\n  tag: 2.46.0\n", []Option{WithHelmValues()}, []string{"no head group"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Apply(context.Background(), "f.yaml", []byte(tt.input), tt.opts...)
			if err == nil {
				t.Fatalf("no error; output:\n%s", res.Output)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var ie *Error
			if !errors.As(err, &ie) || ie.File != "f.yaml" {
				t.Errorf("error %v is not an *inject.Error naming the file", err)
			}
		})
	}
}

func TestOptionsValidated(t *testing.T) {
	tests := []struct {
		opt  Option
		want string
	}{
		{WithName("Code_Server"), `sidecar name "Code_Server": expected a DNS label`},
		{WithPort(0), "port 0: expected 1-65535"},
		{WithPasswordSecret("pw", "a/b"), `password secret key "a/b"`},
		{WithResources(map[string]string{"cpu": "lots"}, nil), `requests cpu="lots": expected a Kubernetes quantity`},
		{WithDashboard("8265"), `dashboard "8265": expected host:port`},
		{WithImagePullSecret("Bad Name"), `image pull secret "Bad Name"`},
	}
	for _, tt := range tests {
		_, err := Apply(context.Background(), "f.yaml", []byte(plainCluster), tt.opt)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
	_, err := Apply(context.Background(), "v.yaml", []byte("head:\n  a: 1\n"), WithHelmValues(), WithCreateSecret())
	if err == nil || !strings.Contains(err.Error(), "kubectl create secret generic code-server-password") {
		t.Errorf("--create-secret with Helm values: %v", err)
	}
}

// TestOptionsShapeTheSidecar: every option ends up where it belongs, and
// a second Apply with other options replaces the first one's sidecar.
func TestOptionsShapeTheSidecar(t *testing.T) {
	ctx := context.Background()
	res, err := Apply(ctx, "f.yaml", []byte(plainCluster),
		WithImage("example.com/cs:1"), WithName("debugger"), WithPort(9443), WithPasswordSecret("pw", "code"),
		WithResources(map[string]string{"cpu": "100m"}, map[string]string{"memory": "1Gi"}),
		WithDashboard("10.0.0.1:8265"), WithImagePullSecret("regcred"))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := decodeStrict(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	pod := clusterSpec(obj).HeadGroupSpec.Template.Spec
	sc := pod.Containers[1]
	got := map[string]string{
		"name": sc.Name, "image": sc.Image, "port": fmt.Sprintf("%s:%d", sc.Ports[0].Name, sc.Ports[0].ContainerPort),
		"secret":   sc.Env[3].ValueFrom.SecretKeyRef.Name + "/" + sc.Env[3].ValueFrom.SecretKeyRef.Key,
		"requests": sc.Resources.Requests.Cpu().String(), "limits": sc.Resources.Limits.Memory().String(),
		"dashboard": sc.Lifecycle.PostStart.Exec.Command[3], "pull": pod.ImagePullSecrets[0].Name,
	}
	want := map[string]string{
		"name": "debugger", "image": "example.com/cs:1", "port": "code-server:9443",
		"secret": "pw/code", "requests": "100m", "limits": "1Gi", "dashboard": "10.0.0.1:8265", "pull": "regcred",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("sidecar (-want +got):\n%s\n%s", d, res.Output)
	}
	// Re-inject with defaults: the marked sidecar is replaced, not doubled.
	again, err := Apply(ctx, "f.yaml", res.Output, WithImage("example.com/cs:2"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(again.Output), Marker); n != 3 {
		t.Errorf("%d marked additions after re-injecting, want 3 (mount, sidecar, volume):\n%s", n, again.Output)
	}
	if !strings.Contains(string(again.Output), "image: example.com/cs:2") || strings.Contains(string(again.Output), "debugger") {
		t.Errorf("re-inject did not replace the sidecar:\n%s", again.Output)
	}
}

func TestCRLFAndNoFinalNewline(t *testing.T) {
	for name, in := range map[string]string{
		"crlf":            strings.ReplaceAll(plainCluster, "\n", "\r\n"),
		"no final \\n":    strings.TrimSuffix(plainCluster, "\n"),
		"comment at end":  plainCluster + "# the end\n",
		"leading --- doc": "---\n" + plainCluster,
	} {
		t.Run(name, func(t *testing.T) {
			res, err := Apply(context.Background(), "f.yaml", []byte(in), WithCreateSecret())
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(in, "\r\n") && strings.Count(string(res.Output), "\n") != strings.Count(string(res.Output), "\r\n") {
				t.Errorf("mixed line endings:\n%q", res.Output)
			}
			docs := splitDocuments(res.Output)
			if len(docs) != 2 {
				t.Fatalf("%d documents, want the Secret and the cluster:\n%s", len(docs), res.Output)
			}
			for _, d := range docs {
				if _, err := decodeStrict(d); err != nil {
					t.Errorf("%v\n%s", err, d)
				}
			}
			removed, err := Remove("f.yaml", res.Output)
			if err != nil {
				t.Fatal(err)
			}
			if string(removed.Output) != in {
				t.Errorf("Remove:\n%q\nwant\n%q", removed.Output, in)
			}
		})
	}
}

// TestHelmValuesDocumentEnd: a key added at the top level goes before the
// document end marker.
func TestHelmValuesDocumentEnd(t *testing.T) {
	in := "image:\n  tag: 2.46.0\nhead:\n  rayStartParams: {}\n...\n"
	res, err := Apply(context.Background(), "v.yaml", []byte(in), WithHelmValues(), WithImagePullSecret("regcred"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(res.Output), "imagePullSecrets: # added by imagectl inject\n- name: regcred\n...\n") {
		t.Errorf("imagePullSecrets not added before the document end:\n%s", res.Output)
	}
	if removed, err := Remove("v.yaml", res.Output); err != nil || string(removed.Output) != in {
		t.Errorf("Remove: %v\n%s", err, removed.Output)
	}
}

func TestExistingSecretIsNotDuplicated(t *testing.T) {
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: code-server-password\nstringData:\n  password: mine-and-long-enough\n---\n"
	res, err := Apply(context.Background(), "f.yaml", []byte(secret+plainCluster), WithCreateSecret())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Secrets) != 0 || strings.Count(string(res.Output), "kind: Secret") != 1 {
		t.Errorf("a second Secret was added: %q\n%s", res.Secrets, res.Output)
	}
	// A created Secret survives re-injection with the same password.
	first, err := Apply(context.Background(), "f.yaml", []byte(plainCluster), WithCreateSecret())
	if err != nil {
		t.Fatal(err)
	}
	second, err := Apply(context.Background(), "f.yaml", first.Output, WithCreateSecret())
	if err != nil || second.Changed || len(second.Secrets) != 0 {
		t.Errorf("re-injecting a created Secret: changed=%v secrets=%q err=%v", second.Changed, second.Secrets, err)
	}
}

func TestDefaultImageFollowsMatrix(t *testing.T) {
	cfg, err := matrix.Load(filepath.Join("..", "matrix.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Image.Repositories) == 0 || cfg.Image.Repositories[0] != DefaultRepository {
		t.Errorf("matrix.yaml image.repositories %q, inject.DefaultRepository %q", cfg.Image.Repositories, DefaultRepository)
	}
	var floating []string
	for _, tag := range cfg.Tags {
		if tag.Floating {
			floating = append(floating, tag.Template)
		}
	}
	found := false
	for _, f := range floating {
		found = found || f == DefaultTagTemplate
	}
	if !found {
		t.Errorf("matrix.yaml's floating tags %q lack %q, the tag inject uses for one Ray version", floating, DefaultTagTemplate)
	}
	got, err := DefaultImage("", "2.46.0")
	if err != nil || got != DefaultRepository+":ray2.46.0" {
		t.Errorf("DefaultImage = %q, %v", got, err)
	}
	if _, err := DefaultImage("", "2.46"); err == nil {
		t.Error("DefaultImage accepted 2.46")
	}
	if SettingsPath != imagespec.SettingsPath {
		t.Errorf("inject.SettingsPath %q != imagespec.SettingsPath %q", SettingsPath, imagespec.SettingsPath)
	}
	if !strings.Contains(string(mustRead(t, "../matrix.yaml")), DashboardsSetting+":\n    - host: \""+ImageDashboard+"\"") {
		t.Errorf("matrix.yaml's settings no longer name %s for %s", ImageDashboard, DashboardsSetting)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRayVersionFromImageOrField(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"rayproject/ray:2.46.0-py312-gpu", "2.46.0"},
		{"rayproject/ray:2.46.0", "2.46.0"},
		{"localhost:5000/ray:2.9.3@sha256:" + strings.Repeat("a", 64), "2.9.3"},
		{"localhost:5000/ray", ""},
		{"rayproject/ray:nightly", ""},
	} {
		if got := rayVersionOfImage(tt.in); got != tt.want {
			t.Errorf("rayVersionOfImage(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// The image wins over rayVersion, with a warning.
	in := strings.Replace(plainCluster, "rayproject/ray:2.46.0", "rayproject/ray:2.47.1", 1)
	res, err := Apply(context.Background(), "f.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Output), ":ray2.47.1\n") || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "rayVersion 2.46.0 differs") {
		t.Errorf("warnings %q\n%s", res.Warnings, res.Output)
	}
	old := strings.ReplaceAll(plainCluster, "2.46.0", "2.38.0")
	res, err = Apply(context.Background(), "f.yaml", []byte(old))
	if err != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "Ray 2.38.0 has no debugpy-based debugger") {
		t.Errorf("old Ray: %v %q", err, res.Warnings)
	}
}

func TestRuntimeEnvDebugpy(t *testing.T) {
	tests := []struct {
		yaml       string
		has, known bool
	}{
		{`pip: ["debugpy>=1.8.0"]`, true, true},
		{`pip: ["debugpy"]`, true, true},
		{`pip: ["Debugpy==1.8.14"]`, true, true},
		{`pip: ["debugpy==1.6.3"]`, false, true},
		{`pip: ["debugpy<1.8"]`, false, true},
		{`pip: ["debugpy>=1.6,<1.8.0"]`, false, true},
		{`pip: ["debugpy<2"]`, true, true},
		{`pip: ["debugpy~=1.6"]`, true, true},
		{`pip: ["debugpy~=1.6.3"]`, false, true},
		{`pip: ["debugpy==1.7.*"]`, false, true},
		{`pip: ["debugpy==1.8.*"]`, true, true},
		{`pip: ["debugpy>1.8.0"]`, true, true},
		{`pip: ["debugpy!=1.8.0"]`, true, true},
		{`pip: ["debugpy<=1.8"]`, true, true},
		{`pip: ["debugpy<1.8.0rc1"]`, false, true},
		{`pip: ["debugpy>=1.9,<1.9.5"]`, true, true},
		{"pip: [\"debugpy>=1.8.0; python_version >= '3.9'\"]", true, true},
		{`pip: {packages: ["debugpy>=1.8.0"], pip_check: false}`, true, true},
		{`uv: ["debugpy"]`, true, true},
		{`pip: ["requests"]`, false, true},
		{`pip: ["debugpyx"]`, false, true},
		{`pip: requirements.txt`, false, false},
		{`conda: {dependencies: [python=3.12, {pip: ["debugpy"]}]}`, true, true},
		{`conda: my-env`, false, false},
		{`env_vars: {A: "1"}`, false, true},
	}
	for _, tt := range tests {
		var renv map[string]any
		if err := yamlUnmarshal(tt.yaml, &renv); err != nil {
			t.Fatal(err)
		}
		has, known := runtimeEnvHasDebugpy(renv)
		if has != tt.has || known != tt.known {
			t.Errorf("%s: has %v known %v, want %v %v", tt.yaml, has, known, tt.has, tt.known)
		}
	}
}

func TestRayDebugWarnings(t *testing.T) {
	job := `apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: j
spec:
  entrypoint: python x.py
  runtimeEnvYAML: |
    pip: ["debugpy>=1.8.0"]
    env_vars:
      RAY_DEBUG: legacy
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.46.0
            env:
            - {name: RAY_DEBUG, value: "1"}
`
	res, err := Apply(context.Background(), "f.yaml", []byte(job))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "spec.runtimeEnvYAML sets RAY_DEBUG=legacy: Ray uses the old pdb debugger") {
		t.Errorf("warnings %q", res.Warnings)
	}
	// A custom Ray image is not known to lack debugpy: no warning.
	custom := strings.NewReplacer(`    pip: ["debugpy>=1.8.0"]`+"\n", "", "RAY_DEBUG: legacy", `RAY_DEBUG: "1"`, "rayproject/ray:2.46.0", "me/ray-with-debugpy:2.46.0").Replace(job)
	if res, err := Apply(context.Background(), "f.yaml", []byte(custom)); err != nil || len(res.Warnings) != 0 {
		t.Errorf("custom image: %v %q", err, res.Warnings)
	}
}

// basicAuth answers 401 unless the request carries user:pass.
func basicAuth(h http.Handler, user, pass string) http.Handler {
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// TestResolveDigest resolves the default tag against a registry that needs
// the credentials of a docker config, as `docker login` writes it.
func TestResolveDigest(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(basicAuth(registry.New(registry.Logger(log.New(io.Discard, "", 0))), "alice", "s3cret"))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	repo := host + "/team/code-server-ray"
	img, err := testimage.RandomPlatformImage("amd64")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(repo + ":ray2.46.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: "alice", Password: "s3cret"})); err != nil {
		t.Fatal(err)
	}
	digest, _ := img.Digest()

	dir := t.TempDir()
	cfg := `{"auths":{"` + host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("alice:s3cret")) + `"}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	res, err := Apply(ctx, "f.yaml", []byte(plainCluster), WithRepository(repo), WithResolver(RegistryResolver{Timeout: 10 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	want := "image: " + repo + ":ray2.46.0@" + digest.String() + "\n"
	if !strings.Contains(string(res.Output), want) || len(res.Warnings) != 0 {
		t.Errorf("output lacks %q (warnings %q):\n%s", want, res.Warnings, res.Output)
	}

	// Without credentials the tag stays and a warning says why.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	res, err = Apply(ctx, "f.yaml", []byte(plainCluster), WithRepository(repo), WithResolver(RegistryResolver{Timeout: 10 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Output), "image: "+repo+":ray2.46.0\n") || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "keeping "+repo+":ray2.46.0 by tag") {
		t.Errorf("unauthenticated: warnings %q\n%s", res.Warnings, res.Output)
	}
}

func yamlUnmarshal(s string, v any) error { return yaml3.Unmarshal([]byte(s), v) }

// effectiveSecurity is what the kubelet applies to container ct of pod: the
// container's own securityContext fields, else the pod's.
func effectiveSecurity(pod *corev1.PodSpec, ct *corev1.Container) (uid int64, uidSet bool, nonRoot bool) {
	if p := pod.SecurityContext; p != nil {
		if p.RunAsUser != nil {
			uid, uidSet = *p.RunAsUser, true
		}
		if p.RunAsNonRoot != nil {
			nonRoot = *p.RunAsNonRoot
		}
	}
	if s := ct.SecurityContext; s != nil {
		if s.RunAsUser != nil {
			uid, uidSet = *s.RunAsUser, true
		}
		if s.RunAsNonRoot != nil {
			nonRoot = *s.RunAsNonRoot
		}
	}
	return uid, uidSet, nonRoot
}

// TestSidecarStartsAsRootInHardenedPods: whatever the pod's securityContext,
// the kubelet starts the sidecar as root (linuxserver's init), with the
// capabilities the init needs and no privilege escalation; runAsNonRoot
// (pod or Ray container) and a restricted namespace of the input warn.
func TestSidecarStartsAsRootInHardenedPods(t *testing.T) {
	const restrictedNS = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: secure\n  labels:\n    " + PodSecurityEnforceLabel + ": restricted\n---\n"
	const baselineNS = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: secure\n  labels:\n    " + PodSecurityEnforceLabel + ": baseline\n---\n"
	podCtx := func(ctx string) string {
		return strings.Replace(plainCluster, "        containers:\n", "        securityContext:\n"+ctx+"        containers:\n", 1)
	}
	rayCtx := func(ctx string) string { return plainCluster + "          securityContext:\n" + ctx }
	inNS := func(s string) string { return strings.Replace(s, "  name: c\n", "  name: c\n  namespace: secure\n", 1) }
	tests := []struct {
		name  string
		input string
		warn  []string // substrings of the one expected warning, if any
	}{
		{"no securityContext", plainCluster, nil},
		{"pod runAsUser", podCtx("          runAsUser: 1000\n          runAsGroup: 100\n          fsGroup: 100\n"), nil},
		{"pod runAsNonRoot", podCtx("          runAsNonRoot: true\n          runAsUser: 1000\n"),
			[]string{"the head pod sets securityContext.runAsNonRoot: true", PodSecurityEnforceLabel, "FailedToCreateHeadPod"}},
		{"Ray container runAsNonRoot", rayCtx("            runAsNonRoot: true\n"),
			[]string{"the head's Ray container sets securityContext.runAsNonRoot: true"}},
		{"restricted namespace", restrictedNS + inNS(plainCluster),
			[]string{"namespace secure has the label " + PodSecurityEnforceLabel + "=restricted", "baseline"}},
		{"baseline namespace", baselineNS + inNS(plainCluster), nil},
		{"restricted namespace, other namespace", restrictedNS + plainCluster, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Apply(context.Background(), "f.yaml", []byte(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			docs := splitDocuments(res.Output)
			obj, err := decodeStrict(docs[len(docs)-1])
			if err != nil {
				t.Fatal(err)
			}
			pod := &clusterSpec(obj).HeadGroupSpec.Template.Spec
			sc := &pod.Containers[len(pod.Containers)-1]
			uid, uidSet, nonRoot := effectiveSecurity(pod, sc)
			if !uidSet || uid != 0 || nonRoot {
				t.Errorf("the kubelet runs the sidecar with runAsUser %d (set %v), runAsNonRoot %v; want 0, set, false", uid, uidSet, nonRoot)
			}
			ctx := sc.SecurityContext
			if ctx == nil || ctx.AllowPrivilegeEscalation == nil || *ctx.AllowPrivilegeEscalation ||
				ctx.RunAsGroup == nil || *ctx.RunAsGroup != 0 || ctx.Capabilities == nil {
				t.Fatalf("sidecar securityContext %+v: want runAsGroup 0, allowPrivilegeEscalation false, capabilities", ctx)
			}
			var caps []string
			for _, c := range ctx.Capabilities.Add {
				caps = append(caps, string(c))
			}
			if d := cmp.Diff([]string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID"}, caps); d != "" || len(ctx.Capabilities.Drop) != 0 {
				t.Errorf("capabilities add (-want +got):\n%s drop %v", d, ctx.Capabilities.Drop)
			}
			if len(res.Warnings) != min(len(tt.warn), 1) {
				t.Fatalf("warnings %q, want %d", res.Warnings, min(len(tt.warn), 1))
			}
			for _, w := range tt.warn {
				if !strings.Contains(res.Warnings[0], w) {
					t.Errorf("warning %q lacks %q", res.Warnings[0], w)
				}
			}
		})
	}
}
