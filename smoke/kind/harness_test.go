package kind

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/imagectl/imagectl/debug"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/inject"
	"github.com/imagectl/imagectl/internal/testutil"
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
// tab-separated arguments in dir/calls), keeps what `apply --server-side -f -`
// reads in dir/stdin-N and a copy of every file it applies (dir/applied-NAME),
// and answers the harness's queries as a healthy cluster does. As the kubectl
// ray plugin (`kubectl ray job submit`) it records its KUBECONFIG, keeps
// copies of the RayJob file and the job's script it was given, prints the
// job's output and, like the real plugin, returns only when the job ends:
// after the post-mortem attach. With FAKE_PLUGIN_TIMEOUT=1 it behaves as the
// plugin does when the RayCluster is not ready within 120 s.
func fakeKubectl(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, rep := range map[string]probe.Report{
		"report.json": {OK: true, Dashboard: "http://127.0.0.1:8265",
			Attach: &probe.AttachResult{Address: "10.244.0.7:40123", Frame: &probe.Frame{Name: "f", Path: "/tmp/ray/session_2026-11-25_10-00-00_000000_1/runtime_resources/working_dir_files/_ray_pkg_0123456789abcdef/sample_code.py", Line: 21}}},
		"post-mortem.json": {OK: true, Dashboard: "http://127.0.0.1:8265",
			Attach: &probe.AttachResult{Address: "10.244.0.7:40125", Frame: &probe.Frame{Name: "g", Path: "/tmp/ray/session_2026-11-25_10-00-00_000000_1/runtime_resources/working_dir_files/_ray_pkg_0123456789abcdef/sample_code.py", Line: 27}}},
	} {
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := `#!/bin/bash
dir="` + dir + `"
(IFS=$'\t'; echo "$*") >> "$dir/calls"
args=" $* "
case "$args" in
  *" apply --server-side -f - "*) n=$(ls "$dir" | grep -c '^stdin-'); cat > "$dir/stdin-$n" ;;
  *" apply --server-side -f "*|*" apply --server-side -n "*" -f "*) f="${@: -1}"; cp "$f" "$dir/applied-$(basename "$f")" || exit 1 ;;
  " ray job submit "*)
    echo "$KUBECONFIG" > "$dir/plugin-kubeconfig"
    f=""; prev=""; for a in "$@"; do [ "$prev" = "-f" ] && f="$a"; prev="$a"; done
    cp "$f" "$dir/submitted.yaml" && cp working_dir/sample_code.py "$dir/submitted-script.py" || exit 1
    echo "Submitted RayJob imagectl-smoke."
    if [ "$FAKE_PLUGIN_TIMEOUT" = 1 ]; then echo "Deleting RayJob..."; echo "Timed out waiting for cluster" >&2; exit 1; fi
    while [ ! -e "$dir/post-mortem-done-0" ]; do sleep 0.05; done
    echo "RESULT [0, 1, 4, 9]"; echo "POST-MORTEM ZeroDivisionError" ;;
  *" get deployments -A -l app.kubernetes.io/component=kuberay-operator "*) echo "default/kuberay-operator" ;;
  *"{.status.rayClusterName}"*) [ "$FAKE_PLUGIN_TIMEOUT" = 1 ] || printf 'imagectl-smoke-raycluster-x7k2p' ;;
  *" get pod -n "*" -l ray.io/cluster=imagectl-smoke-raycluster-x7k2p,ray.io/node-type=head "*) printf 'imagectl-smoke-raycluster-x7k2p-head-abcde' ;;
  *" smoke attach "*" --post-mortem "*) cat "$dir/post-mortem.json"; n=$(ls "$dir" | grep -c '^post-mortem-done-'); touch "$dir/post-mortem-done-$n" ;;
  *" smoke attach "*) cat "$dir/report.json" ;;
  *"{.status.jobStatus}"*) printf 'SUCCEEDED' ;;
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
	t.Setenv("FAKE_KUBECTL_DIR", dir)
	return dir
}

// TestMain lets this test binary stand in for `imagectl inject` with the
// documented --secret-file interface, when the harness runs it with
// IMAGECTL_FAKE_INJECT set (to a file its arguments are recorded in): the
// sidecar is added by the inject library, the stream holds only the user's
// documents, and FILE gets one password Secret (a fixed test password)
// with mode 0600.
func TestMain(m *testing.M) {
	if log := os.Getenv("IMAGECTL_FAKE_INJECT"); log != "" {
		os.Exit(fakeInject(log, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeSecret is what the fake imagectl inject writes to --secret-file.
const fakeSecret = `apiVersion: v1
kind: Secret
metadata:
  name: code-server-password
type: Opaque
stringData:
  password: test-password-not-secret
`

func fakeInject(logFile string, args []string) int {
	if len(args) > 0 && args[0] == "debug" {
		return fakeDebug(logFile+".debug", args)
	}
	if err := os.WriteFile(logFile, []byte(strings.Join(args, "\t")), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if len(args) == 0 || args[0] != "inject" {
		fmt.Fprintf(os.Stderr, "fake imagectl: only inject, not %q\n", args)
		return 2
	}
	fs := flag.NewFlagSet("inject", flag.ContinueOnError)
	file := fs.String("f", "", "")
	secretFile := fs.String("secret-file", "", "")
	image := fs.String("image", "", "")
	pullSecret := fs.String("image-pull-secret", "", "")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 || *file == "" || *secretFile == "" {
		fmt.Fprintf(os.Stderr, "fake imagectl: bad arguments %q: %v\n", args, err)
		return 2
	}
	in, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var opts []inject.Option
	if *image != "" {
		opts = append(opts, inject.WithImage(*image))
	}
	if *pullSecret != "" {
		opts = append(opts, inject.WithImagePullSecret(*pullSecret))
	}
	res, err := inject.Apply(context.Background(), *file, in, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if regexp.MustCompile(`(?m)^kind: Secret$`).Match(res.Output) {
		fmt.Fprintln(os.Stderr, "fake imagectl: the inject library put a Secret into the stream")
		return 1
	}
	if err := os.WriteFile(*secretFile, []byte(fakeSecret), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Stdout.Write(res.Output)
	return 0
}

// fakeDebug stands in for `imagectl debug -o json` (with the fake
// kubectl's cluster): it records its arguments and KUBECONFIG, prints the
// events of a session up to a paused task, waits until the harness has
// attached post-mortem a second time (the first is the manual steps'),
// then prints the job's end and exits as FAKE_DEBUG_STATUS says
// (SUCCEEDED: 0, FAILED: 8).
func fakeDebug(logFile string, args []string) int {
	if err := os.WriteFile(logFile, []byte(strings.Join(args, "\t")+"\nKUBECONFIG="+os.Getenv("KUBECONFIG")), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	enc := json.NewEncoder(os.Stdout)
	head := guideVars["HEAD"]
	for _, e := range []debug.Event{
		{Kind: debug.KindApplied, Object: "RayJob/" + jobName, Created: true},
		{Kind: debug.KindWaiting, Object: "Pod/" + head},
		{Kind: debug.KindReady, Pod: head},
		{Kind: debug.KindSubmitted, JobID: jobName + "-1"},
		{Kind: debug.KindPaused, Task: &debug.PausedTask{Name: ExpectedFunction, Pod: head}},
	} {
		enc.Encode(e)
	}
	done := filepath.Join(os.Getenv("FAKE_KUBECTL_DIR"), "post-mortem-done-1")
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(done); err == nil {
			break
		}
		if time.Now().After(end) {
			fmt.Fprintln(os.Stderr, "fake imagectl debug: no second post-mortem attach in 30 s")
			return 1
		}
	}
	status := os.Getenv("FAKE_DEBUG_STATUS")
	enc.Encode(debug.Event{Kind: debug.KindResumed, Task: &debug.PausedTask{Name: PostMortemFunction}})
	enc.Encode(debug.Event{Kind: debug.KindFinished, JobStatus: status})
	enc.Encode(debug.Event{Kind: debug.KindCleanup, Deleted: []string{"RayJob/" + jobName}})
	if status != "SUCCEEDED" {
		fmt.Fprintf(os.Stderr, "imagectl: job %s-1 ended %s\n", jobName, status)
		return 8
	}
	return 0
}

// TestHarnessRunsImagectlDebug: with Config.Debug, after the manual steps
// the harness deletes the plugin's RayJob, runs README's imagectl debug
// (DebugCommand, with the image under test before the --) with the
// cluster as KUBECONFIG, attaches from the sidecar of the head Pod its
// ready event names (four breakpoints, one post-mortem) after the first
// paused event, and requires exit 0 with the job SUCCEEDED; a session
// whose job failed (exit 8) fails the run.
func TestHarnessRunsImagectlDebug(t *testing.T) {
	for _, status := range []string{"SUCCEEDED", "FAILED"} {
		t.Run(status, func(t *testing.T) {
			dir := fakeKubectl(t)
			t.Setenv("FAKE_DEBUG_STATUS", status)
			image, digest := pushTestImage(t, "", "")
			pinned := image + "@" + digest
			t.Setenv("DOCKER_CONFIG", t.TempDir())
			h, injectLog := testHarness(t, image)
			h.cfg.Debug = true
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := h.run(ctx)
			if status == "FAILED" {
				if err == nil || !strings.Contains(err.Error(), "exit status 8") || !strings.Contains(err.Error(), "ended FAILED") {
					t.Fatalf("run: %v, want imagectl debug's exit 8 and its message", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d := res.Debug
			if d == nil {
				t.Fatal("no debug result")
			}
			if diff := cmp.Diff([]string{"applied", "waiting", "ready", "submitted", "paused", "resumed", "finished", "cleanup"}, d.Events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if d.JobStatus != "SUCCEEDED" || d.Paused != 1 || len(d.Attaches) != ExpectedPauses || d.PostMortem == nil {
				t.Errorf("debug result %+v", d)
			}
			got, err := os.ReadFile(injectLog + ".debug")
			if err != nil {
				t.Fatalf("imagectl debug did not run: %v", err)
			}
			args := DebugCommand().Args[1:]
			dash := slices.Index(args, "--")
			want := strings.Join(slices.Concat(args[:dash], []string{"--image", pinned}, args[dash:]), "\t") + "\nKUBECONFIG=" + h.kubeconfig
			if diff := cmp.Diff(want, string(got)); diff != "" {
				t.Errorf("imagectl debug's arguments and KUBECONFIG (-want +got):\n%s", diff)
			}
			// The plugin's RayJob is deleted before, and the sidecar
			// attached to after: ten attaches in all, two post-mortem.
			var deleted bool
			var attaches, postMortem int
			for _, c := range calls(t, dir) {
				line := strings.Join(c, " ")
				if strings.Contains(line, " delete -n "+testNamespace+" rayjob "+jobName+" ") {
					deleted = true
				}
				if strings.Contains(line, " smoke attach ") {
					attaches++
					if slices.Contains(c, "--post-mortem") {
						postMortem++
					}
					if !slices.Contains(c, guideVars["HEAD"]) {
						t.Errorf("attach %q is not in the head Pod %s", c, guideVars["HEAD"])
					}
				}
			}
			if !deleted || attaches != 2*(ExpectedPauses+1) || postMortem != 2 {
				t.Errorf("RayJob deleted %v, %d attaches (%d post-mortem), want true, %d (2):\n%s", deleted, attaches, postMortem, 2*(ExpectedPauses+1), formatCalls(calls(t, dir)))
			}
		})
	}
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
	var h http.Handler = testutil.RegistryHandler()
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
	img, err := imagetest.RandomPlatformImage("amd64")
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

// testHarness is a harness against the fake kubectl, with this test binary
// as imagectl (see TestMain); its inject arguments are recorded in the
// returned file.
func testHarness(t *testing.T, image string) (*harness, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	injectLog := filepath.Join(t.TempDir(), "inject-args")
	t.Setenv("IMAGECTL_FAKE_INJECT", injectLog)
	return &harness{
		cfg: Config{Image: image, RayVersion: "2.46.0", Python: "3.12", KubeRayVersion: KubeRayNewest,
			ProbeBinary: "/bin/true", Imagectl: exe, ClusterName: "imagectl-smoke"},
		log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		kubeconfig: testKubeconfig(t, testNamespace),
		dir:        t.TempDir(),
	}, injectLog
}

// testNamespace is the namespace of testKubeconfig's context in the
// harness's tests: not default, so a command that leaves out the guide's
// -n "$NS" is seen.
const testNamespace = "team-a"

// testKubeconfig writes a kubeconfig whose current context names ns.
func testKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	text := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {}}]\n" +
		"contexts: [{name: x, context: {cluster: c, user: u, namespace: " + ns + "}}]\ncurrent-context: x\n"
	if err := os.WriteFile(kc, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}

// guideVars are the guide's variables as the fake kubectl's cluster has
// them.
var guideVars = map[string]string{"NS": testNamespace, "CLUSTER": "imagectl-smoke-raycluster-x7k2p", "HEAD": "imagectl-smoke-raycluster-x7k2p-head-abcde"}

// TestHarnessRunsTheGuide drives the harness against a fake kubectl (and
// kubectl ray plugin): it runs the user guide's commands exactly, in the
// guide's directory, names no namespace but the kubeconfig context's (the
// guide's -n "$NS"), loads no image, submits the
// injected RayJob with the plugin, attaches four times and once
// post-mortem, and requires the job's output.
func TestHarnessRunsTheGuide(t *testing.T) {
	dir := fakeKubectl(t)
	image, digest := pushTestImage(t, "", "")
	pinned := image + "@" + digest
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	h, injectLog := testHarness(t, image)
	// The fake plugin, like the real one, returns only when the job ends:
	// a harness that never attaches post-mortem would wait forever.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := h.run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.JobStatus != "SUCCEEDED" || len(res.Attaches) != ExpectedPauses || res.PostMortem == nil ||
		res.PostMortem.Attach.Frame.Name != PostMortemFunction {
		t.Errorf("result %+v", res)
	}
	if diff := cmp.Diff([]string{ExpectedOutput, ExpectedPostMortem}, res.Output); diff != "" {
		t.Errorf("output lines (-want +got):\n%s", diff)
	}
	got := calls(t, dir)
	var kubectlCalls [][]string
	for _, c := range got {
		if c[0] == "ray" {
			continue // the plugin, checked below
		}
		kubectlCalls = append(kubectlCalls, c)
		if len(c) < 2 || c[0] != "--kubeconfig" || c[1] != h.kubeconfig {
			t.Errorf("kubectl %q without the cluster's --kubeconfig first", c)
		}
		for i, a := range c {
			if (a == "-n" && (i+1 == len(c) || c[i+1] != testNamespace)) || a == "--namespace" || strings.HasPrefix(a, "--namespace=") || a == "ray-system" {
				t.Errorf("kubectl %q names a namespace other than the context's %s", c, testNamespace)
			}
		}
	}
	// The guide's kubectl commands, in order, as docs/inject.md shows them. The
	// plugin runs in the background, so its call is checked on its own.
	guide := Guide(KubeRayNewest)
	var want [][]string
	for _, c := range guide {
		if c.Args[0] != "kubectl" || c.Args[1] == "ray" {
			continue // imagectl inject and the plugin, checked below
		}
		want = append(want, append([]string{"--kubeconfig", h.kubeconfig},
			expand(c.Args[1:], guideVars)...))
	}
	i := 0
	for _, c := range kubectlCalls {
		if i < len(want) && cmp.Equal(c, want[i]) {
			i++
		}
	}
	if i != len(want) {
		t.Errorf("the harness did not run the guide's command %q (in order); it ran:\n%s", want[min(i, len(want)-1)], formatCalls(got))
	}
	var submits [][]string
	for _, c := range got {
		if c[0] == "ray" {
			submits = append(submits, c)
		}
	}
	if diff := cmp.Diff([][]string{expand(guide[stepSubmit].Args[1:], guideVars)}, submits); diff != "" {
		t.Errorf("kubectl ray calls (-want +got):\n%s", diff)
	}
	var postMortem int
	for _, c := range got {
		if strings.Contains(strings.Join(c, " "), " smoke attach ") && slices.Contains(c, "--post-mortem") {
			postMortem++
			if !slices.Contains(c, PostMortemFunction) {
				t.Errorf("post-mortem attach %q does not name task %s", c, PostMortemFunction)
			}
		}
	}
	if postMortem != 1 {
		t.Errorf("%d post-mortem attaches, want 1:\n%s", postMortem, formatCalls(got))
	}

	// imagectl inject: the guide's arguments and the image under test.
	injectArgs, err := os.ReadFile(injectLog)
	if err != nil {
		t.Fatalf("imagectl inject did not run: %v", err)
	}
	wantInject := append(append([]string{}, guide[stepInject].Args[1:]...), "--image", pinned)
	if diff := cmp.Diff(wantInject, strings.Split(string(injectArgs), "\t")); diff != "" {
		t.Errorf("imagectl arguments (-want +got):\n%s", diff)
	}

	// The plugin got the injected RayJob alone, with the sidecar pinned by
	// digest, the job's script in ./working_dir, and the cluster as
	// KUBECONFIG.
	submitted, err := os.ReadFile(filepath.Join(dir, "submitted.yaml"))
	if err != nil {
		t.Fatalf("the plugin got no RayJob file: %v", err)
	}
	for _, s := range []string{
		"          - name: code-server\n            image: " + pinned + "\n",
		"kind: RayJob\n", "submissionMode: InteractiveMode\n", "RAY_DEBUG_POST_MORTEM: \"1\"\n",
	} {
		if !strings.Contains(string(submitted), s) {
			t.Errorf("submitted RayJob lacks %q:\n%s", s, submitted)
		}
	}
	for _, s := range []string{"kind: Secret", "imagePullSecrets"} {
		if strings.Contains(string(submitted), s) {
			t.Errorf("submitted RayJob has %q (public repository, Secret in its own file):\n%s", s, submitted)
		}
	}
	script, err := os.ReadFile(filepath.Join(dir, "submitted-script.py"))
	if err != nil || string(script) != TaskScript {
		t.Errorf("the plugin's ./working_dir/%s is not the task script (%v)", ScriptFile, err)
	}
	if kc, err := os.ReadFile(filepath.Join(dir, "plugin-kubeconfig")); err != nil || strings.TrimSpace(string(kc)) != h.kubeconfig {
		t.Errorf("the plugin ran with KUBECONFIG %q (%v), want %q", kc, err, h.kubeconfig)
	}

	// The password Secret went to its own file, applied server-side.
	secret, err := os.ReadFile(filepath.Join(dir, "applied-"+SecretFile))
	if err != nil || string(secret) != fakeSecret {
		t.Errorf("applied %s (%v):\n%s\nwant what imagectl inject wrote to --secret-file:\n%s", SecretFile, err, secret, fakeSecret)
	}
	if _, err := os.Stat(filepath.Join(dir, "stdin-0")); err == nil {
		t.Errorf("something applied from stdin: a pull secret for a public repository?")
	}
	// The pre-pull DaemonSet names both images of the injected RayJob.
	prepull, err := os.ReadFile(filepath.Join(dir, "applied-"+PrepullFile))
	if err != nil {
		t.Fatalf("prepull.yaml not applied: %v", err)
	}
	for _, s := range []string{"image: " + pinned + "\n", "image: rayproject/ray:2.46.0-py312\n", "name: " + PrepullName + "\n"} {
		if !strings.Contains(string(prepull), s) {
			t.Errorf("prepull.yaml lacks %q:\n%s", s, prepull)
		}
	}
	if h.operator != "default/kuberay-operator" {
		t.Errorf("operator %q", h.operator)
	}
}

// TestHarnessReportsThePluginsTimeout: when the plugin gives up on the
// RayCluster (120 s) and deletes the RayJob, the harness fails at once with
// the plugin's output instead of waiting for a head pod.
func TestHarnessReportsThePluginsTimeout(t *testing.T) {
	fakeKubectl(t)
	t.Setenv("FAKE_PLUGIN_TIMEOUT", "1")
	image, _ := pushTestImage(t, "", "")
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	h, _ := testHarness(t, image)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := h.run(ctx)
	if err == nil || !strings.Contains(err.Error(), "exited early") || !strings.Contains(err.Error(), "Deleting RayJob...") {
		t.Errorf("run: %v, want the plugin's early exit with its output", err)
	}
	if ctx.Err() != nil {
		t.Errorf("the harness waited for its deadline instead of noticing the plugin's exit")
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
// credentials for that registry, and the head pod and the pre-pull
// DaemonSet name it.
func TestHarnessPrivateRepository(t *testing.T) {
	dir := fakeKubectl(t)
	image, digest := pushTestImage(t, "alice", "s3cret")
	host := strings.SplitN(image, "/", 2)[0]

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	h, _ := testHarness(t, image)
	if _, err := h.run(context.Background()); err == nil || !strings.Contains(err.Error(), "docker login "+host) {
		t.Errorf("no credentials: %v, want an error saying docker login %s", err, host)
	}

	cfgDir := t.TempDir()
	cfg := `{"auths":{"` + host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("alice:s3cret")) + `"}}}`
	if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", cfgDir)
	h, injectLog := testHarness(t, image)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := h.run(ctx); err != nil {
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
	args, err := os.ReadFile(injectLog)
	if err != nil || !strings.HasSuffix(string(args), "\t--image-pull-secret\t"+PullSecretName) {
		t.Errorf("imagectl inject arguments %q (%v), want --image-pull-secret %s last", args, err, PullSecretName)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "submitted.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"image: " + image + "@" + digest + "\n", "imagePullSecrets:\n          - name: " + PullSecretName + "\n"} {
		if !strings.Contains(string(manifest), s) {
			t.Errorf("manifest lacks %q:\n%s", s, manifest)
		}
	}
	prepull, err := os.ReadFile(filepath.Join(dir, "applied-"+PrepullFile))
	if err != nil || !strings.Contains(string(prepull), "imagePullSecrets:\n      - name: "+PullSecretName+"\n") {
		t.Errorf("prepull.yaml without the pull secret (%v):\n%s", err, prepull)
	}
	if red := redactSecrets([]byte(string(secretYAML) + "---\n" + string(manifest))); strings.Contains(string(red), "dockerconfigjson:") || !strings.Contains(string(red), "kind: RayJob") {
		t.Errorf("redacted manifest still has a Secret's data or lost the RayJob:\n%s", red)
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
}

// TestRunUntilPodsStopsBeforeRunningPods: against a cluster whose operator
// runs already, the harness runs the guide's commands that need no running
// Pod, exactly and in order, creates the RayJob as the plugin's -f does
// first instead of running the plugin, finds the head Pod by the guide's
// lookup and stops before the guide's Ready wait.
func TestRunUntilPodsStopsBeforeRunningPods(t *testing.T) {
	dir := fakeKubectl(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("IMAGECTL_FAKE_INJECT", filepath.Join(t.TempDir(), "inject-args"))
	// Not in any registry: nothing reads it.
	const image = "registry.invalid/code-server@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	kubeconfig := testKubeconfig(t, testNamespace)
	got, err := RunUntilPods(context.Background(), Config{Image: image, RayVersion: "2.46.0", Python: "3.12", Imagectl: exe,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Timeout: time.Minute}, kubeconfig, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&Stopped{RayCluster: "imagectl-smoke-raycluster-x7k2p", HeadPod: "imagectl-smoke-raycluster-x7k2p-head-abcde"}, got); diff != "" {
		t.Errorf("RunUntilPods (-want +got):\n%s", diff)
	}
	guide := Guide(KubeRayNewest)
	var want [][]string
	for _, i := range []int{stepApplySecret, stepPrepull, stepWaitPrepull, stepDeletePrepull} {
		want = append(want, append([]string{"--kubeconfig", kubeconfig}, expand(guide[i].Args[1:], guideVars)...))
	}
	want = append(want,
		[]string{"--kubeconfig", kubeconfig, "create", "-n", testNamespace, "-f", InjectedFile},
		append([]string{"--kubeconfig", kubeconfig}, expand(guide[stepCluster].Args[1:], guideVars)...),
		append([]string{"--kubeconfig", kubeconfig}, expand(guide[stepHeadPod].Args[1:], guideVars)...))
	if diff := cmp.Diff(want, calls(t, dir)); diff != "" {
		t.Errorf("kubectl calls (-want +got):\n%s", diff)
	}
}
