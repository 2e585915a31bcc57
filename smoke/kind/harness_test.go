package kind

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
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
