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

// buildBinaries are the commands make build builds: imagectl, and
// imagectl-probe (smoke attach alone, copied into the code-server sidecar).
var buildBinaries = []string{"imagectl", "imagectl-probe"}

// TestBuildStripsSymbols: make build, what the release workflows run,
// builds each of buildBinaries as a stripped, path-trimmed static binary
// (go build -trimpath -ldflags '-s -w ...', as ko's and kind's releases are
// built) with the version set, and no workflow builds cmd/imagectl (or
// cmd/imagectl-probe) any other way.
func TestBuildStripsSymbols(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		testutil.SkipOrFail(t, "make not found on PATH: make -n build prints the build command")
	}
	out, err := exec.Command("make", "--no-print-directory", "-n", "build", "VERSION=v0.0.0-test").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	for _, bin := range buildBinaries {
		var build string
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); strings.Contains(l, " build ") && len(f) > 0 && f[len(f)-1] == "./cmd/"+bin {
				build = l
			}
		}
		if build == "" {
			t.Errorf("make -n build prints no go build of ./cmd/%s:\n%s", bin, out)
			continue
		}
		if !strings.Contains(build, "CGO_ENABLED=0") || !strings.Contains(build, " -trimpath ") {
			t.Errorf("make build: %s\nwant CGO_ENABLED=0 and -trimpath", build)
		}
		if !strings.Contains(build, " -o bin/"+bin+" ") {
			t.Errorf("make build: %s\nwant -o bin/%s", build, bin)
		}
		m := regexp.MustCompile(`-ldflags '([^']*)'`).FindStringSubmatch(build)
		if m == nil {
			t.Errorf("make build: %s\nwant -ldflags '...'", build)
			continue
		}
		flags := strings.Fields(m[1])
		for _, want := range []string{"-s", "-w", "-X"} {
			found := false
			for _, f := range flags {
				found = found || f == want
			}
			if !found {
				t.Errorf("make build's -ldflags %q for %s lack %s", m[1], bin, want)
			}
		}
		// options/base holds the link-time version of both binaries.
		if !strings.Contains(m[1], "/cmd/imagectl/app/options/base.Version=v0.0.0-test") {
			t.Errorf("make build's -ldflags %q for %s do not set the version (options/base.Version)", m[1], bin)
		}
	}

	// The SBOM scanner is a module of its own: make build builds it with
	// go -C into bin/ beside imagectl, where imagectl looks for it.
	var scanner string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "-C cmd/imagectl-sbom build ") {
			scanner = l
		}
	}
	switch {
	case scanner == "":
		t.Errorf("make -n build prints no go -C cmd/imagectl-sbom build:\n%s", out)
	case !strings.Contains(scanner, "CGO_ENABLED=0") || !strings.Contains(scanner, " -trimpath ") || !strings.Contains(scanner, "-ldflags '-s -w'"):
		t.Errorf("make build: %s\nwant CGO_ENABLED=0, -trimpath and -ldflags '-s -w'", scanner)
	case !regexp.MustCompile(`-o \S*/bin/imagectl-sbom \.$`).MatchString(strings.TrimSpace(scanner)):
		t.Errorf("make build: %s\nwant -o .../bin/imagectl-sbom, beside bin/imagectl", scanner)
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
