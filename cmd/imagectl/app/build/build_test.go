package build_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
)

func TestBuildCommandRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "--ray", "2.46.0", "--output", "yaml"}, `--output "yaml": want text or json`},
		{[]string{"build"}, `required flag(s) "ray" not set`},
	} {
		var out, errb bytes.Buffer
		if code := app.Run(context.Background(), tc.args, &out, &errb); code == 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want failure mentioning %q", tc.args, code, errb.String(), tc.want)
		}
	}
}
