package apptest

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
)

// Run runs imagectl with args through app.Run, as main does, and returns
// its exit code and what it wrote to stdout and stderr.
func Run(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = app.Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// The repository's committed matrix.yaml and catalog.json, whatever the
// test's working directory.
var (
	RepoMatrix  = filepath.Join(repoRoot(), "matrix.yaml")
	RepoCatalog = filepath.Join(repoRoot(), "catalog.json")
)

// repoRoot is the repository's root: four levels above this file
// (cmd/imagectl/app/apptest).
func repoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("apptest: runtime.Caller gives no file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
}
