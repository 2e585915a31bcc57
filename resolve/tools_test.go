package resolve

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
)

// The set pins the tools image only with a digest recorded for exactly
// matrix.yaml's build.toolsImage; otherwise it carries the bare reference and
// the explanation says the digest is unknown.
func TestResolveToolsImage(t *testing.T) {
	const ref = "docker.io/library/python:3.12-slim-bookworm"
	d := "sha256:" + strings.Repeat("4", 64)
	other := "sha256:" + strings.Repeat("5", 64)
	for _, tc := range []struct {
		name     string
		matrix   string // build.toolsImage; empty keeps the default
		tools    *catalog.ToolsImage
		want     string
		wantNote string // substring of the one tools-image note; "" for none
	}{
		{name: "recorded for the same reference", tools: &catalog.ToolsImage{Ref: ref, Digest: d}, want: ref + "@" + d},
		{name: "nothing recorded", want: ref, wantNote: "tools image " + ref + ": digest unknown, the catalog records none; run imagectl matrix refresh"},
		{name: "recorded without digest (hand-written)", tools: &catalog.ToolsImage{Ref: ref}, want: ref, wantNote: "digest unknown in the catalog; run imagectl matrix refresh"},
		{name: "recorded for another reference", matrix: "docker.io/library/python:3.13-slim-bookworm", tools: &catalog.ToolsImage{Ref: ref, Digest: d},
			want: "docker.io/library/python:3.13-slim-bookworm", wantNote: "the catalog records " + ref + " (matrix.yaml build.toolsImage changed since); run imagectl matrix refresh"},
		{name: "pinned in matrix.yaml", matrix: ref + "@" + other, tools: &catalog.ToolsImage{Ref: ref, Digest: d}, want: ref + "@" + other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testMatrix
			if tc.matrix != "" {
				m += "build: {toolsImage: \"" + tc.matrix + "\"}\n"
			}
			cat := testCatalog()
			cat.ToolsImage = tc.tools
			set, ex, err := Resolve(mustMatrix(t, m), cat, ray46())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, set.ToolsImage); diff != "" {
				t.Errorf("toolsImage (-want +got):\n%s", diff)
			}
			var notes []string
			for _, n := range ex.Notes {
				if strings.HasPrefix(n, "tools image ") {
					notes = append(notes, n)
				}
			}
			switch {
			case tc.wantNote == "" && len(notes) > 0:
				t.Errorf("notes %q, want no tools image note", notes)
			case tc.wantNote != "" && (len(notes) != 1 || !strings.Contains(notes[0], tc.wantNote)):
				t.Errorf("notes %q, want one containing %q", notes, tc.wantNote)
			}
			if tc.wantNote != "" && !strings.Contains(ex.String(), tc.wantNote) {
				t.Errorf("explanation text lacks %q:\n%s", tc.wantNote, ex)
			}
		})
	}
}
