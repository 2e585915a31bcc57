package verify_test

import (
	"strings"
	"testing"

	"github.com/imagectl/imagectl/verify"
)

// The text report names a component it did not find as such, not as an
// empty value ("python , ray , debugpy ").
func TestWriteTextMissingComponents(t *testing.T) {
	rep := &verify.Report{Ref: "r", Manifests: []verify.Manifest{{Platform: "linux/amd64", Digest: "sha256:1",
		Contents: &verify.Contents{Python: "3.12", Ray: ""}}}}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := "python 3.12, ray not found, debugpy not found\n"; !strings.Contains(b.String(), want) {
		t.Errorf("report:\n%s\nwant a line with %q", b.String(), want)
	}
}
