package release_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
	"github.com/imagectl/imagectl/internal/testutil"
)

// release --dry-run, its help's first example, on the committed matrix and
// catalog (whose extension files are not all pinned): it shows the plan,
// every step it would take, and lists every extension file a release
// would refuse as unpinned; it writes nothing to the registry and exits 1,
// as the release would not go through.
func TestReleaseDryRunListsMissingPins(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	host := testutil.Registry(t)
	root := filepath.Join("..", "..", "..", "..")
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		base := []string{"--matrix", filepath.Join(root, "matrix.yaml"), "--catalog", filepath.Join(root, "catalog.json"),
			"release", "--dry-run", "--repository", host + "/team/img"}
		code := app.Run(context.Background(), append(base, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errOut := run()
	if code != 1 {
		t.Errorf("exit %d, want 1 (a release would refuse the unpinned files)", code)
	}
	for _, want := range []string{
		"would build ray 2.46.0",
		"would push by digest to " + host + "/team/img",
		"would tag ",
		"missing pin: anyscalecompute.ray-distributed-debugger@",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "pins required") || !strings.Contains(errOut, "imagectl extensions pin") {
		t.Errorf("stderr does not say what is missing and how to pin it:\n%s", errOut)
	}

	code, out, _ = run("-o", "json")
	var rep struct {
		DryRun  bool `json:"dryRun"`
		Results []struct {
			Entry   string   `json:"entry"`
			Steps   []string `json:"steps"`
			Missing []string `json:"missing"`
			Error   string   `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-o json: exit %d, %v:\n%s", code, err, out)
	}
	if !rep.DryRun || len(rep.Results) == 0 {
		t.Fatalf("-o json: %+v", rep)
	}
	for _, r := range rep.Results {
		if len(r.Steps) == 0 || len(r.Missing) == 0 || !strings.Contains(r.Error, "pins required") {
			t.Errorf("-o json entry %s: steps %q, missing %q, error %q", r.Entry, r.Steps, r.Missing, r.Error)
		}
	}
}
