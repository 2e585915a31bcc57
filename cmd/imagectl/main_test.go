package main

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/gallerytest"
	"github.com/imagectl/imagectl/internal/testutil"
)

// TestMain runs imagectl itself (run, with its signal handling) when the
// test binary is re-executed with IMAGECTL_TEST_MAIN set to the arguments,
// one per line.
func TestMain(m *testing.M) {
	if args := os.Getenv("IMAGECTL_TEST_MAIN"); args != "" {
		os.Exit(run(strings.Split(args, "\n")))
	}
	if pidFile := os.Getenv("IMAGECTL_TEST_STUCK"); pidFile != "" {
		os.Exit(handleSignals(func(context.Context) int { return stuckVerb(pidFile) }))
	}
	os.Exit(m.Run())
}

// stuckVerb stands for a verb whose clean-up hangs on a child process: it
// starts a shell in a process group of its own that ignores SIGINT and
// SIGTERM and has a child of its own, writes the shell's pid to pidFile, and
// waits for the shell however often it is interrupted.
func stuckVerb(pidFile string) int {
	cmd := exec.Command("sh", "-c", `trap "" INT TERM; sleep 300 & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return 3
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return 3
	}
	_ = cmd.Wait()
	return 0
}

// alive reports whether process group pgid has a member that is not a
// zombie.
func alive(t *testing.T, pgid int) bool {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			return true
		}
	}
	return false
}

// A second Ctrl-C ends imagectl with exit 130 within 2 s, and with it its
// child processes, even those in a process group of their own that ignore
// the signal.
func TestSecondInterruptKillsChildren(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc/self/stat: the second-interrupt kill and this test find child processes through /proc (Linux only)")
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "IMAGECTL_TEST_STUCK="+pidFile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var pgid int
	for deadline := time.Now().Add(30 * time.Second); pgid == 0; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
			pgid, _ = strconv.Atoi(string(b))
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child never started")
		}
	}
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	for range 2 {
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	sent := time.Now()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("exit %v after two interrupts, want 130; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("still running 10 s after the second interrupt")
	}
	for alive(t, pgid) {
		if time.Since(sent) > 2*time.Second {
			t.Fatalf("the child's process group %d is still alive 2 s after the second interrupt", pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bigStored returns vsix plus n MiB of incompressible data in stored
// entries under extension/dist/.
func bigStored(t *testing.T, vsix []byte, n int) []byte {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	chunk := make([]byte, 1<<20)
	return testutil.EditZip(t, vsix, nil, func(zw *zip.Writer) {
		for i := range n {
			w, err := zw.CreateHeader(&zip.FileHeader{Name: "extension/dist/part" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + ".bin", Method: zip.Store})
			if err != nil {
				t.Fatal(err)
			}
			for j := 0; j < len(chunk); j += 8 {
				v := r.Uint64()
				for k := range 8 {
					chunk[j+k] = byte(v >> (8 * k))
				}
			}
			w.Write(chunk)
		}
	})
}

// SIGINT during "extensions layout" of a large extension stops it within a
// second, and what it had written is removed.
func TestInterruptedLayoutStopsAndCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a few hundred MB; skipped with -short")
	}
	builds, err := gallerytest.LoadDir(gallerytest.FixtureDir())
	if err != nil {
		t.Fatal(err)
	}
	f := gallerytest.New(builds)
	defer f.Close()
	root := filepath.Join("..", "..")
	tmp := t.TempDir()
	catPath := filepath.Join(tmp, "catalog.json")
	if err := f.WriteCatalog(context.Background(), filepath.Join(root, "catalog.json"), catPath); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(tmp, "cache")
	base := []string{"--matrix", filepath.Join(root, "matrix.yaml"), "--catalog", catPath}
	var out, errb bytes.Buffer
	if code := app.Run(context.Background(), append(base, "extensions", "fetch", "--ray", "2.46.0", "--platform", "linux/amd64",
		"--cache-dir", cacheDir, "--marketplace-url", f.MarketplaceURL()), &out, &errb); code != 0 {
		t.Fatalf("fetch: exit %d\n%s", code, errb.String())
	}
	m := regexp.MustCompile(`ms-python\.python\s+(\S+)\s+linux-x64`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no ms-python.python linux-x64 in:\n%s", out.String())
	}
	version := m[1]
	var body []byte
	for _, bl := range builds {
		if bl.ID == "ms-python.python" && bl.Version == version && bl.TargetPlatform == "linux-x64" {
			body = bl.Body
		}
	}
	// Replace the cached file with a 128 MiB one of the same identity
	// (the catalog pins nothing, so the index decides).
	big := bigStored(t, body, 128)
	c, err := cache.Open(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.NewWriter()
	if err != nil {
		t.Fatal(err)
	}
	w.Write(big)
	if _, err := w.Commit(cache.Entry{Key: cache.Key{ID: "ms-python.python", Version: version, TargetPlatform: "linux-x64"}}, ""); err != nil {
		t.Fatal(err)
	}
	big = nil

	dir := filepath.Join(tmp, "layout")
	args := append(base, "extensions", "layout", "--ray", "2.46.0", "--platform", "linux/amd64", "--out", dir, "--cache-dir", cacheDir)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "IMAGECTL_TEST_MAIN="+strings.Join(args, "\n"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Interrupt once extraction of the large extension has started.
	target := filepath.Join(dir, "ms-python.python-"+version, "dist")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(target); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("layout ended (%v) before it was interrupted; stderr:\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("layout never started extracting the large extension")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	select {
	case err := <-done:
		if el := time.Since(sent); el > time.Second {
			t.Errorf("exited %v after SIGINT, want within a second", el)
		}
		if err == nil {
			t.Fatalf("layout finished with exit 0: the interrupt was ignored; stderr:\n%s", stderr.String())
		}
		// The signal's cause, as the extraction's reads return it
		// (a check between extensions would only say "context canceled").
		if !strings.Contains(stderr.String(), "interrupt signal received") {
			t.Errorf("stderr does not say the extraction was interrupted:\n%s", stderr.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("still running 10 s after SIGINT")
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		ents, _ := os.ReadDir(dir)
		t.Errorf("the interrupted layout left %s behind (%d entries): %v", dir, len(ents), err)
	}
}
