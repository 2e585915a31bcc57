package imagectl_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/internal/testutil"
)

// TestBuildStripsSymbols: make build, what the release workflows run,
// builds a stripped, path-trimmed static binary (go build -trimpath
// -ldflags '-s -w ...', as ko's and kind's releases are built), and no
// workflow builds cmd/imagectl any other way.
func TestBuildStripsSymbols(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		testutil.SkipOrFail(t, "make not found on PATH: make -n build prints the build command")
	}
	out, err := exec.Command("make", "--no-print-directory", "-n", "build", "VERSION=v0.0.0-test").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	var build string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, " build ") && strings.Contains(l, "./cmd/imagectl") {
			build = l
		}
	}
	if build == "" {
		t.Fatalf("make -n build prints no go build of ./cmd/imagectl:\n%s", out)
	}
	if !strings.Contains(build, "CGO_ENABLED=0") || !strings.Contains(build, " -trimpath ") {
		t.Errorf("make build: %s\nwant CGO_ENABLED=0 and -trimpath", build)
	}
	m := regexp.MustCompile(`-ldflags '([^']*)'`).FindStringSubmatch(build)
	if m == nil {
		t.Fatalf("make build: %s\nwant -ldflags '...'", build)
	}
	flags := strings.Fields(m[1])
	for _, want := range []string{"-s", "-w", "-X"} {
		found := false
		for _, f := range flags {
			found = found || f == want
		}
		if !found {
			t.Errorf("make build's -ldflags %q lack %s", m[1], want)
		}
	}
	if !strings.Contains(m[1], "options/base.Version=v0.0.0-test") {
		t.Errorf("make build's -ldflags %q do not set the version", m[1])
	}

	// The workflows build the binary with make build only.
	wfs, err := filepath.Glob(".github/workflows/*.yml")
	if err != nil || len(wfs) == 0 {
		t.Fatalf("no workflows under .github/workflows (%v)", err)
	}
	makes := 0
	for _, wf := range wfs {
		b, err := os.ReadFile(wf)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "go build") && strings.Contains(l, "cmd/imagectl") {
				t.Errorf("%s:%d builds imagectl without make build: %s", wf, i+1, strings.TrimSpace(l))
			}
			if strings.Contains(l, "make build") {
				makes++
			}
		}
	}
	if makes == 0 {
		t.Error("no workflow runs make build: where are the release binaries built?")
	}
}
