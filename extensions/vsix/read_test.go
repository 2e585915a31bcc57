package vsix_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/extensions/vsix"
)

func TestReadFiles(t *testing.T) {
	b := readFixture(t, universalFixture)
	got, err := vsix.ReadFiles(context.Background(), bytes.NewReader(b), int64(len(b)), vsix.Limits{}, 1<<20, vsix.PackageJSONPath, "extension/no/such/file.js")
	if err != nil {
		t.Fatal(err)
	}
	if pj, ok := got[vsix.PackageJSONPath]; !ok || !strings.Contains(string(pj), `"name": "debugpy"`) {
		t.Errorf("%s = %.80q, want the fixture's package.json", vsix.PackageJSONPath, pj)
	}
	if _, ok := got["extension/no/such/file.js"]; ok || len(got) != 1 {
		t.Errorf("a missing entry is absent from the map; got %d entries", len(got))
	}
	if _, err := vsix.ReadFiles(context.Background(), bytes.NewReader(b), int64(len(b)), vsix.Limits{}, 10, vsix.PackageJSONPath); err == nil || !strings.Contains(err.Error(), vsix.PackageJSONPath) || !strings.Contains(err.Error(), "larger than 10 bytes") {
		t.Errorf("an entry over max: err = %v, want one naming %s and the bound", err, vsix.PackageJSONPath)
	}
}
