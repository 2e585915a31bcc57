package smoketest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
	"github.com/imagectl/imagectl/debug/dashboard/dashboardtest"
	"github.com/imagectl/imagectl/smoke/probe"
)

// TestAttachCLINoPausedWorker runs `imagectl smoke attach` against the fake
// dashboard with nothing paused: exit code 3 and a JSON report saying so.
func TestAttachCLINoPausedWorker(t *testing.T) {
	d := dashboardtest.New()
	defer d.Close()
	var stdout, stderr bytes.Buffer
	code := app.Run(context.Background(), []string{"smoke", "attach", "--dashboard", d.Address(), "--pause-timeout", "1s",
		"--poll-interval", "200ms", "--output", "json"}, &stdout, &stderr)
	if code != 3 {
		t.Fatalf("exit code %d, want 3\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	var rep probe.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, &stdout)
	}
	if rep.OK || rep.ErrorKind != "no_paused_worker" || !strings.Contains(stderr.String(), "no paused worker after 1s") {
		t.Errorf("report %+v, stderr %q", rep, &stderr)
	}
}
