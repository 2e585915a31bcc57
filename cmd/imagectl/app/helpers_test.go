package app

import (
	"bytes"
	"context"
	"testing"
)

// The repository's matrix.yaml and catalog.json.
const (
	repoMatrix  = "../../../matrix.yaml"
	repoCatalog = "../../../catalog.json"
)

// run runs imagectl with args through Run, as main does.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}
