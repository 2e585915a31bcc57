package kind

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/imagectl/imagectl/internal/testimage"
	"github.com/imagectl/imagectl/smoke/probe"
)

// TestPreflightNamesWhatIsMissing runs the real preflight: on a machine with
// a Docker engine, kubectl, git and the network it passes; otherwise it must
// return a *SkipError whose text names the missing piece.
func TestPreflightNamesWhatIsMissing(t *testing.T) {
	err := Preflight(context.Background())
	if err == nil {
		return
	}
	var se *SkipError
	if !errors.As(err, &se) {
		t.Fatalf("Preflight error %v is not a *SkipError", err)
	}
	if _, lerr := exec.LookPath("docker"); lerr == nil {
		if out, derr := exec.Command("docker", "info").CombinedOutput(); derr != nil {
			if !strings.HasPrefix(se.Reason, "no Docker engine: docker info failed: ") {
				t.Errorf("docker info fails (%s) but the reason is %q", strings.TrimSpace(string(out)), se.Reason)
			}
		}
	} else if !strings.HasPrefix(se.Reason, "no Docker:") {
		t.Errorf("no docker client but the reason is %q", se.Reason)
	}
	t.Logf("preflight: %s", se.Reason)
}

func TestRunRequiresImageAndProbe(t *testing.T) {
	if _, err := Run(context.Background(), Config{}); err == nil || !strings.Contains(err.Error(), "image") {
		t.Errorf("Run without an image: %v", err)
	}
	if _, err := Run(context.Background(), Config{Image: "x"}); err == nil || !strings.Contains(err.Error(), "static linux imagectl") {
		t.Errorf("Run without a probe binary: %v", err)
	}
}

// fakeKubectl puts a kubectl on PATH that records every call (one line of
// tab-separated arguments in dir/calls), keeps what `apply -f -` reads in
// dir/stdin-N, and answers the harness's queries as a healthy cluster does.
func fakeKubectl(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	rep, err := json.Marshal(probe.Report{OK: true, Dashboard: "http://127.0.0.1:8265",
		Attach: &probe.AttachResult{Address: "10.244.0.7:40123", Frame: &probe.Frame{Name: "f", Path: "/tmp/ray/session_latest/runtime_resources/smoke_task.py", Line: 13}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), rep, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/bash
dir="` + dir + `"
(IFS=$'\t'; echo "$*") >> "$dir/calls"
args=" $* "
case "$args" in
  *" apply -f - "*) n=$(ls "$dir" | grep -c '^stdin-'); cat > "$dir/stdin-$n" ;;
  *" get deployments -A -l app.kubernetes.io/component=kuberay-operator "*) echo "default/kuberay-operator" ;;
  *"{.status.rayClusterName}"*) printf 'imagectl-smoke-raycluster-x7k2p' ;;
  *" get pod -l ray.io/node-type=head "*) printf 'imagectl-smoke-raycluster-x7k2p-head-abcde' ;;
  *" smoke attach "*) cat "$dir/report.json" ;;
  *"{.status.jobStatus}"*) printf 'SUCCEEDED' ;;
  *" logs job/imagectl-smoke "*) echo "RESULT [0, 1, 4, 9]" ;;
esac
exit 0
`
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

func calls(t *testing.T, dir string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		out = append(out, strings.Split(l, "\t"))
	}
	return out
}

// pushTestImage pushes a small image to an in-process registry (behind
// basic auth when user is set) and returns its tag reference and digest.
func pushTestImage(t *testing.T, user, pass string) (string, string) {
	t.Helper()
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if user != "" {
		next := h
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != want {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/team/code-server-ray:ray2.46.0"
	img, err := testimage.RandomPlatformImage("amd64")
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithAuth(&authn.Basic{Username: user, Password: pass})); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return ref, d.String()
}

func testHarness(t *testing.T, image string) *harness {
	return &harness{
		cfg: Config{Image: image, RayVersion: "2.46.0", Python: "3.12", KubeRayVersion: KubeRayNewest,
			ProbeBinary: "/bin/true", ClusterName: "imagectl-smoke"},
		log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		kubeconfig: "/tmp/imagectl-smoke-kubeconfig",
	}
}

// TestHarnessRunsTheGuide drives the harness against a fake kubectl: it runs
// the user guide's commands exactly, never names a namespace, loads no
// image, and applies the plain RayJob with the sidecar injected and the
// image pinned by digest.
func TestHarnessRunsTheGuide(t *testing.T) {
	dir := fakeKubectl(t)
	image, digest := pushTestImage(t, "", "")
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	h := testHarness(t, image)
	res, err := h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.JobStatus != "SUCCEEDED" || len(res.Attaches) != ExpectedPauses || res.Output != ExpectedOutput {
		t.Errorf("result %+v", res)
	}
	got := calls(t, dir)
	for _, c := range got {
		if len(c) < 2 || c[0] != "--kubeconfig" || c[1] != h.kubeconfig {
			t.Errorf("kubectl %q without the cluster's --kubeconfig first", c)
		}
		for _, a := range c {
			if a == "-n" || a == "--namespace" || strings.HasPrefix(a, "--namespace=") || a == "ray-system" {
				t.Errorf("kubectl %q names a namespace", c)
			}
		}
	}
	// The guide's kubectl commands, in order, as the README shows them.
	var want [][]string
	for _, c := range Guide(KubeRayNewest) {
		args := c.Args
		if c.Pipe != nil {
			args = c.Pipe // imagectl inject runs as the library; its output is piped
		}
		want = append(want, expand(args[1:], map[string]string{"HEAD": "imagectl-smoke-raycluster-x7k2p-head-abcde"}))
	}
	i := 0
	for _, c := range got {
		if i < len(want) && cmp.Equal(c[2:], want[i]) {
			i++
		}
	}
	if i != len(want) {
		t.Errorf("the harness did not run the guide's command %q (in order); it ran:\n%s", want[min(i, len(want)-1)], formatCalls(got))
	}
	applied, err := os.ReadFile(filepath.Join(dir, "stdin-0"))
	if err != nil {
		t.Fatalf("nothing applied from stdin: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "stdin-1")); err == nil {
		t.Errorf("more than one apply from stdin: a pull secret for a public repository?")
	}
	for _, s := range []string{
		"          - name: code-server # added by imagectl inject\n            image: " + image + "@" + digest + "\n",
		"kind: Secret\n", "kind: RayJob\n", "kind: ConfigMap\n",
	} {
		if !strings.Contains(string(applied), s) {
			t.Errorf("applied manifest lacks %q:\n%s", s, applied)
		}
	}
	if strings.Contains(string(applied), "imagePullSecrets") {
		t.Errorf("a public repository got an imagePullSecret:\n%s", applied)
	}
	if h.operator != "default/kuberay-operator" {
		t.Errorf("operator %q", h.operator)
	}
}

func formatCalls(calls [][]string) string {
	var b strings.Builder
	for _, c := range calls {
		b.WriteString("  kubectl " + strings.Join(c, " ") + "\n")
	}
	return b.String()
}

// TestHarnessPrivateRepository: the pull secret carries the docker config's
// credentials for that registry, and the head pod names it.
func TestHarnessPrivateRepository(t *testing.T) {
	dir := fakeKubectl(t)
	image, digest := pushTestImage(t, "alice", "s3cret")
	host := strings.SplitN(image, "/", 2)[0]

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	if _, err := testHarness(t, image).run(context.Background()); err == nil || !strings.Contains(err.Error(), "docker login "+host) {
		t.Errorf("no credentials: %v, want an error saying docker login %s", err, host)
	}

	cfgDir := t.TempDir()
	cfg := `{"auths":{"` + host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("alice:s3cret")) + `"}}}`
	if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", cfgDir)
	h := testHarness(t, image)
	if _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	secretYAML, err := os.ReadFile(filepath.Join(dir, "stdin-0"))
	if err != nil {
		t.Fatal(err)
	}
	var secret corev1.Secret
	if err := sigsyaml.UnmarshalStrict(secretYAML, &secret); err != nil {
		t.Fatalf("pull secret: %v\n%s", err, secretYAML)
	}
	var dockercfg struct {
		Auths map[string]struct{ Username, Password, Auth string } `json:"auths"`
	}
	if err := json.Unmarshal(secret.Data[".dockerconfigjson"], &dockercfg); err != nil {
		t.Fatal(err)
	}
	if secret.Name != PullSecretName || secret.Type != corev1.SecretTypeDockerConfigJson ||
		dockercfg.Auths[host].Username != "alice" || dockercfg.Auths[host].Password != "s3cret" ||
		dockercfg.Auths[host].Auth != base64.StdEncoding.EncodeToString([]byte("alice:s3cret")) {
		t.Errorf("pull secret %s type %s auths %+v", secret.Name, secret.Type, dockercfg.Auths)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "stdin-1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"image: " + image + "@" + digest + "\n", "imagePullSecrets: # added by imagectl inject\n          - name: " + PullSecretName + "\n"} {
		if !strings.Contains(string(manifest), s) {
			t.Errorf("manifest lacks %q:\n%s", s, manifest)
		}
	}
	if red := redactSecrets(manifest); strings.Contains(string(red), "password:") || !strings.Contains(string(red), "kind: RayJob") {
		t.Errorf("redacted manifest still has a password or lost the RayJob:\n%s", red)
	}
}

func TestKubeRayVersion(t *testing.T) {
	for in, want := range map[string]string{"": KubeRayNewest, "newest": KubeRayNewest, "oldest": KubeRayOldest, "v1.4.2": "1.4.2", "1.3.0": "1.3.0"} {
		if got, err := KubeRayVersion(in); err != nil || got != want {
			t.Errorf("KubeRayVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"1.2.2", "latest", "1.4", "1.4.0-rc.1", "1.4.0+meta", "v1.2.9", "0.10.0"} {
		if _, err := KubeRayVersion(bad); err == nil {
			t.Errorf("KubeRayVersion(%q) accepted", bad)
		}
	}
	if !older("1.9.0", "1.10.0") || older("1.10.0", "1.9.0") || older("1.3.0", "1.3.0") {
		t.Errorf("older does not compare X.Y.Z numerically")
	}
	if older(KubeRayNewest, KubeRayOldest) {
		t.Errorf("newest %s is older than oldest %s", KubeRayNewest, KubeRayOldest)
	}
}

func TestRenderPlainRejectsBadParams(t *testing.T) {
	good := Params{Name: "imagectl-smoke", RayVersion: "2.46.0", Python: "3.12"}
	if _, err := RenderPlain(good); err != nil {
		t.Fatal(err)
	}
	for _, mut := range []func(*Params){
		func(p *Params) { p.Name = "Bad_Name" },
		func(p *Params) { p.RayVersion = "2.46" },
		func(p *Params) { p.Python = "312" },
	} {
		p := good
		mut(&p)
		if _, err := RenderPlain(p); err == nil {
			t.Errorf("RenderPlain(%+v) succeeded", p)
		}
	}
	if _, err := InjectOptions([]string{"--resolve-digest"}); err == nil {
		t.Error("InjectOptions accepted a flag the harness does not map")
	}
}
