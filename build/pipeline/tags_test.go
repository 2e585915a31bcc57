package pipeline

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/release"
	"github.com/imagectl/imagectl/resolve"
)

// TestBuildAndReleaseTagTheSame: with two immutable tag templates, build
// --push and release write the same immutable tags (both from
// resolve.RenderTags), the versioned one first. Build's are read from Run's
// result on inputs that are already published (so nothing is solved).
func TestBuildAndReleaseTagTheSame(t *testing.T) {
	cfg, cat, def := pinnedInputs(t)
	cfg.Tags = []matrix.Tag{ // the definition reads cfg's tags when it renders them
		{Template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}-{{.Inputs}}"},
		{Template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}", Floating: true},
		{Template: "ray{{.Ray}}-py{{.Python}}-cs{{.CodeServer}}-{{.Inputs}}"},
		{Template: "latest", Floating: true},
	}
	host := testutil.Registry(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	repo, err := name.NewRepository(host + "/team/img")
	if err != nil {
		t.Fatal(err)
	}
	set, _, err := resolve.Resolve(cfg, cat, resolve.Request{Ray: "2.46.0"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := def.Render(set)
	if err != nil {
		t.Fatal(err)
	}

	targets, err := release.Targets(cfg, []imagespec.Set{r.Set}, def)
	if err != nil {
		t.Fatal(err)
	}
	released := append([]string{targets[0].Versioned}, targets[0].Immutable...)
	if len(released) != 2 {
		t.Fatalf("release writes the immutable tags %v, want two", released)
	}

	pushIndex(t, repo.Tag(targets[0].Versioned), r.Set, r.Inputs, set.Platforms...)
	res, err := Run(context.Background(), failBuilder{t}, Request{Matrix: cfg, Catalog: cat, Definition: def,
		Resolve: resolve.Request{Ray: "2.46.0"}, Publish: PublishOptions{Repo: repo.Name(), Push: true}})
	if err != nil {
		t.Fatalf("Run of published inputs: %v", err)
	}
	if res.InputsDigest != r.Inputs {
		t.Fatalf("Run's inputs digest %s, release's %s", res.InputsDigest, r.Inputs)
	}
	if diff := cmp.Diff(released, res.Tags); diff != "" {
		t.Errorf("immutable tags: release (-) and build --push (+) disagree:\n%s", diff)
	}
	if diff := cmp.Diff(targets[0].Set.Tags, res.Set.Tags); diff != "" {
		t.Errorf("rendered tags: release (-) and build (+) disagree:\n%s", diff)
	}
}
