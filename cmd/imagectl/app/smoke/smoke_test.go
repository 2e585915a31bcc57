package smoke_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
)

// Bad usage of smoke image exits 2 with a message naming what is wrong,
// before any image is read or container made.
func TestSmokeImageUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"smoke", "image"}, "pass an image reference or --archive FILE"},
		{[]string{"smoke", "image", "example.invalid/x:1", "--archive", "x.oci.tar"}, "pass an image reference or --archive FILE"},
		{[]string{"smoke", "image", "example.invalid/x:1", "-o", "yaml"}, `--output "yaml"`},
		{[]string{"smoke", "image", "example.invalid/x:1", "--runtime", "podman"}, `--runtime "podman": want auto, runc or docker`},
	} {
		var out, errb bytes.Buffer
		code := app.Run(context.Background(), tc.args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// smoke image -o json prints its report also when the image cannot be
// read at all (a missing archive): not ok, no platforms, the error.
func TestSmokeImageJSONWhenArchiveMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.oci.tar")
	var out, errb bytes.Buffer
	code := app.Run(context.Background(), []string{"smoke", "image", "--archive", missing, "-o", "json"}, &out, &errb)
	var rep struct {
		Image     string `json:"image"`
		OK        bool   `json:"ok"`
		Platforms []any  `json:"platforms"`
		Error     string `json:"error"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("exit %d, stdout is no JSON report (%v): %q\nstderr: %s", code, err, out.String(), errb.String())
	}
	if code != 1 || rep.OK || rep.Image != missing || rep.Platforms == nil || len(rep.Platforms) != 0 || !strings.Contains(rep.Error, missing) {
		t.Errorf("exit %d, report %+v; want 1, not ok, no platforms, an error naming %s", code, rep, missing)
	}
}
