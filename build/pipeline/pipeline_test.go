package pipeline

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/sign"
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

func TestPublisherSignsOnlyWhatItBuilt(t *testing.T) {
	repo, err := name.NewRepository("localhost:5000/x")
	if err != nil {
		t.Fatal(err)
	}
	ref := repo.Digest("sha256:" + strings.Repeat("a", 64))
	if err := NewPublisher(nil, Request{}, nil).Sign(context.Background(), ref); err == nil || !strings.Contains(err.Error(), "no signer") {
		t.Errorf("Sign without a signer: %v", err)
	}
	err = NewPublisher(nil, Request{}, &sign.Signer{}).Sign(context.Background(), ref)
	if err == nil || !strings.Contains(err.Error(), "was not built by this run") {
		t.Errorf("Sign of an image the publisher did not build: %v", err)
	}
}

func TestRunNeedsADefinition(t *testing.T) {
	if _, err := Run(context.Background(), nil, Request{Matrix: &matrix.Config{}}); err == nil || !strings.Contains(err.Error(), "no image definition") {
		t.Errorf("Run without a definition: %v", err)
	}
}

// The committed catalog is hand-written and has no base digests: a build
// from it must stop before any work and say how to pin the base.
func TestRunRefusesAnUnpinnedBase(t *testing.T) {
	cfg, err := matrix.Load("../../matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load("../../catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	def, err := build.NewDefinition(cfg, build.Overrides{}, "test")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), nil, Request{Matrix: cfg, Catalog: cat, Definition: def, Resolve: resolve.Request{Ray: "2.46.0"}})
	if err == nil || !strings.Contains(err.Error(), "no base digest for linux/amd64") || !strings.Contains(err.Error(), "imagectl matrix refresh") {
		t.Errorf("Run with an unpinned base: %v, want it to name the platform and say to run imagectl matrix refresh", err)
	}
}
