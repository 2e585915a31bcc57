package pipeline

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
)

func TestImmutableTags(t *testing.T) {
	cfg := &matrix.Config{Tags: []matrix.Tag{
		{Template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}"},
		{Template: "ray{{.Ray}}", Floating: true},
		{Template: "latest", Floating: true},
	}}
	set := resolve.Set{Tags: []string{"4.101.2-ray2.46.0-py3.12", "ray2.46.0", "latest"}}
	if diff := cmp.Diff([]string{"4.101.2-ray2.46.0-py3.12"}, immutableTags(cfg, set)); diff != "" {
		t.Errorf("immutableTags (-want +got):\n%s", diff)
	}
	// Tags not rendered from this matrix: only the first (versioned) one.
	if diff := cmp.Diff([]string{"a"}, immutableTags(&matrix.Config{}, resolve.Set{Tags: []string{"a", "b"}})); diff != "" {
		t.Errorf("mismatched tags (-want +got):\n%s", diff)
	}
	if got := immutableTags(&matrix.Config{}, resolve.Set{}); len(got) != 0 {
		t.Errorf("no tags gave %v", got)
	}
}
