package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Integration tests with the real runc (and QEMU for arm64) on the
// fixture images of fixture_test.go.

func smokeLayout(t *testing.T, dir string, platforms ...string) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	tr := newTestRunc(t)
	rep, err := Archive(ctx, dir, WithRuntime(tr.Runc), WithWorkDir(tr.work), WithPlatforms(platforms...),
		WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))), WithBootTimeout(4*time.Minute), WithStepTimeout(4*time.Minute))
	if err != nil {
		t.Fatalf("Archive: %v", err)
	}
	var sb strings.Builder
	rep.WriteText(&sb)
	t.Logf("report:\n%s", sb.String())
	tr.assertClean(t)
	return rep
}

// testRunc is a runc runtime that owns all of its state: its own runc
// state directory (--root) and its own work directory, so that what the
// test asserts on is never another test's, or a user's, container.
type testRunc struct {
	*Runc
	root string
	work string
}

func newTestRunc(t *testing.T) *testRunc {
	t.Helper()
	tr := &testRunc{root: t.TempDir(), work: t.TempDir()}
	tr.Runc = NewRunc(WithRuncRoot(tr.root), WithRuncWorkDir(tr.work))
	return tr
}

// list is the ids of the containers in the test's runc root.
func (tr *testRunc) list(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("runc", "--root", tr.root, "list", "--quiet").Output()
	if err != nil {
		t.Fatalf("runc --root %s list: %v", tr.root, err)
	}
	return strings.Fields(string(out))
}

// assertClean checks that nothing of the test's smoke is left: no
// container in its runc root, nothing in its work directory, no mount
// below either.
func (tr *testRunc) assertClean(t *testing.T) {
	t.Helper()
	for _, id := range tr.list(t) {
		t.Errorf("runc container %s left behind in %s", id, tr.root)
	}
	for _, dir := range []string{tr.root, tr.work} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			t.Errorf("left behind in %s: %s", dir, e.Name())
		}
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(mi), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		for _, dir := range []string{tr.root, tr.work} {
			if f[4] == dir || strings.HasPrefix(f[4], dir+"/") {
				t.Errorf("a mount below %s is left: %s", dir, l)
			}
		}
	}
}

func line(t *testing.T, rep *Report, platform, check string) Line {
	t.Helper()
	for _, p := range rep.Platforms {
		if p.Platform != platform {
			continue
		}
		for _, l := range p.Lines {
			if l.Check == check {
				return l
			}
		}
	}
	t.Fatalf("no %s line for %s", check, platform)
	return Line{}
}

func wantLine(t *testing.T, rep *Report, platform, check string, st Status, detail string) {
	t.Helper()
	l := line(t, rep, platform, check)
	if l.Status != st {
		t.Errorf("%s %s: status %s, want %s: %s", platform, check, l.Status, st, l.Detail)
	}
	if detail != "" && !regexp.MustCompile(detail).MatchString(l.Detail) {
		t.Errorf("%s %s: detail %q does not match /%s/", platform, check, l.Detail, detail)
	}
}

func TestRuncSmokeAmd64(t *testing.T) {
	requireRunc(t, "amd64")
	set := fixtureSet(t, "amd64")
	img := fixtureImage(t, "amd64", set, fixtureOpts{})
	rep := smokeLayout(t, writeLayout(t, img))
	wantLine(t, rep, "linux/amd64", CheckPython, Pass, `python3 on the image's PATH is /opt/imagectl/python/bin/python3 -> /usr/bin/python3\.11 \(Python 3\.11\.\d+, x86_64\); debugpy .* and ray 2\.46\.0 import from /opt/imagectl/python/lib/python3\.11/site-packages at the locked versions; 3 distributions, 1 ELF files all x86-64, 1 shared objects load`)
	wantLine(t, rep, "linux/amd64", CheckDebugger, Pass, `stopped \(\w+\) in smoke_target at /\.imagectl-smoke/breakpoint\.py:25 \(the line after breakpoint\(\)\), continued; the script printed IMAGECTL-SMOKE-RESULT 49 and exited 0`)
	wantLine(t, rep, "linux/amd64", CheckPostMortem, Pass, `stopped \(exception\) in smoke_fail at /\.imagectl-smoke/breakpoint\.py:29, exception ValueError\b.* \(imagectl smoke: task failed on 7\), continued; the script printed IMAGECTL-SMOKE-TASK-ERROR ValueError and exited 0`)
	need(t, line(t, rep, "linux/amd64", CheckCodeServer).Status != Skip,
		"no code-server in the amd64 stand-in: run hack/deps.d/20-node.sh and 35-base-images.sh")
	wantLine(t, rep, "linux/amd64", CheckCodeServer, Pass, `the entrypoint \["/init"\] started code-server, which answered http://127\.0\.0\.1:8443/healthz \(status \w+\); --list-extensions --show-versions as user abc equals the lock \(imagectl-test\.hello@1\.0\.0\)`)
	if !rep.OK || rep.Err() != nil {
		t.Errorf("report not OK: %v", rep.Err())
	}
}

func TestRuncSmokeArm64(t *testing.T) {
	requireRunc(t, "arm64")
	set := fixtureSet(t, "arm64")
	img := fixtureImage(t, "arm64", set, fixtureOpts{})
	rep := smokeLayout(t, writeLayout(t, img))
	wantLine(t, rep, "linux/arm64", CheckPython, Pass, `\(Python 3\.11\.\d+, aarch64\); .* 1 ELF files all AArch64, 1 shared objects load`)
	wantLine(t, rep, "linux/arm64", CheckDebugger, Pass, `in smoke_target at /\.imagectl-smoke/breakpoint\.py:25 \(the line after breakpoint\(\)\), continued`)
	wantLine(t, rep, "linux/arm64", CheckCodeServer, Skip, `the image has no /app/code-server/bin/code-server`)
	if rep.Err() != nil {
		t.Errorf("report not OK: %v", rep.Err())
	}
}

// The deliberately broken images fail with a clear line: an amd64 wheel's
// compiled module inside the arm64 image, a PATH that misses the
// interpreter, settings without the interpreter path.
func TestRuncSmokeBroken(t *testing.T) {
	requireRunc(t, "arm64")
	requireRunc(t, "amd64")
	set := fixtureSet(t, "amd64", "arm64")
	wrongArch := fixtureImage(t, "arm64", set, fixtureOpts{soArch: "amd64"})
	noPath := fixtureImage(t, "amd64", set, fixtureOpts{path: DefaultPath})
	rep := smokeLayout(t, writeLayout(t, noPath, wrongArch))
	wantLine(t, rep, "linux/arm64", CheckPython, Fail, `compiled modules on linux/arm64: ray/_fixture/_json\.cpython-311-x86_64-linux-gnu\.so \(ray\) is x86-64 code, want AArch64`)
	wantLine(t, rep, "linux/arm64", CheckDebugger, Pass, "")
	wantLine(t, rep, "linux/amd64", CheckPython, Fail, `^python3 on the image's PATH \(/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\) is /usr/bin/python3, not the image's interpreter /opt/imagectl/python/bin/python3$`)
	// Only the interpreter on PATH is wrong: the rest of the image works.
	wantLine(t, rep, "linux/amd64", CheckDebugger, Pass, "")
	if l := line(t, rep, "linux/amd64", CheckCodeServer); l.Status != Skip {
		wantLine(t, rep, "linux/amd64", CheckCodeServer, Pass, "")
	}
	if rep.OK || rep.Err() == nil {
		t.Error("the report of broken images is OK")
	}
}

// A PATH without any python3 fails the python line with the runtime's
// message, and (the stand-in's entrypoint needs bash from PATH) the
// code-server line says the entrypoint exited.
func TestRuncSmokeNoPython(t *testing.T) {
	requireRunc(t, "amd64")
	set := fixtureSet(t, "amd64")
	rep := smokeLayout(t, writeLayout(t, fixtureImage(t, "amd64", set, fixtureOpts{path: "/usr/local/bin"})))
	wantLine(t, rep, "linux/amd64", CheckPython, Fail, `^python3 does not start with the image's environment \(PATH=/usr/local/bin\): .*executable file not found`)
	wantLine(t, rep, "linux/amd64", CheckDebugger, Fail, `executable file not found`)
	if l := line(t, rep, "linux/amd64", CheckCodeServer); l.Status != Skip {
		wantLine(t, rep, "linux/amd64", CheckCodeServer, Fail, `the entrypoint \["/init"\] exited before code-server answered http://127\.0\.0\.1:8443/healthz; its output: .*bash: not found`)
	}
}

func TestRuncSmokeNoInterpreterSetting(t *testing.T) {
	requireRunc(t, "amd64")
	set := fixtureSet(t, "amd64")
	rep := smokeLayout(t, writeLayout(t, fixtureImage(t, "amd64", set, fixtureOpts{noInterpreterSetting: true})))
	wantLine(t, rep, "linux/amd64", CheckPython, Pass, "")
	need(t, line(t, rep, "linux/amd64", CheckCodeServer).Status != Skip, "no code-server in the amd64 stand-in: run hack/deps.d/20-node.sh")
	wantLine(t, rep, "linux/amd64", CheckCodeServer, Fail, `^/config/data/User/settings\.json has no python\.defaultInterpreterPath$`)
}

// A cancelled smoke (what SIGINT does through the command's context)
// leaves nothing behind, wherever it stops; a container of someone else's
// named like a smoke's is not the test's business.
func TestRuncSmokeCancelCleansUp(t *testing.T) {
	requireRunc(t, "amd64")
	startDecoy(t)
	set := fixtureSet(t, "amd64")
	dir := writeLayout(t, fixtureImage(t, "amd64", set, fixtureOpts{}))
	for _, after := range []string{"create", "exec"} {
		t.Run(after, func(t *testing.T) {
			tr := newTestRunc(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rt := &cancelRuntime{Runtime: tr.Runc, after: after, cancel: cancel}
			rep, err := Archive(ctx, dir, WithRuntime(rt), WithWorkDir(tr.work))
			if err == nil {
				t.Fatalf("cancelled smoke returned no error: %+v", rep)
			}
			if !rt.fired {
				t.Fatal("the cancel point was never reached")
			}
			tr.assertClean(t)
		})
	}
}

// cancelRuntime cancels the context once the container exists ("create")
// or during the first exec ("exec").
type cancelRuntime struct {
	Runtime
	after  string
	cancel context.CancelFunc
	fired  bool
}

func (r *cancelRuntime) Create(ctx context.Context, p *Platform, s Spec) (Container, error) {
	c, err := r.Runtime.Create(ctx, p, s)
	if err != nil {
		return nil, err
	}
	if r.after == "create" {
		r.fired = true
		r.cancel()
	}
	return &cancelContainer{Container: c, r: r}, nil
}

type cancelContainer struct {
	Container
	r *cancelRuntime
}

func (c *cancelContainer) Exec(ctx context.Context, p Process) (*Result, error) {
	if c.r.after == "exec" && !c.r.fired {
		c.r.fired = true
		go func() { time.Sleep(500 * time.Millisecond); c.r.cancel() }()
	}
	return c.Container.Exec(ctx, p)
}

// Keep the compiler honest about the fixture helpers' types.
var _ v1.Layer = (*fileLayer)(nil)

func TestMain(m *testing.M) {
	// Integration tests unpack hundreds of MB; keep them out of a small /tmp.
	if d := os.Getenv("IMAGECTL_SMOKE_WORKDIR"); d != "" {
		os.Setenv("TMPDIR", filepath.Clean(d))
	}
	os.Exit(m.Run())
}

// SIGINT to `imagectl smoke image` while a container runs leaves nothing
// behind: the command's context is cancelled and cleanup runs without it.
// A container of someone else's named like a smoke's runs beside it.
func TestSmokeImageCommandSIGINTCleansUp(t *testing.T) {
	requireRunc(t, "amd64")
	startDecoy(t)
	set := fixtureSet(t, "amd64")
	dir := writeLayout(t, fixtureImage(t, "amd64", set, fixtureOpts{}))
	bin := buildCLI(t)
	tr := newTestRunc(t)
	cmd := exec.Command(bin, "smoke", "image", "--archive", dir, "--runtime", "runc", "--work-dir", tr.work, "--runc-root", tr.root)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the container exists.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ids, _ := exec.Command("runc", "--root", tr.root, "list", "--quiet").Output()
		if strings.Contains(string(ids), "imagectl-smoke-amd64-") {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no container appeared: %s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("interrupted smoke exited 0: %s", out.String())
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("smoke did not exit within 2m of SIGINT: %s", out.String())
	}
	t.Logf("output after SIGINT:\n%s", out.String())
	tr.assertClean(t)
}

// buildCLI builds imagectl.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "imagectl")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/imagectl").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return bin
}

// An image whose python3 and entrypoint flood their output ends, under
// ulimit -v of 3 GB for imagectl (and what it starts), in FAIL lines that
// say the output was truncated, within the timeouts, and leaves nothing
// behind.
func TestSmokeImageCommandFlood(t *testing.T) {
	requireRunc(t, "amd64")
	set := fixtureSet(t, "amd64")
	dir := writeLayout(t, fixtureImage(t, "amd64", set, fixtureOpts{flood: true}))
	bin := buildCLI(t)
	tr := newTestRunc(t)
	const step, boot = 30 * time.Second, 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `ulimit -v "$1" && shift && exec "$@"`, "sh", fmt.Sprint(floodLimitKiB),
		bin, "smoke", "image", "--archive", dir, "--runtime", "runc", "--work-dir", tr.work, "--runc-root", tr.root,
		"--step-timeout", step.String(), "--boot-timeout", boot.String())
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	t.Logf("after %s:\n%s", took.Round(time.Second), out)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("smoke image of a flooding image: %v, want exit code 1", err)
	}
	for _, want := range []string{
		`(?m)^linux/amd64 +python +FAIL running python3: context deadline exceeded before the process exited; its output: \[imagectl: \d+ bytes of output not kept\] \(output truncated; its last lines follow\)`,
		`(?m)^linux/amd64 +debugger +FAIL debugpy did not listen within 5s`,
		`(?m)^linux/amd64 +code-server +FAIL code-server did not answer .* within 5s .*entrypoint output: \[imagectl: \d+ bytes of output not kept\] \(output truncated; its last lines follow\)\nentrypoint-flood`,
		`(?m)^FAILED$`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("no match for /%s/", want)
		}
	}
	if max := 2*step + 2*boot + 2*time.Minute; took > max {
		t.Errorf("took %s, want at most %s", took, max)
	}
	tr.assertClean(t)
}

// startDecoy creates (does not start) a container named as a smoke's in
// runc's default state directory, as a user's own imagectl smoke image or
// another test package would have one: the tests above must pass beside
// it. Its root filesystem is the host's /usr, bound read-only.
func startDecoy(t *testing.T) {
	t.Helper()
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	mounts := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc"},
		{Destination: "/usr", Type: "bind", Source: "/usr", Options: []string{"rbind", "ro"}},
	}
	for _, d := range []string{"bin", "sbin", "lib", "lib64"} {
		host := "/" + d
		if target, err := os.Readlink(host); err == nil {
			if err := os.Symlink(target, filepath.Join(rootfs, d)); err != nil {
				t.Fatal(err)
			}
		} else if fi, err := os.Stat(host); err == nil && fi.IsDir() {
			mounts = append(mounts, specs.Mount{Destination: host, Type: "bind", Source: host, Options: []string{"rbind", "ro"}})
		}
	}
	spec := specs.Spec{
		Version: "1.0.2",
		Process: &specs.Process{Args: []string{"/bin/sh", "-c", "sleep 600"}, Env: []string{"PATH=" + DefaultPath}, Cwd: "/", Capabilities: sidecarCaps()},
		Root:    &specs.Root{Path: "rootfs", Readonly: true},
		Mounts:  mounts,
		Linux:   &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.MountNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}, {Type: specs.NetworkNamespace}}},
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	id := randomID("amd64") + "-decoy"
	// runc init keeps runc create's stdio: a file, not a pipe that would
	// never reach EOF.
	logPath := filepath.Join(bundle, "create.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command("runc", "create", "--bundle", bundle, id)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Run(); err != nil {
		out, _ := os.ReadFile(logPath)
		t.Fatalf("runc create %s (the decoy): %v: %s", id, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("runc", "delete", "--force", id).CombinedOutput(); err != nil {
			t.Errorf("runc delete --force %s (the decoy): %v: %s", id, err, out)
		}
	})
}
