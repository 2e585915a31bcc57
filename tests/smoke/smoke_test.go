package smoketest_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imagectl/imagectl/smoke/kind"
)

// TestSmoke runs the kind + KubeRay harness against the image named by
// IMAGECTL_SMOKE_IMAGE. Where Docker, kubectl, git or the network are
// missing it skips with exactly that reason; with IMAGECTL_SMOKE_REQUIRE=1
// (the smoke workflow) a skip is a failure. It is never reported as passing
// without having run. IMAGECTL_SMOKE_DEBUG=1 (the smoke workflow) runs
// imagectl debug too, after the manual steps (kind.Config.Debug).
func TestSmoke(t *testing.T) {
	skip := func(reason string) {
		t.Helper()
		if os.Getenv("IMAGECTL_SMOKE_REQUIRE") == "1" {
			t.Fatal("IMAGECTL_SMOKE_REQUIRE=1 but the smoke test cannot run: " + reason)
		}
		t.Skip(reason)
	}
	ctx := context.Background()
	if err := kind.Preflight(ctx); err != nil {
		var se *kind.SkipError
		if errors.As(err, &se) {
			skip(se.Reason)
		}
		t.Fatal(err)
	}
	image := os.Getenv("IMAGECTL_SMOKE_IMAGE")
	if image == "" {
		skip("IMAGECTL_SMOKE_IMAGE is not set: name the code-server image to test")
	}
	ray := envOr("IMAGECTL_SMOKE_RAY", "2.46.0")
	// imagectl runs here (inject, debug); imagectl-probe, smoke attach
	// alone, is what goes into the sidecar.
	dir := t.TempDir()
	bin, probe := filepath.Join(dir, "imagectl"), filepath.Join(dir, "imagectl-probe")
	for out, pkg := range map[string]string{bin: "./cmd/imagectl", probe: "./cmd/imagectl-probe"} {
		build := exec.Command("go", "build", "-trimpath", "-o", out, "github.com/imagectl/imagectl/"+strings.TrimPrefix(pkg, "./"))
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the static %s: %v\n%s", filepath.Base(out), err, b)
		}
	}
	res, err := kind.Run(ctx, kind.Config{
		Image: image, RayVersion: ray, Python: envOr("IMAGECTL_SMOKE_PYTHON", "3.12"),
		KindNodeImage: os.Getenv("IMAGECTL_SMOKE_KIND_IMAGE"), KubeRayVersion: os.Getenv("IMAGECTL_SMOKE_KUBERAY"),
		ProbeBinary: probe, Imagectl: bin, LogDir: os.Getenv("IMAGECTL_SMOKE_LOGDIR"), Timeout: 50 * time.Minute,
		Debug:  os.Getenv("IMAGECTL_SMOKE_DEBUG") == "1",
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	})
	if err != nil {
		var se *kind.SkipError
		if errors.As(err, &se) {
			skip(se.Reason)
		}
		t.Fatal(err)
	}
	for i, a := range res.Attaches {
		t.Logf("attach %d: %s at %s (%s:%d) in %dms", i+1, a.Attach.Frame.Name, a.Attach.Address, a.Attach.Frame.Path, a.Attach.Frame.Line, a.Attach.AttachMillis)
	}
	if a := res.PostMortem; a != nil && a.Attach != nil && a.Attach.Frame != nil {
		t.Logf("post-mortem attach: %s at %s (%s:%d)", a.Attach.Frame.Name, a.Attach.Address, a.Attach.Frame.Path, a.Attach.Frame.Line)
	}
	t.Logf("RayJob %s with %q", res.JobStatus, res.Output)
	if d := res.Debug; d != nil {
		t.Logf("imagectl debug: job %s, events %v, %d paused events, the first %s after it started, %d attaches and a post-mortem attach", d.JobStatus, d.Events, d.Paused, d.FirstPaused, len(d.Attaches))
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
