package inject

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	yaml3 "gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/internal/testutil/kubetest"
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
			[]string{"f.yaml:11: document 1 (RayCluster c): spec.headGroupSpec.template.spec.containers is a flow sequence"}},
		{"port taken", plainCluster + "          ports:\n          - containerPort: 8443\n", nil,
			[]string{"port 8443 is already used", "--port"}},
		{"no Ray version", strings.NewReplacer(`  rayVersion: "2.46.0"`+"\n", "", "rayproject/ray:2.46.0", "me/ray:custom").Replace(plainCluster), nil,
			[]string{`no Ray version: spec.rayVersion is not set and the Ray image "me/ray:custom" of spec.headGroupSpec.template.spec has no X.Y.Z tag; pass the sidecar image (--image)`}},
		// A RayJob's rayVersion is under spec.rayClusterSpec, not in
		// the head pod template.
		{"no Ray version in a RayJob", "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: j\nspec:\n  entrypoint: python x.py\n  rayClusterSpec:\n    headGroupSpec:\n      template:\n        spec:\n          containers:\n          - name: ray-head\n            image: me/ray:custom\n", nil,
			[]string{`no Ray version: spec.rayClusterSpec.rayVersion is not set and the Ray image "me/ray:custom" of spec.rayClusterSpec.headGroupSpec.template.spec has no X.Y.Z tag`}},
		{"no Ray version in Helm values", "head:\n  rayStartParams: {}\nimage:\n  repository: me/ray\n  tag: custom\n", []Option{WithHelmValues()},
			[]string{`no Ray version: head.rayVersion is not set and the Ray image "me/ray:custom" of head has no X.Y.Z tag`}},
		{"alias", "x: &t\n  spec:\n    containers: [{name: a}]\n" + strings.Replace(strings.Replace(plainCluster, "    template:\n      spec:\n        containers:\n        - name: ray-head\n          image: rayproject/ray:2.46.0\n", "    template: *t\n", 1), "", "", 1), nil,
			[]string{"spec.headGroupSpec.template is an alias (*t)"}},
		{"Helm values without head", "image:\n  tag: 2.46.0\n", []Option{WithHelmValues()}, []string{"no head group"}},
		{"empty", "", nil, []string{"f.yaml: no ray.io/v1 RayJob, RayCluster or RayService: the input is empty (no YAML document, only blank lines or comments)"}},
		{"only comments", "# nothing\n---\n# here\n", nil, []string{"f.yaml: no ray.io/v1 RayJob, RayCluster or RayService: the input is empty"}},
		{"Helm values without --helm-values", "image:\n  tag: 2.46.0\nhead:\n  rayStartParams: {}\nworker:\n  replicas: 1\n", nil,
			[]string{"no ray.io/v1 RayJob, RayCluster or RayService in 1 document(s): document 1 looks like a values file of KubeRay's ray-cluster Helm chart (a head: mapping, no kind): pass --helm-values"}},
		{"a RayCluster with --helm-values", plainCluster, []Option{WithHelmValues()},
			[]string{"document 1 is a ray.io/v1 RayCluster (kind and apiVersion), not a values file of KubeRay's ray-cluster Helm chart: drop --helm-values"}},
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
		{WithPasswordSecret("pw.", "password"), `password secret name "pw."`},
	}
	for _, tt := range tests {
		_, err := Apply(context.Background(), "f.yaml", []byte(plainCluster), tt.opt)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}

// TestSecretNamesAreSubdomains: Secret names are DNS subdomains, as
// Kubernetes takes them (dots allowed), not DNS labels.
func TestSecretNamesAreSubdomains(t *testing.T) {
	res, err := Apply(context.Background(), "f.yaml", []byte(plainCluster), WithImage("example.com/cs:1"),
		WithPasswordSecret("code-server.pw", "password"), WithImagePullSecret("regcred.hub"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: code-server.pw", "name: regcred.hub"} {
		if !strings.Contains(string(res.Output), want) {
			t.Errorf("output lacks %q:\n%s", want, res.Output)
		}
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
	obj, err := kubetest.DecodeStrict(res.Output)
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
	obj, err = kubetest.DecodeStrict(again.Output)
	if err != nil {
		t.Fatal(err)
	}
	pod = clusterSpec(obj).HeadGroupSpec.Template.Spec
	if len(pod.Containers) != 2 || len(pod.Volumes) != 1 || len(pod.Containers[0].VolumeMounts) != 1 || len(pod.ImagePullSecrets) != 0 {
		t.Errorf("after re-injecting: %d containers, %d volumes, %d Ray mounts, %d pull secrets; want 2, 1, 1, 0:\n%s",
			len(pod.Containers), len(pod.Volumes), len(pod.Containers[0].VolumeMounts), len(pod.ImagePullSecrets), again.Output)
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
			res, err := Apply(context.Background(), "f.yaml", []byte(in))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(in, "\r\n") && strings.Count(string(res.Output), "\n") != strings.Count(string(res.Output), "\r\n") {
				t.Errorf("mixed line endings:\n%q", res.Output)
			}
			docs := splitDocuments(res.Output)
			if len(docs) != 1 {
				t.Fatalf("%d documents, want the cluster alone:\n%s", len(docs), res.Output)
			}
			for _, d := range docs {
				if _, err := kubetest.DecodeStrict(d); err != nil {
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

// TestLineEndingsKept: the lines inject does not touch keep their own
// endings, the lines it adds take the document's (the more frequent), and
// Remove gives back the input byte for byte.
func TestLineEndingsKept(t *testing.T) {
	plain, err := os.ReadFile("testdata/rayjob-plain.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lf := strings.SplitAfter(string(plain), "\n")
	// mixed ends every third line with \r\n (else \n) or, with crlf, every
	// third with \n (else \r\n).
	mixed := func(crlf bool) string {
		var b strings.Builder
		for i, l := range lf {
			if (i%3 == 0) != crlf && strings.HasSuffix(l, "\n") {
				l = strings.TrimSuffix(l, "\n") + "\r\n"
			}
			b.WriteString(l)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, in, eol string
	}{
		{"crlf RayJob", strings.ReplaceAll(string(plain), "\n", "\r\n"), "\r\n"},
		{"crlf RayJob without a final line break", strings.TrimSuffix(strings.ReplaceAll(string(plain), "\n", "\r\n"), "\r\n"), "\r\n"},
		{"mostly crlf", mixed(true), "\r\n"},
		{"mostly lf", mixed(false), "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Apply(context.Background(), "job.yaml", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			// Every input line, with its ending, is in the output; the
			// rest of the output was added and ends with tc.eol.
			left := map[string]int{}
			for _, l := range strings.SplitAfter(tc.in, "\n") {
				left[l]++
			}
			out := strings.SplitAfter(string(res.Output), "\n")
			for i, l := range out {
				if left[l] > 0 {
					left[l]--
					continue
				}
				if i < len(out)-1 && !strings.HasSuffix(l, tc.eol) || tc.eol == "\n" && strings.HasSuffix(l, "\r\n") {
					t.Errorf("added line %d %q does not end with %q", i+1, l, tc.eol)
				}
			}
			for l, n := range left {
				if n > 0 {
					t.Errorf("input line %q (%d of them) is not in the output", l, n)
				}
			}
			removed, err := Remove("job.yaml", res.Output)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.in, string(removed.Output)); diff != "" {
				t.Errorf("Remove(Apply(in)) differs from in (-in +removed):\n%s", diff)
			}
		})
	}
}

// TestYAMLDirective: a %YAML 1.1 or 1.2 directive is kept byte for byte
// with the document it precedes; another version is an error naming the
// file and line.
func TestYAMLDirective(t *testing.T) {
	plain, err := os.ReadFile("testdata/rayjob-plain.yaml")
	if err != nil {
		t.Fatal(err)
	}
	job := string(plain)
	for _, tc := range []struct {
		name, in string
		docs     int
	}{
		{"1.2", "%YAML 1.2\n---\n" + job, 1},
		{"1.1", "%YAML 1.1\n---\n" + job, 1},
		{"comment and crlf", "# a job\r\n%YAML 1.2 # the version\r\n--- \r\n" + strings.ReplaceAll(job, "\n", "\r\n"), 1},
		{"after a document end", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n...\n%YAML 1.2\n---\n" + job, 2},
		// A UTF-8 byte order mark starts the stream (issue 35 item 8).
		{"BOM then 1.2", "\ufeff%YAML 1.2\n---\n" + job, 1},
		{"BOM then 1.1", "\ufeff%YAML 1.1\n---\n" + job, 1},
		{"BOM, comment, 1.2, crlf", "\ufeff# a job\r\n%YAML 1.2\r\n---\r\n" + strings.ReplaceAll(job, "\n", "\r\n"), 1},
		{"BOM, no directive", "\ufeff" + job, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Apply(context.Background(), "job.yaml", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Targets) != 1 || res.Targets[0].Document != tc.docs {
				t.Errorf("targets %+v, want the RayJob as document %d", res.Targets, tc.docs)
			}
			head := tc.in[:strings.Index(tc.in, "# A plain RayJob")]
			if !strings.HasPrefix(string(res.Output), head) || !strings.Contains(string(res.Output), "- name: code-server") {
				t.Errorf("output does not keep %q and add the sidecar:\n%s", head, res.Output)
			}
			removed, err := Remove("job.yaml", res.Output)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.in, string(removed.Output)); diff != "" {
				t.Errorf("Remove(Apply(in)) (-in +removed):\n%s", diff)
			}
		})
	}
	_, err = Apply(context.Background(), "job.yaml", []byte("# v2\n%YAML 2.0\n---\n"+job))
	var e *Error
	if !errors.As(err, &e) || e.File != "job.yaml" || e.Line != 2 || !strings.Contains(err.Error(), "%YAML 2.0: inject reads YAML 1.1 and 1.2") {
		t.Errorf("%%YAML 2.0: %v, want an error at job.yaml:2 naming the version", err)
	}
	_, err = Apply(context.Background(), "job.yaml", []byte("\ufeff%YAML 2.0\n---\n"+job))
	if !errors.As(err, &e) || e.File != "job.yaml" || e.Line != 1 || !strings.Contains(err.Error(), "%YAML 2.0: inject reads YAML 1.1 and 1.2") {
		t.Errorf("BOM and %%YAML 2.0: %v, want an error at job.yaml:1 naming the version", err)
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
	if !strings.HasSuffix(string(res.Output), "imagePullSecrets:\n- name: regcred\n...\n") {
		t.Errorf("imagePullSecrets not added before the document end:\n%s", res.Output)
	}
	if removed, err := Remove("v.yaml", res.Output); err != nil || string(removed.Output) != in {
		t.Errorf("Remove: %v\n%s", err, removed.Output)
	}
}

// TestPasswordSecret: the Secret is one document for the namespace of the
// Ray documents; an existing Secret's password is kept unless rotated;
// any other content of the file is never replaced.
func TestPasswordSecret(t *testing.T) {
	first, err := PasswordSecret("pw.yaml", nil, "ml")
	if err != nil {
		t.Fatal(err)
	}
	docs := splitDocuments(first.Doc)
	if len(docs) != 1 {
		t.Fatalf("%d documents, want 1:\n%s", len(docs), first.Doc)
	}
	obj, err := kubetest.DecodeStrict(first.Doc)
	if err != nil {
		t.Fatal(err)
	}
	sec, ok := obj.(*corev1.Secret)
	if !ok || sec.Name != DefaultSecretName || sec.Namespace != "ml" || len(sec.StringData[DefaultSecretKey]) < 32 || first.Kept {
		t.Fatalf("Secret %+v kept=%v: want %s in ml with a 32-character %s", obj, first.Kept, DefaultSecretName, DefaultSecretKey)
	}
	pw := sec.StringData[DefaultSecretKey]
	if !strings.Contains(string(first.Doc), "kubectl apply --server-side -f pw.yaml") {
		t.Errorf("the Secret does not say how to apply it:\n%s", first.Doc)
	}

	password := func(doc []byte) string {
		t.Helper()
		obj, err := kubetest.DecodeStrict(doc)
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*corev1.Secret).StringData[DefaultSecretKey]
	}
	again, err := PasswordSecret("pw.yaml", first.Doc, "ml")
	if err != nil || !again.Kept || password(again.Doc) != pw || string(again.Doc) != string(first.Doc) {
		t.Errorf("again: kept=%v err=%v\n%s", again != nil && again.Kept, err, again.Doc)
	}
	// The Secret as the API server shows it (data, base64) keeps it too.
	fromCluster := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: code-server-password\n  namespace: ml\ndata:\n  password: " + base64.StdEncoding.EncodeToString([]byte("from-the-cluster")) + "\n"
	if got, err := PasswordSecret("pw.yaml", []byte(fromCluster), "ml"); err != nil || password(got.Doc) != "from-the-cluster" {
		t.Errorf("data: %v", err)
	}
	rotated, err := PasswordSecret("pw.yaml", first.Doc, "ml", WithRotatePassword())
	if err != nil || rotated.Kept || password(rotated.Doc) == pw {
		t.Errorf("rotated: kept=%v err=%v", rotated != nil && rotated.Kept, err)
	}
	other, err := PasswordSecret("pw.yaml", first.Doc, "ml", WithPasswordSecret("other", "pw"))
	if err == nil || !strings.Contains(err.Error(), "pw.yaml holds v1 Secret code-server-password, not only the v1 Secret other: refusing to replace it") {
		t.Errorf("another Secret's file: %v\n%v", err, other)
	}
	if _, err := PasswordSecret("job.yaml", []byte(plainCluster), ""); err == nil || !strings.Contains(err.Error(), "job.yaml holds ray.io/v1 RayCluster c") {
		t.Errorf("a manifest as the Secret's file: %v", err)
	}

	// One namespace per Secret.
	two := strings.Replace(plainCluster, "  name: c\n", "  name: c\n  namespace: a\n", 1) + "---\n" + strings.Replace(plainCluster, "  name: c\n", "  name: d\n  namespace: b\n", 1)
	res, err := Apply(context.Background(), "f.yaml", []byte(two))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Namespace(); err == nil || !strings.Contains(err.Error(), `namespaces ["a" "b"]`) {
		t.Errorf("two namespaces: %v", err)
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
	for _, want := range []string{DefaultTagTemplate, MinorTagTemplate} {
		if !slices.Contains(floating, want) {
			t.Errorf("matrix.yaml's floating tags %q lack %q, a tag inject uses", floating, want)
		}
	}
	if got, err := MinorImage("", "2.46.0"); err != nil || got != DefaultRepository+":ray2.46" {
		t.Errorf("MinorImage = %q, %v", got, err)
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
	if !strings.Contains(string(res.Output), ":ray2.47\n") || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "rayVersion 2.46.0 differs") {
		t.Errorf("warnings %q\n%s", res.Warnings, res.Output)
	}
	// Ray older than the debugger: no image is published for it (the
	// matrix builds Ray >= MinRay), so the default image is an error
	// naming the oldest Ray with one; an image given is kept, with a
	// warning.
	old := strings.ReplaceAll(plainCluster, "2.46.0", "2.38.0")
	if _, err = Apply(context.Background(), "f.yaml", []byte(old)); err == nil ||
		!strings.Contains(err.Error(), "Ray 2.38.0 has no debugpy-based debugger: the oldest Ray with the Ray Distributed Debugger is 2.39.0, and no sidecar image is published for older ones") {
		t.Errorf("old Ray, default image: %v", err)
	}
	res, err = Apply(context.Background(), "f.yaml", []byte(old), WithImage("registry.example/ide:1"))
	if err != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "Ray 2.38.0 has no debugpy-based debugger (Ray >= 2.39.0)") {
		t.Errorf("old Ray, --image: %v %q", err, res.Warnings)
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
  submissionMode: InteractiveMode
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
	host := testutil.Serve(t, basicAuth(testutil.RegistryHandler(), "alice", "s3cret"))
	repo := host + "/team/code-server-ray"
	img, err := imagetest.RandomPlatformImage("amd64")
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
	reg := RegistryResolver{Timeout: 10 * time.Second}
	res, err := Apply(ctx, "f.yaml", []byte(plainCluster), WithRepository(repo), WithTagLister(reg), WithResolver(reg))
	if err != nil {
		t.Fatal(err)
	}
	want := "image: " + repo + ":ray2.46.0@" + digest.String() + "\n"
	if !strings.Contains(string(res.Output), want) || len(res.Warnings) != 0 {
		t.Errorf("output lacks %q (warnings %q):\n%s", want, res.Warnings, res.Output)
	}

	// Without credentials the floating minor tag stays, and a note and a
	// warning say why.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	res, err = Apply(ctx, "f.yaml", []byte(plainCluster), WithRepository(repo), WithTagLister(reg), WithResolver(reg))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Output), "image: "+repo+":ray2.46\n") || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "keeping "+repo+":ray2.46 by tag") {
		t.Errorf("unauthenticated: warnings %q\n%s", res.Warnings, res.Output)
	}
	if len(res.Unchecked) != 1 || !strings.Contains(res.Unchecked[0], "listing the tags of "+repo) {
		t.Errorf("unauthenticated: unchecked %q", res.Unchecked)
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
			// The binary ships without docs/: the warning links the page.
			[]string{"the head pod sets securityContext.runAsNonRoot: true", PodSecurityEnforceLabel, "FailedToCreateHeadPod", "See https://github.com/imagectl/imagectl/blob/main/docs/inject.md#hardened-pods"}},
		{"Ray container runAsNonRoot", rayCtx("            runAsNonRoot: true\n"),
			[]string{"the head's Ray container sets securityContext.runAsNonRoot: true"}},
		{"restricted namespace", restrictedNS + inNS(plainCluster),
			[]string{"namespace secure has the label " + PodSecurityEnforceLabel + "=restricted", "baseline", "(see https://github.com/imagectl/imagectl/blob/main/docs/inject.md#hardened-pods)"}},
		{"baseline namespace", baselineNS + inNS(plainCluster), nil},
		// The API server admits it there (tests/kube TestPodSecurity).
		{"baseline namespace, Ray container runAsNonRoot", baselineNS + inNS(rayCtx("            runAsNonRoot: true\n")), nil},
		{"restricted namespace, Ray container runAsNonRoot", restrictedNS + inNS(rayCtx("            runAsNonRoot: true\n")),
			[]string{"namespace secure has the label " + PodSecurityEnforceLabel + "=restricted"}},
		{"restricted namespace, other namespace", restrictedNS + plainCluster, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Apply(context.Background(), "f.yaml", []byte(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			docs := splitDocuments(res.Output)
			obj, err := kubetest.DecodeStrict(docs[len(docs)-1])
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
			if d := cmp.Diff([]string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID"}, caps); d != "" {
				t.Errorf("capabilities add (-want +got):\n%s", d)
			}
			if d := cmp.Diff([]corev1.Capability{"ALL"}, ctx.Capabilities.Drop); d != "" {
				t.Errorf("capabilities drop (-want +got):\n%s", d)
			}
			if ctx.SeccompProfile == nil || ctx.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("seccompProfile %+v, want RuntimeDefault", ctx.SeccompProfile)
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

// TestDefaultImageChoice: with the tags of an in-process registry, the
// sidecar gets the build for the manifest's Ray patch, else the newest
// build (by number) for its minor, and an error when the minor has none;
// offline or without a lookup, the floating minor tag. A note says which.
func TestDefaultImageChoice(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(testutil.RegistryHandler())
	defer srv.Close()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	repo := strings.TrimPrefix(srv.URL, "http://") + "/team/code-server-ray"
	img, err := imagetest.RandomPlatformImage("amd64")
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"ray2.47.1", "ray2.47", "ray2.46.2", "ray2.46.10", "ray2.46", "ray2.9.3", "latest", "4.101.2-ray2.47.1-py3.12", "4.101.2-ray2.47.1-py3.12-0123456789ab", "ray2.48rc1"} {
		ref, err := name.ParseReference(repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
	reg := RegistryResolver{Timeout: 10 * time.Second}
	tests := []struct {
		ray    string
		lister TagLister
		image  string // the tag chosen
		note   string
		err    string
	}{
		{"2.47.1", reg, "ray2.47.1", "the published build for Ray 2.47.1", ""},
		{"2.47.0", reg, "ray2.47.1", "no build for Ray 2.47.0 is published in " + repo + "; ray2.47.1 is the newest build for Ray 2.47", ""},
		{"2.46.0", reg, "ray2.46.10", "no build for Ray 2.46.0 is published in " + repo + "; ray2.46.10 is the newest build for Ray 2.46", ""},
		{"2.46.11", reg, "ray2.46.10", "no build for Ray 2.46.11 is published", ""},
		{"2.48.0", reg, "", "", "no build for Ray 2.48 (no tag ray2.48.*) is published in " + repo + " (newest Ray minors there: 2.47, 2.46, 2.9): pass the sidecar image (--image)"},
		{"2.47.0", nil, "ray2.47", "not checked: the tags were not looked up; ray2.47 is the floating tag of the newest build for Ray 2.47", ""},
	}
	for _, tt := range tests {
		t.Run(tt.ray, func(t *testing.T) {
			in := strings.ReplaceAll(plainCluster, "2.46.0", tt.ray)
			opts := []Option{WithRepository(repo)}
			if tt.lister != nil {
				opts = append(opts, WithTagLister(tt.lister))
			}
			res, err := Apply(ctx, "f.yaml", []byte(in+"---\n"+strings.Replace(in, "name: c\n", "name: d\n", 1)), opts...)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, tgt := range res.Targets {
				if tgt.Image != repo+":"+tt.image {
					t.Errorf("%s: image %s, want %s:%s", tgt, tgt.Image, repo, tt.image)
				}
			}
			// A tag the registry was not asked about is a warning, once
			// per Ray version; a checked one a note.
			got, sep := res.Notes, ": "
			if tt.lister == nil {
				got, sep = res.Unchecked, " "
				if len(res.Notes) != 0 || len(res.Warnings) != 0 {
					t.Errorf("notes %q, warnings %q; want none (the unchecked tag is Unchecked)", res.Notes, res.Warnings)
				}
			}
			if len(got) != 1 || !strings.Contains(got[0], "sidecar image "+repo+":"+tt.image+sep+tt.note) {
				t.Errorf("notes %q, unchecked %q; want one with %q", res.Notes, res.Unchecked, tt.note)
			}
		})
	}

	// Offline: the registry is gone; the floating minor tag, and the note
	// names the failure.
	srv.Close()
	res, err := Apply(ctx, "f.yaml", []byte(strings.ReplaceAll(plainCluster, "2.46.0", "2.47.0")), WithRepository(repo), WithTagLister(RegistryResolver{Timeout: 5 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Targets[0].Image != repo+":ray2.47" || len(res.Notes) != 0 || len(res.Unchecked) != 1 || !strings.Contains(res.Unchecked[0], "sidecar image "+repo+":ray2.47 not checked: listing the tags of "+repo) ||
		!strings.Contains(res.Unchecked[0], "ray2.47 is the floating tag of the newest build for Ray 2.47") {
		t.Errorf("offline: image %s, notes %q, unchecked %q", res.Targets[0].Image, res.Notes, res.Unchecked)
	}

	// Interrupted (Ctrl-C) while listing: an error, not the offline
	// fallback, so inject -i writes nothing.
	cctx, cancel := context.WithCancel(ctx)
	_, err = Apply(cctx, "f.yaml", []byte(strings.ReplaceAll(plainCluster, "2.46.0", "2.47.0")), WithRepository(repo), WithTagLister(cancellingLister{cancel}))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted tag listing: err = %v, want context.Canceled", err)
	}
}

// cancellingLister is interrupted while it lists, as by Ctrl-C.
type cancellingLister struct{ cancel context.CancelFunc }

func (l cancellingLister) ListTags(ctx context.Context, repo string) ([]string, error) {
	l.cancel()
	<-ctx.Done()
	return nil, fmt.Errorf("listing the tags of %s: %w", repo, ctx.Err())
}

// TestAuthAndNetworkPolicyWarnings: KubeRay v1.7.0's own samples of token
// authentication (authOptions, and RAY_AUTH_MODE set by hand) each get a
// warning saying what inject did for it (TestTokenAuthSidecar checks what),
// and those of spec.networkPolicy one naming what will not work and why.
func TestAuthAndNetworkPolicyWarnings(t *testing.T) {
	const authDid = "and the sidecar runs a loopback proxy on 127.0.0.1:8266 that adds it to the Ray Distributed Debugger extension's requests to the dashboard at 127.0.0.1:8265"
	tests := []struct {
		file  string
		edit  func(string) string
		warns [][]string // substrings of each expected warning
	}{
		{"ray-cluster.auth.yaml", nil, [][]string{{"spec.authOptions.mode is token (KubeRay token authentication): inject mounts the token from Secret \"ray-cluster-with-auth\"", authDid}}},
		{"ray-cluster.auth.yaml", func(s string) string { return strings.Replace(s, "mode: token", "mode: disabled", 1) }, nil},
		{"ray-cluster.auth-manual.yaml", nil, [][]string{{"the head's Ray container sets RAY_AUTH_MODE=token (Ray token authentication): inject mounts the token from Secret \"ray-cluster-with-auth\"", authDid}}},
		{"ray-cluster.network-policy-deny-all.yaml", nil, [][]string{{
			"spec.networkPolicy (mode DenyAll): ", "the sidecar in the head pod still reaches debugpy on the head and the workers",
			"code-server (port 8443) is reachable only through kubectl port-forward",
			"a debugger running outside the RayCluster cannot connect to the random port of a paused task's debugpy",
			"a runtime env that installs debugpy from PyPI fails",
		}}},
		{"ray-cluster.network-policy-deny-all.yaml", func(s string) string { return strings.Replace(s, "mode: DenyAll\n", "mode: DenyAllEgress\n", 1) },
			[][]string{{"(mode DenyAllEgress)", "installs debugpy from PyPI fails"}}},
		{"ray-cluster.network-policy-deny-all.yaml", func(s string) string { return strings.Replace(s, "    mode: DenyAll\n", "", 1) },
			[][]string{{"(mode DenyAll)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			in := string(mustRead(t, filepath.Join("testdata", "kuberay-samples", tt.file)))
			if tt.edit != nil {
				in = tt.edit(in)
			}
			res, err := Apply(context.Background(), tt.file, []byte(in))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) != len(tt.warns) {
				t.Fatalf("warnings %q, want %d", res.Warnings, len(tt.warns))
			}
			for i, subs := range tt.warns {
				for _, sub := range subs {
					if !strings.Contains(res.Warnings[i], sub) {
						t.Errorf("warning %q lacks %q", res.Warnings[i], sub)
					}
				}
			}
			if strings.Contains(tt.file, "network-policy") && len(tt.warns) == 1 && strings.Contains(tt.warns[0][0], "DenyAllEgress") &&
				strings.Contains(res.Warnings[0], "port-forward") {
				t.Errorf("DenyAllEgress warns about ingress: %q", res.Warnings[0])
			}
		})
	}
}

// TestAutoscalerSharesRayTmp: with enableInTreeAutoscaling, a /tmp/ray
// volume of the Ray container that is not named ray-logs gets a warning
// (KubeRay gives its autoscaler a ray-logs of its own); inject's own volume
// is ray-logs, so no warning.
func TestAutoscalerSharesRayTmp(t *testing.T) {
	auto := strings.Replace(plainCluster, "  rayVersion:", "  enableInTreeAutoscaling: true\n  rayVersion:", 1)
	mounted := func(volume string) string {
		return auto + "          volumeMounts:\n          - name: " + volume + "\n            mountPath: /tmp/ray\n        volumes:\n        - name: " + volume + "\n          emptyDir: {}\n"
	}
	chart := string(mustRead(t, filepath.Join("testdata", "ray-cluster-chart", "v1.7.0", "values.yaml")))
	tests := []struct {
		name, input string
		helm        bool
		warn        string
	}{
		{"inject's volume", auto, false, ""},
		{"the user's ray-logs", mounted("ray-logs"), false, ""},
		{"the user's other volume", mounted("tmp"), false,
			`spec.enableInTreeAutoscaling is true and the Ray container mounts /tmp/ray from the volume "tmp": KubeRay mounts the volume named "ray-logs" at /tmp/ray in its autoscaler container`},
		{"no autoscaler", mounted("tmp"), false, ""},
		{"chart log-volume", strings.Replace(chart, "head:\n", "head:\n  enableInTreeAutoscaling: true\n", 1), true,
			`head.enableInTreeAutoscaling is true and the Ray container mounts /tmp/ray from the volume "log-volume"`},
	}
	tests[3].input = strings.Replace(tests[3].input, "  enableInTreeAutoscaling: true\n", "", 1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []Option
			if tt.helm {
				opts = append(opts, WithHelmValues())
			}
			res, err := Apply(context.Background(), "f.yaml", []byte(tt.input), opts...)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.warn == "" && len(res.Warnings) != 0:
				t.Errorf("warnings %q, want none", res.Warnings)
			case tt.warn != "" && (len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], tt.warn)):
				t.Errorf("warnings %q, want one with %q", res.Warnings, tt.warn)
			}
			if !tt.helm {
				obj, err := kubetest.DecodeStrict(res.Output)
				if err != nil {
					t.Fatal(err)
				}
				pod := clusterSpec(obj).HeadGroupSpec.Template.Spec
				for _, ct := range pod.Containers {
					if ct.VolumeMounts[len(ct.VolumeMounts)-1].MountPath != RayTmp {
						t.Errorf("container %s: mounts %+v", ct.Name, ct.VolumeMounts)
					}
				}
				if tt.name == "inject's volume" && pod.Containers[1].VolumeMounts[0].Name != "ray-logs" {
					t.Errorf("inject's /tmp/ray volume is %q, want ray-logs", pod.Containers[1].VolumeMounts[0].Name)
				}
			}
		})
	}
}
