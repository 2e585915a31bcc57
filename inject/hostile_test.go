package inject

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/imagectl/imagectl/internal/testutil"
)

// clusterWith is a RayCluster whose head pod template is head (indented
// for "    template:") and whose workerGroupSpecs are workers.
func clusterWith(head, workers string) string {
	return `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: c
spec:
  rayVersion: "2.46.0"
  headGroupSpec:
    rayStartParams: {}
` + head + `  workerGroupSpecs:
` + workers
}

// TestAnchorsRefused: an anchor on or in the head pod template (a worker
// group may reuse it), an alias or a merge key in it is refused with the
// line, so the sidecar never reaches a worker pod.
func TestAnchorsRefused(t *testing.T) {
	sharedTemplate := clusterWith(`    template: &shared
      spec:
        containers:
        - name: ray
          image: rayproject/ray:2.46.0
`, `  - groupName: w
    rayStartParams: {}
    template: *shared
`)
	sharedContainers := clusterWith(`    template:
      spec:
        containers: &cs
        - name: ray
          image: rayproject/ray:2.46.0
`, `  - groupName: w
    rayStartParams: {}
    template:
      spec:
        containers: *cs
`)
	helmMerge := `image:
  tag: 2.46.0
head: &h
  rayStartParams: {}
worker: {<<: *h, groupName: w}
`
	helmHeadMerges := `image:
  tag: 2.46.0
base: &b
  sidecarContainers:
  - name: other
    image: busybox
head:
  <<: *b
  rayStartParams: {}
`
	tests := []struct {
		name string
		in   string
		opts []Option
		want string
	}{
		{"head template anchor reused by a worker group", sharedTemplate, nil, "f.yaml:9: document 1 (RayCluster c): the anchor &shared in the head pod template: another place may reuse it"},
		{"anchor inside the head template", sharedContainers, nil, "f.yaml:11: document 1 (RayCluster c): the anchor &cs in the head pod template"},
		{"Helm head anchor merged into worker", helmMerge, []Option{WithHelmValues()}, "f.yaml:3: document 1 (Helm values): the anchor &h in head"},
		{"Helm head with a merge key", helmHeadMerges, []Option{WithHelmValues()}, "f.yaml:8: document 1 (Helm values): the merge key <<: in head"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Apply(context.Background(), "f.yaml", []byte(tt.in), append([]Option{WithImage("example.com/cs:1")}, tt.opts...)...)
			if err == nil {
				t.Fatalf("Apply accepted it:\n%s", res.Output)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q, want it to start with %q", err, tt.want)
			}
		})
	}
}

// TestDuplicateKeysRefused: a head template with two spec: keys (the API
// server keeps the last, inject would edit the first) is refused with the
// file and line of the second.
func TestDuplicateKeysRefused(t *testing.T) {
	in := clusterWith(`    template:
      spec:
        containers:
        - name: ray
          image: rayproject/ray:2.46.0
      spec:
        containers:
        - name: ray
          image: rayproject/ray:2.46.0
`, "  - groupName: w\n    rayStartParams: {}\n")
	_, err := Apply(context.Background(), "f.yaml", []byte(in), WithImage("example.com/cs:1"))
	want := `f.yaml:14: document 1 (RayCluster c): key "spec" given twice in one mapping (first at line 10 of the document)`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestRemoveTakesOutOnlyTheRecord: Remove takes out what the record
// lists; a Ray container, a worker group or a line of another document
// that carries the old marker comment stays.
func TestRemoveTakesOutOnlyTheRecord(t *testing.T) {
	const oldMarker = "# added by imagectl inject"
	in := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: mine\nstringData:\n  token: abc " + oldMarker + "\n  other: def\n---\n" +
		clusterWith(`    template:
      spec:
        containers:
        - name: ray-head `+oldMarker+`
          image: rayproject/ray:2.46.0
`, `  - groupName: w `+oldMarker+`
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.46.0
`)
	plain, err := Remove("f.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, string(plain.Output)); d != "" || plain.Changed {
		t.Errorf("Remove of a manifest nothing was injected into changed it (-in +out):\n%s", d)
	}
	res, err := Apply(context.Background(), "f.yaml", []byte(in), WithImage("example.com/cs:1"))
	if err != nil {
		t.Fatal(err)
	}
	removed, err := Remove("f.yaml", res.Output)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, string(removed.Output)); d != "" {
		t.Errorf("Remove after Apply (-in +out):\n%s", d)
	}

	// A record that also names the Ray container is refused, not followed.
	own := `{"list":"containers","name":"code-server","how":"appended"}`
	forged := strings.Replace(string(res.Output), own, own+`,{"list":"containers","name":"ray-head","how":"appended"}`, 1)
	if forged == string(res.Output) {
		t.Fatalf("the record is not as expected:\n%s", res.Output)
	}
	if _, err := Remove("f.yaml", []byte(forged)); err == nil || !strings.Contains(err.Error(), `names the sidecar "ray-head"`) {
		t.Errorf("Remove of a record naming the Ray container: %v", err)
	}
}

// TestValuesAlwaysValidYAML: whatever a value inject writes holds, the
// output parses and holds that value; what cannot be valid input is an
// error naming it.
func TestValuesAlwaysValidYAML(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		opts []Option
		want string
	}{
		{"newline in --image", []Option{WithImage("example.com/cs:1\n  evil: x")}, "invalid option: image \"example.com/cs:1\\n  evil: x\": expected an image reference"},
		{"newline in --repository", []Option{WithRepository("example.com/cs\n  evil: x")}, "invalid option: repository \"example.com/cs\\n  evil: x\": expected an image repository"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Apply(ctx, "f.yaml", []byte(plainCluster), tt.opts...)
			if !errors.Is(err, ErrInvalidOption) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}

	port := strings.Replace(plainCluster, "rayStartParams: {}", "rayStartParams:\n      dashboard-port: \"8265\\n      evil: x\"", 1)
	_, err := Apply(ctx, "f.yaml", []byte(port), WithImage("example.com/cs:1"))
	want := `f.yaml:9: document 1 (RayCluster c): spec.headGroupSpec.rayStartParams.dashboard-port "8265\n      evil: x": expected a port number`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("dashboard-port: error %v, want %q", err, want)
	}

	// A runAsUser string with a newline and quotes goes into PUID as it is,
	// as valid YAML.
	uid := "1000\nevil: x"
	odd := strings.Replace(plainCluster, "        containers:\n", "        securityContext:\n          runAsUser: "+strings.TrimSpace(scalarTextDQ(uid))+"\n        containers:\n", 1)
	res, err := Apply(ctx, "f.yaml", []byte(odd), WithImage("example.com/cs:1"))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Spec struct {
			HeadGroupSpec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Env []struct{ Name, Value string }
						}
					}
				}
			} `yaml:"headGroupSpec"`
		}
	}
	if err := yaml.Unmarshal(res.Output, &out); err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, res.Output)
	}
	cs := out.Spec.HeadGroupSpec.Template.Spec.Containers
	if len(cs) != 2 || cs[1].Env[0].Name != "PUID" || cs[1].Env[0].Value != uid {
		t.Errorf("sidecar env %+v, want PUID %q\n%s", cs, uid, res.Output)
	}
}

// scalarTextDQ is s as a YAML double-quoted scalar.
func scalarTextDQ(s string) string {
	b, _ := yaml.Marshal(&yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Value: s})
	return string(b)
}

// TestNonRayFirstContainerRefused: a containers[0] that is no Ray image
// (a log shipper or a service mesh proxy put first) is an error naming
// it, not the image the sidecar's Ray version is read from.
func TestNonRayFirstContainerRefused(t *testing.T) {
	for _, tt := range []struct{ first, want string }{
		{"        - name: fluentbit\n          image: fluent/fluent-bit:3.0.4\n", `containers[0] (name "fluentbit", image "fluent/fluent-bit:3.0.4") is not a Ray container`},
		{"        - name: istio-proxy\n          image: docker.io/istio/proxyv2:1.22.0\n", `containers[0] (name "istio-proxy", image "docker.io/istio/proxyv2:1.22.0") is not a Ray container`},
	} {
		in := strings.Replace(plainCluster, "        containers:\n", "        containers:\n"+tt.first, 1)
		_, err := Apply(context.Background(), "f.yaml", []byte(in))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "f.yaml:12: ") {
			t.Errorf("error %v, want f.yaml:12: ... %q", err, tt.want)
		}
	}
	// A Ray image under another name is taken when its command starts Ray.
	custom := strings.Replace(plainCluster, "image: rayproject/ray:2.46.0\n", "image: example.com/ml/trainer:2.46.0\n          command: [\"/bin/bash\", \"-c\", \"ray  start --head --block\"]\n", 1)
	if _, err := Apply(context.Background(), "f.yaml", []byte(custom), WithImage("example.com/cs:1")); err != nil {
		t.Errorf("a custom image that runs ray start: %v", err)
	}
}

// TestHostPathRayTmp: a hostPath volume mounted at /tmp/ray is an error
// unless WithAllowHostPath.
func TestHostPathRayTmp(t *testing.T) {
	in := strings.Replace(plainCluster, "image: rayproject/ray:2.46.0\n", `image: rayproject/ray:2.46.0
          volumeMounts:
          - name: root
            mountPath: /tmp/ray
        volumes:
        - name: root
          hostPath:
            path: /
`, 1)
	_, err := Apply(context.Background(), "f.yaml", []byte(in), WithImage("example.com/cs:1"))
	want := `f.yaml:18: document 1 (RayCluster c): spec.headGroupSpec.template.spec.volumes: the Ray container mounts /tmp/ray from the hostPath volume "root" (path "/")`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	res, err := Apply(context.Background(), "f.yaml", []byte(in), WithImage("example.com/cs:1"), WithAllowHostPath())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(res.Output), "- name: root\n"); n != 3 {
		t.Errorf("WithAllowHostPath: %d items name the volume root, want 3 (the Ray mount, the sidecar's mount, the volume):\n%s", n, res.Output)
	}
}

// TestResolveDigestImageNotFound: a registry that answers "name unknown"
// or "manifest unknown" makes --resolve-digest an error, unless the tag is
// to be kept anyway.
func TestResolveDigestImageNotFound(t *testing.T) {
	host := testutil.Registry(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	image := host + "/team/code-server-ray:ray2.46.0"
	reg := RegistryResolver{}
	_, err := Apply(context.Background(), "f.yaml", []byte(plainCluster), WithImage(image), WithResolver(reg))
	if !errors.Is(err, ErrImageNotFound) || !strings.Contains(err.Error(), "the sidecar image "+image) || !strings.Contains(err.Error(), "--keep-unresolved") {
		t.Errorf("error %v, want ErrImageNotFound naming %s and --keep-unresolved", err, image)
	}
	res, err := Apply(context.Background(), "f.yaml", []byte(plainCluster), WithImage(image), WithResolver(reg), WithKeepUnresolved())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Output), "image: "+image+"\n") || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "keeping "+image+" by tag") {
		t.Errorf("WithKeepUnresolved: warnings %q\n%s", res.Warnings, res.Output)
	}
}

// TestDefaultImageRepositoryNotFound: a repository the registry says does
// not exist has no floating tag either: an error naming it and the way
// out, not a manifest whose image cannot be pulled.
func TestDefaultImageRepositoryNotFound(t *testing.T) {
	host := testutil.Registry(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	repo := host + "/team/typo"
	_, err := Apply(context.Background(), "f.yaml", []byte(plainCluster), WithRepository(repo), WithTagLister(RegistryResolver{}))
	if !errors.Is(err, ErrImageNotFound) || !strings.Contains(err.Error(), repo) || !strings.Contains(err.Error(), "--no-resolve") {
		t.Errorf("error %v, want ErrImageNotFound naming %s and --no-resolve", err, repo)
	}
}

// TestAnchorsOutsideTheHeadKept: anchors and aliases among the worker
// groups are not where inject edits: the sidecar goes to the head only,
// and Remove gives the bytes back.
func TestAnchorsOutsideTheHeadKept(t *testing.T) {
	in := clusterWith(`    template:
      spec:
        containers:
        - name: ray
          image: rayproject/ray:2.46.0
`, `  - groupName: a
    rayStartParams: {}
    template: &w
      spec:
        containers:
        - name: ray
          image: rayproject/ray:2.46.0
  - groupName: b
    rayStartParams: {}
    template: *w
`)
	res, err := Apply(context.Background(), "f.yaml", []byte(in), WithImage("example.com/cs:1"))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Spec struct {
			HeadGroupSpec struct {
				Template struct {
					Spec struct{ Containers []struct{ Name string } }
				}
			} `yaml:"headGroupSpec"`
			WorkerGroupSpecs []struct {
				Template struct {
					Spec struct{ Containers []struct{ Name string } }
				}
			} `yaml:"workerGroupSpecs"`
		}
	}
	if err := yaml.Unmarshal(res.Output, &out); err != nil {
		t.Fatal(err)
	}
	if n := len(out.Spec.HeadGroupSpec.Template.Spec.Containers); n != 2 {
		t.Errorf("head: %d containers, want 2", n)
	}
	for i, w := range out.Spec.WorkerGroupSpecs {
		if n := len(w.Template.Spec.Containers); n != 1 {
			t.Errorf("worker group %d: %d containers, want 1", i, n)
		}
	}
	removed, err := Remove("f.yaml", res.Output)
	if err != nil || string(removed.Output) != in {
		t.Errorf("Remove: %v\n%s", err, cmp.Diff(in, string(removed.Output)))
	}
}
