package pipeline

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/regauth/regauthtest"
	"github.com/imagectl/imagectl/resolve"
)

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
	host := testutil.Serve(t, regauthtest.New(testutil.RegistryHandler(), "ci", "s3cret"))
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials at all

	req := Request{Matrix: cfg, Catalog: cat, Definition: def, Resolve: resolve.Request{Ray: "2.46.0"}, Publish: PublishOptions{Repo: host + "/team/img", Push: true}}
	// Both problems at once are both reported: one run says all there is
	// to fix, and each once (both platforms ping the same buildkitd).
	_, err := Run(context.Background(), downPinger{}, req)
	if err == nil || strings.Count(err.Error(), "unix:///nowhere.sock") != 1 || !strings.Contains(err.Error(), "registry "+host+" refused an anonymous push") {
		t.Errorf("Run with an unreachable buildkitd and no credentials: %v, want the buildkitd error once and the registry's refusal", err)
	}
	_, err = Run(context.Background(), nil, req)
	if err == nil || !strings.Contains(err.Error(), "registry "+host+" refused an anonymous push") || !strings.Contains(err.Error(), "docker login "+host) {
		t.Errorf("Run --push without credentials: %v, want a refusal naming the registry and docker login", err)
	}
	// With the login docker writes, the preflight passes and Run goes on to
	// the extension cache.
	dir := t.TempDir()
	if err := regauthtest.WriteDockerConfig(dir, host, "ci", "s3cret"); err != nil {
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

// phaseBuilder records the order of Build calls.
type phaseBuilder struct {
	mu     sync.Mutex
	events []string
	amd64  chan struct{} // closed when linux/amd64's push returns
	fail   string        // "<platform> <kind>": that Build call fails
}

func (p *phaseBuilder) Build(_ context.Context, s build.Spec) (*build.PlatformResult, error) {
	kind := "archive"
	switch {
	case s.Push:
		kind = "push"
	case s.Prepare:
		kind = "prepare"
	}
	p.mu.Lock()
	p.events = append(p.events, "start "+s.Platform+" "+kind)
	p.mu.Unlock()
	if p.fail == s.Platform+" "+kind {
		return nil, errors.New("failed: " + p.fail)
	}
	r := &build.PlatformResult{Platform: s.Platform, Exported: "sha256:" + kind, Steps: 0, CachedSteps: 3, Duration: build.Duration(time.Second)}
	if kind == "prepare" {
		r.Steps, r.CachedSteps = 2, 1
		if s.Provenance || len(s.CacheTo) > 0 {
			return nil, errors.New("a prepare solve asked for provenance or a cache export")
		}
	}
	if s.Platform == "linux/amd64" && kind == "push" {
		time.Sleep(50 * time.Millisecond) // the arm64 prepare runs meanwhile
		defer close(p.amd64)
	}
	if s.Platform == "linux/arm64" && kind == "push" {
		select {
		case <-p.amd64:
		default:
			return nil, errors.New("linux/arm64 pushed while linux/amd64 was still pushing")
		}
	}
	p.mu.Lock()
	p.events = append(p.events, "end "+s.Platform+" "+kind)
	p.mu.Unlock()
	return r, nil
}

// Platforms pushed together push in turn: the first while the others are
// prepared concurrently, then each other one by a second solve, so a layer
// they share is uploaded once. An archive build solves each platform once.
func TestSolveAllPushesInTurn(t *testing.T) {
	specs := []build.Spec{
		{Platform: "linux/amd64", Push: true, Provenance: true, CacheTo: []string{"r/c"}},
		{Platform: "linux/arm64", Push: true, Provenance: true, CacheTo: []string{"r/c"}},
	}
	b := &phaseBuilder{amd64: make(chan struct{})}
	res, err := solveAll(context.Background(), b, specs, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.events) != 6 || b.events[len(b.events)-2] != "start linux/arm64 push" {
		t.Errorf("Build calls %q, want the arm64 push last, after the amd64 push and the arm64 prepare", b.events)
	}
	arm := res[1]
	if arm.Exported != "sha256:push" || arm.Steps != 2 || arm.CachedSteps != 1 || time.Duration(arm.Duration) != 2*time.Second {
		t.Errorf("arm64 result %+v: want the push's digest, the prepare's step counts and both durations", arm)
	}

	archive := []build.Spec{{Platform: "linux/amd64", Archive: "a"}, {Platform: "linux/arm64", Archive: "b"}}
	for _, prepared := range []func(*build.PlatformResult){nil, func(*build.PlatformResult) { t.Error("prepared called for an archive build") }} {
		b = &phaseBuilder{amd64: make(chan struct{})}
		if _, err := solveAll(context.Background(), b, archive, nil, "", prepared); err != nil {
			t.Fatal(err)
		}
		if len(b.events) != 4 {
			t.Errorf("archive build: Build calls %q, want one per platform", b.events)
		}
	}
}

// With a prepared callback (the SBOM scans of a signed push), every
// platform is prepared first, the callback gets it, and it is pushed as
// soon as the platform before it is pushed: the callback's work (the scan)
// runs while it is pushed.
func TestSolveAllPreparesEveryPlatformBeforeItsPush(t *testing.T) {
	specs := []build.Spec{
		{Platform: "linux/amd64", Push: true, Provenance: true, CacheTo: []string{"r/c"}},
		{Platform: "linux/arm64", Push: true, Provenance: true, CacheTo: []string{"r/c"}},
	}
	for _, n := range []int{1, 2} {
		b := &phaseBuilder{amd64: make(chan struct{})}
		res, err := solveAll(context.Background(), b, specs[:n], nil, "", func(r *build.PlatformResult) {
			if r.Exported != "sha256:prepare" {
				t.Errorf("prepared got %s's %s, want its prepare's result", r.Platform, r.Exported)
			}
			b.mu.Lock()
			b.events = append(b.events, "prepared "+r.Platform)
			b.mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(b.events) != 5*n {
			t.Errorf("%d platform(s): events %q, want a prepare, the callback and a push each", n, b.events)
		}
		for _, r := range res {
			order := []string{"start " + r.Platform + " prepare", "end " + r.Platform + " prepare", "prepared " + r.Platform, "start " + r.Platform + " push", "end " + r.Platform + " push"}
			last := -1
			for _, e := range order {
				i := slices.Index(b.events, e)
				if i <= last {
					t.Errorf("%d platform(s): events %q: want %q in this order", n, b.events, order)
					break
				}
				last = i
			}
			if r.Exported != "sha256:push" || r.Steps != 2 || r.CachedSteps != 1 || time.Duration(r.Duration) != 2*time.Second {
				t.Errorf("%s result %+v: want the push's digest, the prepare's step counts and both durations", r.Platform, r)
			}
		}
	}

	// A platform that fails stops the others; its error is the one returned.
	for _, fail := range []string{"linux/amd64 prepare", "linux/amd64 push", "linux/arm64 prepare"} {
		b := &phaseBuilder{amd64: make(chan struct{}), fail: fail}
		_, err := solveAll(context.Background(), b, specs, nil, "", func(*build.PlatformResult) {})
		if err == nil || err.Error() != "failed: "+fail {
			t.Errorf("%s failing: error %v, want it", fail, err)
		}
		if fail == "linux/amd64 prepare" && slices.Contains(b.events, "start linux/arm64 push") {
			t.Errorf("%s failing: events %q: linux/arm64 pushed after it", fail, b.events)
		}
	}
}
