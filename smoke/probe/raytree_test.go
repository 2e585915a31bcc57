package probe

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"

	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/inject"
	"github.com/imagectl/imagectl/internal/syncbuf"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/smoke/probe/probetest"
)

// Ray's on-disk layout, with the same path strings on every node (non-head
// nodes read session_name and temp_dir from GCS).
const (
	raySession    = "/tmp/ray/session_2026-11-25_22-55-00_123456_1"
	rayWorkingDir = raySession + "/runtime_resources/working_dir_files/_ray_pkg_5d0c1e2f3a4b5c6d"
	rayPyModules  = raySession + "/runtime_resources/py_modules_files/_ray_pkg_9e8d7c6b5a4f3e2d"
)

// debugpyEnv names extra debugpy source trees (directories holding a
// debugpy package, e.g. src/ of a microsoft/debugpy checkout at a tag),
// separated by ':', that the Ray tree tests run against besides Debian's.
const debugpyEnv = "IMAGECTL_TEST_DEBUGPY"

// pod is a stand-in for a Kubernetes pod's /tmp: a process in its own mount
// namespace with a tmpfs on /tmp, so /tmp/ray there is the pod's own and
// the machine's /tmp/ray is never touched.
type pod struct {
	name string
	cmd  *exec.Cmd
}

// podTestdata is where a pod holds the test's own files (the worker
// script, extra debugpy trees), outside its /tmp/ray.
const podTestdata = "/tmp/imagectl-test"

// root is the pod's file system seen from the test.
func (p *pod) root() string { return fmt.Sprintf("/proc/%d/root", p.cmd.Process.Pid) }

// requireNamespaces skips the Ray tree tests where they cannot run; under
// IMAGECTL_REQUIRE_TOOLS=1 (the test command runs as root with util-linux
// installed) they fail instead.
func requireNamespaces(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "the Ray tree tests need root: they mount a tmpfs on /tmp in new mount namespaces (unshare -m)")
	}
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.SkipOrFail(t, "%s (util-linux) not found on PATH: the Ray tree tests need it for mount namespaces", tool)
		}
	}
}

// newPod starts the pod's namespace holder and lays out Ray's tree in it:
// the session directory, the session_latest symlink, the job's working_dir
// package and its py_modules package.
func newPod(t *testing.T, name string) *pod {
	t.Helper()
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", `mount -t tmpfs -o mode=1777 imagectl-test /tmp && echo ready && exec sleep 3600`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the %s pod's namespace: %v", name, err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		testutil.SkipOrFail(t, "cannot make a mount namespace with a tmpfs on /tmp here (unshare -m; mount -t tmpfs): %q %v: %s", line, err, stderr.String())
	}
	p := &pod{name: name, cmd: cmd}
	copyTree(t, "testdata/raytree/working_dir", p.root()+rayWorkingDir)
	copyTree(t, "testdata/raytree/py_modules", p.root()+rayPyModules)
	// The worker script goes into the pod too: the tmpfs hides the
	// checkout when it lies under /tmp.
	if err := os.MkdirAll(p.root()+podTestdata, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.root()+podTestdata+"/rayworker.py", probetest.RayWorker, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(raySession, p.root()+"/tmp/ray/session_latest"); err != nil {
		t.Fatal(err)
	}
	return p
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatalf("laying out %s: %v", to, err)
	}
}

// rayWorker is smoke/probe/probetest's rayworker.py running one task in a pod.
type rayWorker struct {
	cmd    *exec.Cmd
	stdout *syncbuf.Buffer
	stderr *syncbuf.Buffer
	done   chan struct{}
	err    error
}

var listeningRe = regexp.MustCompile(`Ray debugger is listening on ([0-9.]+):([0-9]+)`)

// startRayWorker starts the task module.function(arg) in p's mount
// namespace the way Ray starts a worker for a job: cwd is the working_dir
// package, PYTHONPATH holds it and the py_modules directory. It returns
// once debugpy listens.
func startRayWorker(t *testing.T, p *pod, debugpyPath string, env []string, module, function string, arg int) (*rayWorker, string) {
	t.Helper()
	script := podTestdata + "/rayworker.py"
	pythonPath := rayWorkingDir + ":" + rayPyModules
	if debugpyPath != "" {
		// A copy in the pod: the pod's tmpfs hides a tree under /tmp.
		inPod := fmt.Sprintf("%s/debugpy-%d", podTestdata, time.Now().UnixNano())
		copyTree(t, debugpyPath, p.root()+inPod)
		pythonPath = inPod + ":" + pythonPath
	}
	w := &rayWorker{stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, done: make(chan struct{})}
	w.cmd = exec.Command("nsenter", "--target", strconv.Itoa(p.cmd.Process.Pid), "--mount", "--",
		"sh", "-c", `cd "$0" && exec "$@"`, rayWorkingDir, systemPython, script, module, function, strconv.Itoa(arg))
	w.cmd.Env = append(os.Environ(), append([]string{"PYTHONPATH=" + pythonPath, "PYTHONDONTWRITEBYTECODE=1"}, env...)...)
	w.cmd.Stderr = w.stderr
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Its own process group: debugpy.listen starts an adapter subprocess.
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.stdout.Write([]byte(sc.Text() + "\n"))
			if m := listeningRe.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1] + ":" + m[2]
			}
		}
		io.Copy(io.Discard, out)
	}()
	go func() { w.err = w.cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		<-w.done
	})
	select {
	case a := <-addr:
		return w, a
	case <-w.done:
		t.Fatalf("worker exited before listening: %v\nstdout:\n%s\nstderr:\n%s", w.err, w.stdout, w.stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("worker did not listen within 60s\nstdout:\n%s\nstderr:\n%s", w.stdout, w.stderr)
	}
	return nil, ""
}

func (w *rayWorker) waitOutput(t *testing.T, want string) {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("worker still running 60s after the attach\nstdout:\n%s\nstderr:\n%s", w.stdout, w.stderr)
	}
	if !strings.Contains(w.stdout.String(), want) {
		t.Errorf("worker (exit %v) did not print %q:\nstdout:\n%s\nstderr:\n%s", w.err, want, w.stdout, w.stderr)
	}
}

// shippedLocalRoots returns the localRoot values the image ships, read
// through the code that writes them: the settings.json a build writes from
// matrix.yaml, and the settings inject's postStart script rewrites (run with
// python3 on that file). The key names the sources of each value.
func shippedLocalRoots(t *testing.T) map[string]string {
	t.Helper()
	cfg, err := matrix.Load("../../matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	built, err := extensions.SettingsJSON(imagespec.ImageSettings(cfg.Settings))
	if err != nil {
		t.Fatal(err)
	}
	roots := map[string][]string{}
	roots[extensionLocalRoot(t, "matrix.yaml", built)] = append(roots[extensionLocalRoot(t, "matrix.yaml", built)], "matrix.yaml")

	res, err := inject.Apply(context.Background(), "rayjob-plain.yaml", mustReadFile(t, "../../inject/testdata/rayjob-plain.yaml"),
		inject.WithImage("example.invalid/code-server-ray:test"), inject.WithDashboard("10.0.0.7:8265"))
	if err != nil {
		t.Fatal(err)
	}
	script := postStartScript(t, res.Output)
	settings := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(settings, built, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(script[2], imagespec.SettingsPath); n != 1 {
		t.Fatalf("inject's postStart script names %s %d times, want 1: %q", imagespec.SettingsPath, n, script[2])
	}
	cmd := exec.Command(systemPython, script[1], strings.Replace(script[2], imagespec.SettingsPath, settings, 1), script[3])
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("inject's postStart script %q: %v\n%s", script, err, out)
	}
	rewritten := mustReadFile(t, settings)
	l := extensionLocalRoot(t, "inject's postStart", rewritten)
	roots[l] = append(roots[l], "inject postStart")

	out := map[string]string{}
	for l, from := range roots {
		out[strings.Join(from, "+")] = l
	}
	return out
}

// extensionLocalRoot is the localRoot the extension attaches with for the
// first cluster of settings: `localRoot ?? "${workspaceFolder}"`, where
// VS Code's ${workspaceFolder} is the folder code-server opens
// (inject.Workspace, DEFAULT_WORKSPACE).
func extensionLocalRoot(t *testing.T, from string, settings []byte) string {
	t.Helper()
	var s map[string]json.RawMessage
	if err := json.Unmarshal(settings, &s); err != nil {
		t.Fatalf("%s: %v", from, err)
	}
	var dash []map[string]*string
	if err := json.Unmarshal(s[imagespec.SettingClusterDashboards], &dash); err != nil || len(dash) == 0 {
		t.Fatalf("%s: %s is %s", from, imagespec.SettingClusterDashboards, s[imagespec.SettingClusterDashboards])
	}
	if l := dash[0]["localRoot"]; l != nil {
		return *l
	}
	return inject.Workspace
}

// postStartScript returns the sidecar's postStart command in inject's
// output.
func postStartScript(t *testing.T, manifest []byte) []string {
	t.Helper()
	var doc struct {
		Spec struct {
			RayClusterSpec struct {
				HeadGroupSpec struct {
					Template struct {
						Spec struct {
							Containers []struct {
								Name      string `json:"name"`
								Lifecycle struct {
									PostStart struct {
										Exec struct {
											Command []string `json:"command"`
										} `json:"exec"`
									} `json:"postStart"`
								} `json:"lifecycle"`
							} `json:"containers"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"headGroupSpec"`
			} `json:"rayClusterSpec"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(manifest, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers {
		if cmd := c.Lifecycle.PostStart.Exec.Command; c.Name == inject.DefaultName && len(cmd) == 4 {
			return cmd
		}
	}
	t.Fatalf("inject's output has no postStart command of 4 words on %s:\n%s", inject.DefaultName, manifest)
	return nil
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// debugpyBuilds returns "" (Debian's python3-debugpy) and the trees named
// by IMAGECTL_TEST_DEBUGPY, each with the version it reports.
func debugpyBuilds(t *testing.T) map[string]string {
	t.Helper()
	testutil.RequireDebugpy(t, systemPython)
	builds := map[string]string{}
	paths := []string{""}
	if v := os.Getenv(debugpyEnv); v != "" {
		paths = append(paths, strings.Split(v, ":")...)
	}
	for _, p := range paths {
		cmd := exec.Command(systemPython, "-c", "import debugpy; print(debugpy.__version__)")
		cmd.Env = append(os.Environ(), "PYTHONPATH="+p)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s=%s: import debugpy: %v", debugpyEnv, p, err)
		}
		v := strings.TrimSpace(string(out))
		if p != "" {
			v += " (" + p + ")"
		}
		builds[v] = p
	}
	return builds
}

// TestSourceOpensOnRayTree attaches to tasks paused at breakpoint() on a
// Ray tree laid out as on a real cluster, with the extension's exact attach
// arguments built from the localRoot the image ships, and requires, for a
// task on the head and on a worker pod, in the driver file, a working_dir
// module and a py_modules module: the top task frame's source opens from
// the sidecar's view (the head pod's /tmp/ray) and a breakpoint set on the
// sidecar's copy of the file is verified.
func TestSourceOpensOnRayTree(t *testing.T) {
	requireNamespaces(t)
	builds := debugpyBuilds(t)
	roots := shippedLocalRoots(t)
	head, worker := newPod(t, "head"), newPod(t, "worker")
	tasks := []struct {
		module, function, file string
		arg                    int
		result                 string
	}{
		{"driver", "square", rayWorkingDir + "/driver.py", 3, "RESULT 9"},
		{"helpers", "cube", rayWorkingDir + "/helpers.py", 2, "RESULT 8"},
		{"mypkg.ops", "double", rayPyModules + "/mypkg/ops.py", 4, "RESULT 8"},
	}
	for _, version := range slices.Sorted(maps.Keys(builds)) {
		for _, from := range slices.Sorted(maps.Keys(roots)) {
			for _, p := range []*pod{head, worker} {
				for _, task := range tasks {
					name := fmt.Sprintf("%s pod %s.%s, debugpy %s, localRoot %q from %s", p.name, task.module, task.function, version, roots[from], from)
					t.Run(subtestName(name), func(t *testing.T) {
						w, addr := startRayWorker(t, p, builds[version], nil, task.module, task.function, task.arg)
						res, err := Attach(testCtx(t), addr, WithLocalRoot(roots[from]), WithSourceRoot(head.root()),
							WithExpect(Expect{Function: task.function}), WithStepTimeout(30*time.Second), WithStopTimeout(30*time.Second))
						if err != nil {
							t.Fatalf("Attach: %v\nframes: %s\nsource: %+v\nworker stderr:\n%s", err, framesString(res.Frames), res.Source, w.stderr)
						}
						want := &SourceCheck{Path: task.file, Opened: "path", BreakpointLine: res.Frame.Line, BreakpointVerified: true}
						if diff := cmp.Diff(want, res.Source, cmpopts.IgnoreFields(SourceCheck{}, "BreakpointMessage")); diff != "" {
							t.Errorf("source of %s (-want +got):\n%s", task.function, diff)
						}
						w.waitOutput(t, task.result)
					})
				}
			}
		}
	}
}

// TestSourceCheckFailsOnAWrongLocalRoot is the control of the test above:
// the localRoot the image shipped before (the folder code-server opens)
// maps the worker's cwd onto a directory where the task's file is not, and
// the probe says so, for every debugpy build.
func TestSourceCheckFailsOnAWrongLocalRoot(t *testing.T) {
	requireNamespaces(t)
	builds := debugpyBuilds(t)
	head := newPod(t, "head")
	for _, version := range slices.Sorted(maps.Keys(builds)) {
		t.Run(subtestName("debugpy "+version), func(t *testing.T) {
			w, addr := startRayWorker(t, head, builds[version], nil, "driver", "square", 5)
			res, err := Attach(testCtx(t), addr, WithLocalRoot(inject.Workspace), WithSourceRoot(head.root()),
				WithExpect(Expect{Function: "square"}), WithStepTimeout(30*time.Second), WithStopTimeout(30*time.Second))
			if !errors.Is(err, ErrSourceNotOpened) {
				t.Fatalf("Attach error = %v, want ErrSourceNotOpened; source %+v", err, res.Source)
			}
			if want := inject.Workspace + "/driver.py"; res.Source == nil || res.Source.Path != want || res.Source.Opened != "" {
				t.Errorf("source %+v, want the unmapped-onto path %s not opened", res.Source, want)
			}
			w.waitOutput(t, "RESULT 25")
		})
	}
}

// TestPostMortemOnRayTree freezes tasks that raise under Ray's post-mortem
// semantics (RAY_DEBUG_POST_MORTEM=1) and requires the probe to attach,
// see the stop on the exception in the raising frame, get the exception's
// description, open that frame's source, and let the task fail normally.
func TestPostMortemOnRayTree(t *testing.T) {
	requireNamespaces(t)
	builds := debugpyBuilds(t)
	head, worker := newPod(t, "head"), newPod(t, "worker")
	cases := []struct {
		pod                    *pod
		module, function, file string
		exception, output      string
	}{
		{head, "driver", "divide", rayWorkingDir + "/driver.py", "ZeroDivisionError", "TASK ERROR ZeroDivisionError"},
		{worker, "mypkg.ops", "fail", rayPyModules + "/mypkg/ops.py", "ValueError", "TASK ERROR ValueError: bad input 6"},
	}
	for _, version := range slices.Sorted(maps.Keys(builds)) {
		for _, c := range cases {
			t.Run(subtestName(fmt.Sprintf("%s pod %s.%s, debugpy %s", c.pod.name, c.module, c.function, version)), func(t *testing.T) {
				w, addr := startRayWorker(t, c.pod, builds[version], []string{"RAY_DEBUG_POST_MORTEM=1"}, c.module, c.function, 6)
				res, err := Attach(testCtx(t), addr, WithPostMortem(true), WithSourceRoot(head.root()),
					WithExpect(Expect{Function: c.function}), WithStepTimeout(30*time.Second), WithStopTimeout(30*time.Second))
				if err != nil {
					t.Fatalf("Attach: %v\nframes: %s\nworker stderr:\n%s", err, framesString(res.Frames), w.stderr)
				}
				if res.StopReason != "exception" || len(res.Frames) == 0 || res.Frames[0].Name != c.function || res.Frames[0].Path != c.file {
					t.Errorf("stopped (reason %q) at %s, want reason \"exception\" with %s in %s on top", res.StopReason, framesString(res.Frames), c.function, c.file)
				}
				if res.Exception == nil || !strings.Contains(res.Exception.ID, c.exception) {
					t.Errorf("exception info %+v, want %s", res.Exception, c.exception)
				}
				if res.Source == nil || res.Source.Opened != "path" || !res.Source.BreakpointVerified {
					t.Errorf("source %+v: want it opened by path and a verified breakpoint", res.Source)
				}
				w.waitOutput(t, c.output)
			})
		}
	}
}

// TestPostMortemRefusesABreakpointStop: a task stopped at breakpoint() is
// not a post-mortem stop.
func TestPostMortemRefusesABreakpointStop(t *testing.T) {
	requireNamespaces(t)
	testutil.RequireDebugpy(t, systemPython)
	head := newPod(t, "head")
	w, addr := startRayWorker(t, head, "", nil, "helpers", "cube", 3)
	res, err := Attach(testCtx(t), addr, WithPostMortem(true), WithSourceRoot(head.root()),
		WithExpect(Expect{Function: "cube"}), WithStepTimeout(30*time.Second), WithStopTimeout(30*time.Second))
	if !errors.Is(err, ErrNotPostMortem) {
		t.Fatalf("Attach error = %v, want ErrNotPostMortem (stop reason %q)", err, res.StopReason)
	}
	w.waitOutput(t, "RESULT 27")
}

// subtestName keeps a subtest name on one level: paths in it lose their
// slashes, which -run would read as levels.
func subtestName(s string) string { return strings.ReplaceAll(s, "/", "|") }
