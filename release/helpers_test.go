package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/registry"
)

// counter counts registry requests by kind.
type counter struct {
	mu     sync.Mutex
	reads  int
	writes int
	byPath map[string]int
	// fail, when set, makes matching requests answer 500 (fault injection).
	fail func(r *http.Request) bool
}

func (c *counter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		if c.fail != nil && c.fail(r) {
			c.mu.Unlock()
			http.Error(w, `{"errors":[{"code":"UNKNOWN","message":"injected failure"}]}`, http.StatusInternalServerError)
			return
		}
		switch r.Method {
		case http.MethodPut, http.MethodPost, http.MethodPatch, http.MethodDelete:
			c.writes++
			c.byPath[r.Method+" "+r.URL.Path]++
		default:
			c.reads++
		}
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (c *counter) snapshot() (reads, writes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads, c.writes
}

// testRegistry is an in-memory OCI registry behind a request counter.
type testRegistry struct {
	host  string
	count *counter
	reg   *registry.Registry
}

func newTestRegistry(t testing.TB) *testRegistry {
	t.Helper()
	c := &counter{byPath: map[string]int{}}
	srv := httptest.NewServer(c.wrap(testutil.RegistryHandler()))
	t.Cleanup(srv.Close)
	reg, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	return &testRegistry{host: strings.TrimPrefix(srv.URL, "http://"), count: c, reg: reg}
}

func (r *testRegistry) repo(t testing.TB) name.Repository {
	t.Helper()
	repo, err := name.NewRepository(r.host + "/imagectl/code-server-ray")
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// fakeDigest stands in for build.InputsDigest: the sha256 of the set's lock
// JSON (without tags) and a definition version.
func fakeDigest(definition string) DigestFunc {
	return func(s imagespec.Set) (string, error) {
		s.Tags = nil
		b, err := json.Marshal(s)
		if err != nil {
			return "", err
		}
		h := sha256.New()
		h.Write(b)
		io.WriteString(h, "\x00"+definition)
		return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
	}
}

// imageFor builds a realistic two-platform index whose platform configs carry
// the labels build writes, plus a BuildKit-style attestation manifest.
func imageFor(t testing.TB, s imagespec.Set, inputs string) v1.ImageIndex {
	t.Helper()
	lock := s
	lock.Tags = nil
	lockJSON, err := json.Marshal(lock)
	if err != nil {
		t.Fatal(err)
	}
	return imageWithLabels(t, s.Platforms, map[string]string{
		imagespec.LabelInputs:     inputs,
		imagespec.LabelLock:       string(lockJSON),
		imagespec.LabelRay:        s.Ray,
		imagespec.LabelCodeServer: s.CodeServer.Version,
		imagespec.LabelPython:     s.Python,
	})
}

func imageWithLabels(t testing.TB, platforms []string, labels map[string]string) v1.ImageIndex {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, pl := range platforms {
		os, arch, _ := strings.Cut(pl, "/")
		img, err := imagetest.RandomLabelledImage(v1.Platform{OS: os, Architecture: arch}, labels)
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: os, Architecture: arch}}})
	}
	att, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"}}})
	return idx
}

// pushByDigest pushes idx without a tag and returns its digest reference.
func pushByDigest(ctx context.Context, t testing.TB, repo name.Repository, idx v1.ImageIndex) name.Digest {
	t.Helper()
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ref := repo.Digest(d.String())
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	return ref
}

// publish pushes an image for s and points tags at it, as a past release did.
func publish(t testing.TB, repo name.Repository, s imagespec.Set, inputs string, tags ...string) name.Digest {
	t.Helper()
	ctx := context.Background()
	ref := pushByDigest(ctx, t, repo, imageFor(t, s, inputs))
	for _, tag := range tags {
		desc, err := remote.Get(ref, remote.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Tag(repo.Tag(tag), desc, remote.WithContext(ctx)); err != nil {
			t.Fatal(err)
		}
	}
	return ref
}

// headDigest returns what tag names now, or "" when absent.
func headDigest(t testing.TB, repo name.Repository, tag string) string {
	t.Helper()
	d, err := remote.Head(repo.Tag(tag))
	if err != nil {
		if registry.IsNotFound(err) {
			return ""
		}
		t.Fatal(err)
	}
	return d.Digest.String()
}

// world is a matrix of sets and the published state of a repository.
type world struct {
	t       testing.TB
	reg     *testRegistry
	repo    name.Repository
	digest  DigestFunc
	targets []Target
}

const testBase = "lscr.io/linuxserver/code-server"

func baseDigests(cs, gen string) map[string]string {
	return map[string]string{
		"linux/amd64": fakeHash("base-amd64-" + cs + gen),
		"linux/arm64": fakeHash("base-arm64-" + cs + gen),
	}
}

func fakeHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

func ext(id, version string, universal bool) imagespec.Extension {
	files := map[string]imagespec.File{}
	for pl, tp := range map[string]string{"linux/amd64": "linux-x64", "linux/arm64": "linux-arm64"} {
		if universal {
			tp = "universal"
		}
		files[pl] = imagespec.File{TargetPlatform: tp, SHA256: strings.TrimPrefix(fakeHash(id+version+tp), "sha256:")}
	}
	return imagespec.Extension{ID: id, Version: version, Source: "marketplace", Files: files}
}

// newSet returns a realistic set; tags are filled by tag().
// testToolsDigest is the tools image digest every newSet is pinned to.
var testToolsDigest = "sha256:" + strings.Repeat("6", 64)

func newSet(cs, ray, py string) imagespec.Set {
	return imagespec.Set{
		CodeServer: imagespec.CodeServer{Version: cs, VSCode: "1" + strings.TrimPrefix(cs, "4"), Base: testBase + ":" + cs, Platforms: baseDigests(cs, "")},
		Ray:        ray, Python: py, RayPythons: []string{"3.9", "3.10", "3.11", "3.12"}, RayExtras: []string{"default"},
		Debugpy:    "1.8.14",
		Platforms:  []string{"linux/amd64", "linux/arm64"},
		ToolsImage: "docker.io/library/python:3.12-slim-bookworm@" + testToolsDigest,
		Extensions: []imagespec.Extension{
			ext("ms-python.debugpy", "2025.10.0", false),
			ext("ms-python.python", "2025.10.0", false),
			ext("anyscalecompute.ray-distributed-debugger", "0.1.4", true),
		},
	}
}

// testTags is the tag scheme of matrix.yaml: an immutable versioned tag that
// names the build (short inputs digest), and floating tags for the
// combination, the Ray minor and latest.
var testTags = &matrix.Config{Tags: []matrix.Tag{
	{Template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}-{{.Inputs}}"},
	{Template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}", Floating: true},
	{Template: "ray{{.RayMinor}}", Floating: true},
	{Template: "latest", Floating: true},
}}

// target renders the tags of s with Targets, from the world's digest.
func (w *world) target(s imagespec.Set) Target {
	w.t.Helper()
	ts, err := Targets(testTags, []imagespec.Set{s}, w.digest)
	if err != nil {
		w.t.Fatal(err)
	}
	return ts[0]
}

func newWorld(t testing.TB, sets ...imagespec.Set) *world {
	t.Helper()
	reg := newTestRegistry(t)
	w := &world{t: t, reg: reg, repo: reg.repo(t), digest: fakeDigest("def-1")}
	w.setTargets(sets...)
	return w
}

func (w *world) setTargets(sets ...imagespec.Set) {
	w.t.Helper()
	var ts []Target
	for _, s := range sets {
		ts = append(ts, w.target(s))
	}
	owned, err := OwnFloating(ts)
	if err != nil {
		w.t.Fatal(err)
	}
	w.targets = owned
}

// publishAll publishes every target with all its tags, as a finished release.
func (w *world) publishAll() map[string]name.Digest {
	w.t.Helper()
	out := map[string]name.Digest{}
	for _, tg := range w.targets {
		in, _ := w.digest(tg.Set)
		out[tg.Name()] = publish(w.t, w.repo, tg.Set, in, append([]string{tg.Versioned}, tg.Floating...)...)
	}
	return out
}

func (w *world) plan() *Plan {
	w.t.Helper()
	p, err := NewPlanner(w.reg.reg, w.repo).Plan(context.Background(), w.targets)
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// allTags lists every tag in the repository with its digest.
func (w *world) allTags() map[string]string {
	w.t.Helper()
	tags, err := remote.List(w.repo)
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]string{}
	for _, tag := range tags {
		if strings.HasPrefix(tag, "sha256-") {
			continue // cosign signature/attachment tags
		}
		out[tag] = headDigest(w.t, w.repo, tag)
	}
	return out
}
