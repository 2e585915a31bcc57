package pipeline

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/internal/fakes/authregistry"
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

// A standalone-runtime set without a locked python-build-standalone runtime
// (a catalog from before refresh recorded them) stops before any work, with
// the base pinned, and says to run imagectl matrix refresh.
func TestRunRefusesAnUnlockedPythonRuntime(t *testing.T) {
	cfg, cat, def := pinnedInputs(t)
	req := Request{Matrix: cfg, Catalog: cat, Definition: def, Resolve: resolve.Request{Ray: "2.46.0"}}
	// With the runtime locked, Run gets past the check (and stops at the
	// missing extension cache, before any work).
	if _, err := Run(context.Background(), nil, req); err == nil || !strings.Contains(err.Error(), "no extension cache") {
		t.Fatalf("Run with the runtime locked: %v, want it to pass the runtime check and stop at the extension cache", err)
	}
	cat.PythonRuntimes = nil
	_, err := Run(context.Background(), nil, req)
	if err == nil || !strings.Contains(err.Error(), "no python-build-standalone runtime for Python 3.12") || !strings.Contains(err.Error(), "run imagectl matrix refresh") {
		t.Errorf("Run without a locked runtime: %v, want it to name Python 3.12 and say to run imagectl matrix refresh", err)
	}
}

type downPinger struct{ build.Interface }

func (downPinger) Ping(context.Context, string) (string, error) {
	return "", errors.New("connecting to buildkitd at unix:///nowhere.sock: no such file")
}

// What needs no download is checked before the first one: an unreachable
// buildkitd, and a registry that refuses the push (no docker login), stop
// Run before it touches the extension cache (nil here: reaching it would
// fail with "no extension cache").
func TestRunPreflightBeforeAnyDownload(t *testing.T) {
	cfg, cat, def := pinnedInputs(t)
	srv := httptest.NewServer(authregistry.New(registry.New(registry.Logger(log.New(io.Discard, "", 0))), "ci", "s3cret"))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials at all

	req := Request{Matrix: cfg, Catalog: cat, Definition: def, Resolve: resolve.Request{Ray: "2.46.0"}, Repo: host + "/team/img", Push: true}
	_, err := Run(context.Background(), downPinger{}, req)
	if err == nil || !strings.Contains(err.Error(), "unix:///nowhere.sock") {
		t.Errorf("Run with an unreachable buildkitd: %v, want the buildkitd error", err)
	}
	_, err = Run(context.Background(), nil, req)
	if err == nil || !strings.Contains(err.Error(), "registry "+host+" refused an anonymous push") || !strings.Contains(err.Error(), "docker login "+host) {
		t.Errorf("Run --push without credentials: %v, want a refusal naming the registry and docker login", err)
	}
	// With the login docker writes, the preflight passes and Run goes on to
	// the extension cache.
	dir := t.TempDir()
	if err := authregistry.WriteDockerConfig(dir, host, "ci", "s3cret"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	if _, err = Run(context.Background(), nil, req); err == nil || !strings.Contains(err.Error(), "no extension cache") {
		t.Errorf("Run --push with credentials: %v, want it past the preflight (stopping at the missing extension cache)", err)
	}
}

// pinnedInputs loads the committed matrix.yaml and catalog.json with the
// base pinned on both platforms (the committed catalog has no digests), and
// their image definition.
func pinnedInputs(t *testing.T) (*matrix.Config, *catalog.Catalog, *build.Definition) {
	t.Helper()
	cfg, err := matrix.Load("../../matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load("../../catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	for i := range cat.CodeServer {
		cat.CodeServer[i].Platforms = map[string]string{
			"linux/amd64": "sha256:" + strings.Repeat("1", 64), "linux/arm64": "sha256:" + strings.Repeat("2", 64),
		}
	}
	def, err := build.NewDefinition(cfg, build.Overrides{}, "test")
	if err != nil {
		t.Fatal(err)
	}
	return cfg, cat, def
}
