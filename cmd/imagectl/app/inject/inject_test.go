package inject_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/inject"
	"github.com/imagectl/imagectl/internal/testutil"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
)

const injectPlainJob = `# my job
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: job
spec:
  entrypoint: python main.py
  submissionMode: InteractiveMode
  runtimeEnvYAML: |
    pip: ["debugpy>=1.8.0"]
  rayClusterSpec:
    rayVersion: "2.46.0"
    headGroupSpec:
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.46.0-py312
`

func runIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := app.NewRootCommand(&out, &errb)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	code := 0
	if err != nil {
		errb.WriteString("imagectl: " + err.Error() + "\n")
		code = 1
		var ee *options.ExitError
		if errors.As(err, &ee) {
			code = ee.Code
		}
	}
	return code, out.String(), errb.String()
}

func TestInjectCLI(t *testing.T) {
	code, out, errs := runIn(t, injectPlainJob, "inject", "-f", "-", "--no-resolve")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"# my job\n",
		"          - name: code-server\n",
		"            image: docker.io/onesizefitsquorum/code-server-with-ray-distributed-debugger:ray2.46\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A tag imagectl did not check is a warning (it may not exist).
	wantErr := "imagectl: warning: -: sidecar image docker.io/onesizefitsquorum/code-server-with-ray-distributed-debugger:ray2.46 not checked: the tags were not looked up; ray2.46 is the floating tag of the newest build for Ray 2.46, which may not exist: check it, or pass --image\n"
	if errs != wantErr {
		t.Errorf("stderr %q, want %q", errs, wantErr)
	}

	// Idempotent through the CLI too.
	if code, again, errs := runIn(t, out, "inject", "-f", "-", "--no-resolve"); code != 0 || again != out {
		t.Errorf("inject of injected output: exit %d %s\n%s", code, errs, again)
	}

	code, diff, _ := runIn(t, injectPlainJob, "inject", "-f", "-", "-o", "diff", "--no-resolve")
	if code != 0 || !strings.Contains(diff, "--- a/-\n+++ b/-\n") || !strings.Contains(diff, "+          - name: code-server\n") {
		t.Errorf("-o diff: exit %d\n%s", code, diff)
	}

	// -i rewrites the file; --remove -i gives the original bytes back.
	dir := t.TempDir()
	path := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(path, []byte(injectPlainJob), 0o640); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runIn(t, "", "inject", "-f", path, "-i", "--no-resolve"); code != 0 || out != "" {
		t.Fatalf("-i: exit %d out %q err %s", code, out, errs)
	}
	injected, _ := os.ReadFile(path)
	if !strings.Contains(string(injected), "          - name: code-server\n") {
		t.Errorf("-i did not write the sidecar:\n%s", injected)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("-i changed the mode to %v", st.Mode())
	}
	if code, _, errs := runIn(t, "", "inject", "-f", path, "-i", "--remove"); code != 0 {
		t.Fatalf("--remove -i: exit %d %s", code, errs)
	}
	if back, _ := os.ReadFile(path); string(back) != injectPlainJob {
		t.Errorf("--remove -i did not restore the file:\n%s", back)
	}
	// Nothing injected: --remove says so (and changes nothing).
	if code, out, errs := runIn(t, "", "inject", "-f", path, "-i", "--remove"); code != 0 || out != "" ||
		errs != "imagectl: "+path+": nothing to remove: no document carries the "+inject.RecordEnv+" record inject writes; the file is unchanged\n" {
		t.Errorf("--remove of a file with nothing injected: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestInjectCLIErrors(t *testing.T) {
	dir := t.TempDir()
	cm := filepath.Join(dir, "cm.yaml")
	const cmText = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	if err := os.WriteFile(cm, []byte(cmText), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"no file", "", []string{"inject"}, 2, "-f FILE (or -f - for stdin) is required"},
		{"two files", "", []string{"inject", "-f", cm, "-f", filepath.Join(dir, "b.yaml")}, 2, "given twice (" + cm + ", then " + filepath.Join(dir, "b.yaml") + "): inject reads one file"},
		{"bad output", injectPlainJob, []string{"inject", "-f", "-", "-o", "json"}, 2, `--output "json": want yaml or diff`},
		{"in place on stdin", injectPlainJob, []string{"inject", "-f", "-", "-i"}, 2, "-i (in place) needs a file"},
		{"bad port", injectPlainJob, []string{"inject", "-f", "-", "--port", "0"}, 2, "--port 0: want 1 to 65535"},
		{"bad http timeout", injectPlainJob, []string{"inject", "-f", "-", "--http-timeout", "0s"}, 2, "--http-timeout 0s: want a positive duration"},
		{"bad quantity", injectPlainJob, []string{"inject", "-f", "-", "--requests", "cpu=lots"}, 2, `requests cpu="lots"`},
		{"remove with options", injectPlainJob, []string{"inject", "-f", "-", "--remove", "--image", "x"}, 2, "--image does not apply"},
		{"keep-unresolved without resolve-digest", injectPlainJob, []string{"inject", "-f", "-", "--keep-unresolved"}, 2, "--keep-unresolved applies to --resolve-digest"},
		{"no-resolve and resolve-digest", injectPlainJob, []string{"inject", "-f", "-", "--no-resolve", "--resolve-digest"}, 2, "drop one of them"},
		{"rotate without a file", injectPlainJob, []string{"inject", "-f", "-", "--rotate-password"}, 2, "--rotate-password needs --secret-file"},
		{"secret file with diff", injectPlainJob, []string{"inject", "-f", "-", "--secret-file", filepath.Join(dir, "pw.yaml"), "-o", "diff"}, 2, "-o diff only shows the change"},
		{"secret file is the manifest", "", []string{"inject", "-f", cm, "--secret-file", cm}, 2, "is the manifest itself"},
		{"missing file", "", []string{"inject", "-f", filepath.Join(dir, "nope.yaml")}, 1, "reading "},
		{"not a Ray kind", "", []string{"inject", "-f", cm, "-i"}, 1, cm + ": no ray.io/v1 RayJob, RayCluster or RayService"},
		{"invalid YAML", "a: [\n", []string{"inject", "-f", "-"}, 1, "-: document 1: invalid YAML"},
		// The temporary file beside it is not what the user named.
		{"secret file in a missing directory", injectPlainJob, []string{"inject", "-f", "-", "--no-resolve", "--secret-file", filepath.Join(dir, "nodir", "pw.yaml")}, 1,
			"writing " + filepath.Join(dir, "nodir", "pw.yaml") + ": the directory " + filepath.Join(dir, "nodir") + " does not exist"},
		{"Ray older than the debugger", strings.ReplaceAll(injectPlainJob, "2.46.0", "2.38.0"), []string{"inject", "-f", "-", "--no-resolve"}, 1, "Ray 2.38.0 has no debugpy-based debugger: the oldest Ray with the Ray Distributed Debugger is 2.39.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runIn(t, tt.stdin, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errs, tt.code, tt.want)
			}
			if out != "" {
				t.Errorf("wrote to stdout on error: %q", out)
			}
		})
	}
	if b, _ := os.ReadFile(cm); string(b) != cmText {
		t.Errorf("a failed -i changed the file:\n%s", b)
	}
}

func TestInjectCLIWarns(t *testing.T) {
	job := strings.Replace(injectPlainJob, `    pip: ["debugpy>=1.8.0"]`, `    env_vars: {RAY_DEBUG: legacy}`, 1)
	code, _, errs := runIn(t, job, "inject", "-f", "-", "--no-resolve")
	if code != 0 {
		t.Fatalf("exit %d %s", code, errs)
	}
	for _, w := range []string{"imagectl: warning: -: document 1 (RayJob job): spec.runtimeEnvYAML sets RAY_DEBUG=legacy",
		"imagectl: warning: -: document 1 (RayJob job): the runtime env lacks debugpy>=1.8.0"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
}

// TestInjectSecretFile: the password Secret goes to --secret-file (mode
// 0600, one document), never to stdout, whose first document is the RayJob
// kubectl ray job submit -f reads; running again keeps the password unless
// --rotate-password; a file holding anything else is never replaced.
func TestInjectSecretFile(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw.yaml")
	job := strings.Replace(injectPlainJob, "  name: job\n", "  name: job\n  namespace: ml\n", 1)
	code, out, errs := runIn(t, job, "inject", "-f", "-", "--no-resolve", "--secret-file", pw)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(out, "kind: Secret") || strings.Contains(out, "password: ") {
		t.Errorf("stdout holds the Secret:\n%s", out)
	}
	var first struct{ Kind string }
	if err := yaml.Unmarshal([]byte(out), &first); err != nil || first.Kind != "RayJob" {
		t.Errorf("the first document of stdout is %q (%v), want the RayJob", first.Kind, err)
	}
	want := "imagectl: wrote Secret ml/code-server-password to " + pw + " (a new random password); apply it with: kubectl apply --server-side -f " + pw + "\n"
	if !strings.Contains(errs, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errs)
	}
	st, err := os.Stat(pw)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", pw, st.Mode().Perm())
	}
	password := func() string {
		t.Helper()
		b, err := os.ReadFile(pw)
		if err != nil {
			t.Fatal(err)
		}
		var sec struct {
			Kind       string
			Metadata   struct{ Name, Namespace string }
			StringData map[string]string `json:"stringData"`
		}
		if err := yaml.Unmarshal(b, &sec); err != nil {
			t.Fatal(err)
		}
		if sec.Kind != "Secret" || sec.Metadata.Name != "code-server-password" || sec.Metadata.Namespace != "ml" || len(sec.StringData["password"]) < 32 {
			t.Fatalf("%s holds %+v", pw, sec)
		}
		return sec.StringData["password"]
	}
	p1 := password()

	if code, _, errs := runIn(t, job, "inject", "-f", "-", "--no-resolve", "--secret-file", pw); code != 0 || !strings.Contains(errs, "(the password it held)") {
		t.Fatalf("again: exit %d %s", code, errs)
	}
	if p2 := password(); p2 != p1 {
		t.Errorf("re-running inject changed the password")
	}
	if code, _, errs := runIn(t, job, "inject", "-f", "-", "--no-resolve", "--secret-file", pw, "--rotate-password"); code != 0 {
		t.Fatalf("--rotate-password: exit %d %s", code, errs)
	}
	if p3 := password(); p3 == p1 {
		t.Errorf("--rotate-password kept the password")
	}

	// Never replaces a file holding something else.
	other := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(other, []byte(injectPlainJob), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runIn(t, job, "inject", "-f", "-", "--no-resolve", "--secret-file", other)
	if code != 1 || out != "" || !strings.Contains(errs, "refusing to replace it") {
		t.Errorf("a manifest as --secret-file: exit %d out %q err %s", code, out, errs)
	}
	if b, _ := os.ReadFile(other); string(b) != injectPlainJob {
		t.Errorf("%s was replaced:\n%s", other, b)
	}
}

// TestInjectCLIChoosesPublishedImage: by default inject lists the tags of
// --repository (an in-process registry here) and takes the newest build for
// the manifest's Ray minor when its patch has none, and says so.
func TestInjectCLIChoosesPublishedImage(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	repo := testutil.Registry(t) + "/code-server-ray"
	img, err := imagetest.RandomPlatformImage("amd64")
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"ray2.46.1", "ray2.46"} {
		ref, err := name.ParseReference(repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runIn(t, injectPlainJob, "inject", "-f", "-", "--repository", repo)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := "            image: " + repo + ":ray2.46.1\n"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if want := "imagectl: -: sidecar image " + repo + ":ray2.46.1: no build for Ray 2.46.0 is published in " + repo + "; ray2.46.1 is the newest build for Ray 2.46\n"; errs != want {
		t.Errorf("stderr %q, want %q", errs, want)
	}
}

// TestInjectCLIImageNotInRegistry: with --resolve-digest, an image the
// registry does not have fails inject -i and leaves the file as it was;
// --keep-unresolved keeps the tag with a warning. A hostPath /tmp/ray
// needs --allow-hostpath.
func TestInjectCLIImageNotInRegistry(t *testing.T) {
	host := testutil.Registry(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	image := host + "/team/cs:ray2.46.0"
	path := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(path, []byte(injectPlainJob), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runIn(t, "", "inject", "-f", path, "-i", "--resolve-digest", "--image", image)
	if code != 1 || !strings.Contains(errs, "the sidecar image "+image+": resolving "+image+" to a digest: the registry has no such image") || !strings.Contains(errs, "--keep-unresolved") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming the image and --keep-unresolved", code, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != injectPlainJob {
		t.Errorf("a failed -i changed the file:\n%s", b)
	}
	code, _, errs = runIn(t, "", "inject", "-f", path, "-i", "--resolve-digest", "--keep-unresolved", "--image", image)
	if code != 0 || !strings.Contains(errs, "imagectl: warning: "+path+": document 1 (RayJob job): keeping "+image+" by tag") {
		t.Errorf("--keep-unresolved: exit %d, stderr %q", code, errs)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "image: "+image+"\n") {
		t.Errorf("--keep-unresolved did not write the tag:\n%s", b)
	}

	hostPath := strings.Replace(injectPlainJob, "image: rayproject/ray:2.46.0-py312\n", `image: rayproject/ray:2.46.0-py312
            volumeMounts:
            - name: node
              mountPath: /tmp/ray
          volumes:
          - name: node
            hostPath:
              path: /var/ray
`, 1)
	if code, _, errs := runIn(t, hostPath, "inject", "-f", "-", "--no-resolve"); code != 1 || !strings.Contains(errs, `the hostPath volume "node" (path "/var/ray")`) || !strings.Contains(errs, "--allow-hostpath") {
		t.Errorf("hostPath: exit %d, stderr %q", code, errs)
	}
	if code, out, errs := runIn(t, hostPath, "inject", "-f", "-", "--no-resolve", "--allow-hostpath"); code != 0 || strings.Count(out, "- name: node\n") != 3 {
		t.Errorf("--allow-hostpath: exit %d, stderr %q\n%s", code, errs, out)
	}
}

// TestInjectInPlaceThroughSymlink: -i on a symbolic link rewrites the file
// it points to and leaves the link a link.
func TestInjectInPlaceThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real", "job.yaml")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte(injectPlainJob), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "job.yaml")
	if err := os.Symlink(filepath.Join("real", "job.yaml"), link); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runIn(t, "", "inject", "-f", link, "-i", "--no-resolve"); code != 0 {
		t.Fatalf("-i: exit %d %s", code, errs)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("-i replaced the symbolic link %s: %v, %v", link, st.Mode(), err)
	}
	got, err := os.ReadFile(target)
	if err != nil || !strings.Contains(string(got), "- name: code-server\n") {
		t.Errorf("the link's target was not rewritten (%v):\n%s", err, got)
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o640 {
		t.Errorf("-i changed the target's mode to %v", st.Mode())
	}
	for d, want := range map[string]int{dir: 2, filepath.Dir(target): 1} {
		if entries, _ := os.ReadDir(d); len(entries) != want {
			t.Errorf("%s holds %v, want %d entries (a temporary file left?)", d, entries, want)
		}
	}
}

// cancelOnWrite cancels its context at its first write: an interrupt that
// arrives after inject computed the output (it prints its notes then) and
// before it writes the file.
type cancelOnWrite struct {
	bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.cancel()
	return w.Buffer.Write(p)
}

// TestInjectInPlaceLateInterrupt: an interrupt after the output is
// computed writes neither the file nor the Secret, and leaves no
// temporary file.
func TestInjectInPlaceLateInterrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(path, []byte(injectPlainJob), 0o640); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOnWrite{cancel: cancel}
	var stdout bytes.Buffer
	code := app.Run(ctx, []string{"inject", "-f", path, "-i", "--no-resolve", "--secret-file", filepath.Join(dir, "secret.yaml")}, &stdout, stderr)
	if code != app.ExitInterrupted {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, app.ExitInterrupted, stderr.String())
	}
	if got, _ := os.ReadFile(path); string(got) != injectPlainJob {
		t.Errorf("an interrupted -i wrote the file:\n%s", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%s holds %v, want job.yaml alone", dir, entries)
	}
}

// TestInjectPrepullFile: --prepull-file gets inject.Prepull's DaemonSet of
// the output (for a RayJob with examples/rayjob.yaml's two images,
// examples/prepull.yaml byte for byte), stdout keeps the manifest, stderr
// says how to apply it; a second run replaces the DaemonSet, a file
// holding anything else is never replaced, and the flag is refused with
// --remove and with -o diff.
func TestInjectPrepullFile(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "prepull.yaml")
	const sidecar = "docker.io/onesizefitsquorum/code-server-with-ray-distributed-debugger:4.101.2-ray2.46.0-py3.12"
	code, out, errs := runIn(t, injectPlainJob, "inject", "-f", "-", "--image", sidecar, "--prepull-file", ds)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "kind: RayJob") || strings.Contains(out, "DaemonSet") {
		t.Errorf("stdout is not the injected manifest alone:\n%s", out)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "examples", "prepull.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(ds)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("--prepull-file for examples/rayjob.yaml's images is not examples/prepull.yaml (-example +written):\n%s", diff)
	}
	wantMsg := "imagectl: wrote the pre-pull DaemonSet ray-debug-prepull (rayproject/ray:2.46.0-py312, " + sidecar + ") to " + ds + `; apply it with: kubectl apply --server-side -n "$NS" -f ` + ds + "\n"
	if !strings.Contains(errs, wantMsg) {
		t.Errorf("stderr lacks %q:\n%s", wantMsg, errs)
	}

	// Again, with another sidecar image: replaced.
	code, _, errs = runIn(t, injectPlainJob, "inject", "-f", "-", "--image", "registry.example/cs:1", "--prepull-file", ds)
	if b, _ := os.ReadFile(ds); code != 0 || !strings.Contains(string(b), "image: registry.example/cs:1\n") {
		t.Errorf("second run: exit %d %s\n%s", code, errs, b)
	}

	other := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(other, []byte(injectPlainJob), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runIn(t, injectPlainJob, "inject", "-f", "-", "--no-resolve", "--prepull-file", other)
	if code != 1 || !strings.Contains(errs, "holds something other than the pre-pull DaemonSet ray-debug-prepull: refusing to replace it") {
		t.Errorf("a manifest as --prepull-file: exit %d out %q err %s", code, out, errs)
	}
	if b, _ := os.ReadFile(other); string(b) != injectPlainJob {
		t.Errorf("%s was replaced:\n%s", other, b)
	}
	for _, args := range [][]string{
		{"inject", "-f", "-", "--remove", "--prepull-file", ds},
		{"inject", "-f", "-", "--no-resolve", "-o", "diff", "--prepull-file", ds},
	} {
		if code, _, errs := runIn(t, injectPlainJob, args...); code != 2 || !strings.Contains(errs, "prepull-file") {
			t.Errorf("%q: exit %d %s, want 2 naming --prepull-file", args, code, errs)
		}
	}
}

// --repository on inject is the repository group of every verb: it falls
// back to IMAGECTL_REPOSITORY, and a bare registry (HOST[:PORT]) keeps the
// published image's name (docs/cli.md).
func TestInjectRepository(t *testing.T) {
	const name = "onesizefitsquorum/code-server-with-ray-distributed-debugger"
	for _, tc := range []struct {
		name, env string
		args      []string
		image     string
	}{
		{"bare registry", "", []string{"--repository", "localhost:5000"}, "localhost:5000/" + name + ":ray2.46"},
		{"bare registry with a dot", "", []string{"--repository", "registry.example"}, "registry.example/" + name + ":ray2.46"},
		{"environment", "registry.example/team/img", nil, "registry.example/team/img:ray2.46"},
		{"environment, bare registry", "localhost:5000", nil, "localhost:5000/" + name + ":ray2.46"},
		{"the flag wins", "registry.example/team/img", []string{"--repository", "localhost:5000/mine"}, "localhost:5000/mine:ray2.46"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("IMAGECTL_REPOSITORY", tc.env)
			code, out, errs := runIn(t, injectPlainJob, append([]string{"inject", "-f", "-", "--no-resolve"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if want := "            image: " + tc.image + "\n"; !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		})
	}
	// --remove takes no --repository, but IMAGECTL_REPOSITORY in the
	// environment is no flag given.
	t.Setenv("IMAGECTL_REPOSITORY", "localhost:5000")
	_, injected, _ := runIn(t, injectPlainJob, "inject", "-f", "-", "--no-resolve")
	if code, out, errs := runIn(t, injected, "inject", "-f", "-", "--remove"); code != 0 || out != injectPlainJob {
		t.Errorf("--remove with IMAGECTL_REPOSITORY set: exit %d %s\n%s", code, errs, out)
	}
}
