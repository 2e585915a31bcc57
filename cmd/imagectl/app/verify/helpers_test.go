package verify_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
)

// run runs imagectl with args through app.Run, as main does.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = app.Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}
