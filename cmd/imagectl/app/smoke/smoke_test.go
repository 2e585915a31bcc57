package smoke_test

import (
	"bytes"
	"context"
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
