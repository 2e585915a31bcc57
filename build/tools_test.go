package build

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The tools image the definition renders comes from the set (pinned by
// resolve from the catalog); only the tools digest differing is enough for
// both the rendered definition and the inputs digest to differ, so plan
// sees a moved tools tag.
func TestDefinitionToolsImage(t *testing.T) {
	const ref = "python:3.12-slim" // standaloneYAML's build.toolsImage
	d1 := "sha256:" + strings.Repeat("a", 64)
	d2 := "sha256:" + strings.Repeat("b", 64)
	cfg := testMatrix(t, standaloneYAML)
	for _, tc := range []struct {
		name       string
		setTools   string
		override   string
		want       string
		wantPinned bool
	}{
		{name: "pinned by the catalog", setTools: ref + "@" + d1, want: ref + "@" + d1, wantPinned: true},
		{name: "digest unknown", setTools: ref, want: ref},
		{name: "set without one (old lock)", want: ref},
		{name: "override with a digest is used as is", setTools: ref + "@" + d1, override: "python:3.13-slim@" + d2, want: "python:3.13-slim@" + d2, wantPinned: true},
		{name: "override without a digest is used as is", setTools: ref + "@" + d1, override: "localhost:5000/tools:dev", want: "localhost:5000/tools:dev"},
		{name: "override equal to matrix.yaml keeps the pin", setTools: ref + "@" + d1, override: ref, want: ref + "@" + d1, wantPinned: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDefinition(cfg, Overrides{ToolsImage: tc.override}, "v1")
			if err != nil {
				t.Fatal(err)
			}
			set := testSet()
			set.ToolsImage = tc.setTools
			r, err := d.Render(set)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, r.Set.ToolsImage); diff != "" {
				t.Errorf("set's tools image (-want +got):\n%s", diff)
			}
			if r.Params.ToolsImage != tc.want {
				t.Errorf("rendered with tools image %q, want %q", r.Params.ToolsImage, tc.want)
			}
			if line := `ARG TOOLS_IMAGE="` + tc.want + `"`; !strings.Contains(string(r.Definition), line) {
				t.Errorf("definition lacks %s", line)
			}
			if got := ToolsImagePinned(r.Set.ToolsImage); got != tc.wantPinned {
				t.Errorf("ToolsImagePinned(%q) = %v, want %v", r.Set.ToolsImage, got, tc.wantPinned)
			}
			if in := InputsDigest(r.Set, r.Definition, "v1"); in != r.Inputs {
				t.Errorf("Inputs %s is not the digest of the set as built (%s)", r.Inputs, in)
			}
			// Set is what Render hashes, and applying it twice changes nothing.
			if diff := cmp.Diff(r.Set, d.Set(r.Set)); diff != "" {
				t.Errorf("Set is not idempotent (-first +second):\n%s", diff)
			}
		})
	}

	// Only the tools digest differs: another definition, another inputs digest.
	d, err := NewDefinition(cfg, Overrides{}, "v1")
	if err != nil {
		t.Fatal(err)
	}
	a, b := testSet(), testSet()
	a.ToolsImage, b.ToolsImage = ref+"@"+d1, ref+"@"+d2
	ra, err := d.Render(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := d.Render(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(ra.Definition) == string(rb.Definition) {
		t.Error("two tools digests rendered the same definition")
	}
	if ra.Inputs == rb.Inputs {
		t.Errorf("two tools digests gave the same inputs digest %s", ra.Inputs)
	}
	ta, _ := d.Tags(a)
	tb, _ := d.Tags(b)
	if len(ta) == 0 || len(tb) == 0 || ta[0] == tb[0] {
		t.Errorf("versioned tags %v and %v: want different ones (they carry the inputs digest)", ta, tb)
	}
}
