package build

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/dockerfiles"
	"github.com/imagectl/imagectl/internal/fakes/authregistry"
	"github.com/imagectl/imagectl/regauth"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/upstream/pip"
)

// requireBuildKit returns a BuildKit for $BUILDKIT_HOST, or skips.
func requireBuildKit(t *testing.T) *BuildKit {
	t.Helper()
	addr := os.Getenv("BUILDKIT_HOST")
	if addr == "" {
		t.Skip("BUILDKIT_HOST is not set: no buildkitd to build with")
	}
	b := NewBuildKit(WithAddress(addr))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	native, err := b.Ping(ctx, "linux/amd64")
	if err != nil {
		if os.Getenv("IMAGECTL_REQUIRE_TOOLS") == "1" {
			t.Fatalf("BUILDKIT_HOST=%s is unreachable: %v", addr, err)
		}
		t.Skipf("BUILDKIT_HOST=%s is unreachable: %v", addr, err)
	}
	t.Logf("buildkitd at %s, native platform %s", addr, native)
	return b
}

// need fails under IMAGECTL_REQUIRE_TOOLS=1 and skips otherwise.
func need(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("IMAGECTL_REQUIRE_TOOLS") == "1" {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("%s: %v", what, err)
}

// TestBuildKitTwoPlatforms solves both platforms of the real definition on
// $BUILDKIT_HOST, pushes them to an in-process registry, and checks that the
// arm64 image got the aarch64 wheels without one emulated step, and that a
// second solve gives the same digests.
// fixture is what the BuildKit integration tests start from: $BUILDKIT_HOST,
// an in-process registry holding the tools image (amd64, python3 + pip), and
// a directory of fixture wheels laid out as a PEP 503 index.
type fixture struct {
	b     *BuildKit
	host  string // the registry's host:port
	tools string // the tools image reference
	pyDir string // the package index directory; each test serves it
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	b := requireBuildKit(t)
	cache := os.Getenv("IMAGECTL_TEST_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "imagectl-test")
	}
	toolsTar := filepath.Join(cache, "base", "tools-amd64.tar")
	_, err := os.Stat(toolsTar)
	need(t, "tools image tarball (run hack/deps.d/35-base-images.sh)", err)
	_, err = exec.LookPath("python3")
	need(t, "python3 (builds the fixture wheels)", err)

	reg := httptest.NewServer(registry.New(registry.Logger(nopLogger())))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	pyDir := t.TempDir()
	if out, err := exec.Command("python3", "../tests/e2e/mkwheels.py", pyDir).CombinedOutput(); err != nil {
		t.Fatalf("mkwheels.py: %v\n%s", err, out)
	}
	return &fixture{b: b, host: host, tools: pushImage(t, host+"/tools", mustRootfs(t, toolsTar), "linux/amd64"), pyDir: pyDir}
}

func TestBuildKitTwoPlatforms(t *testing.T) {
	f := newFixture(t)
	b, host, tools := f.b, f.host, f.tools
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	py := httptest.NewServer(http.FileServer(http.Dir(f.pyDir)))
	defer py.Close()

	// A minimal base per platform.
	bases := map[string]string{}
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		bases[p] = pushImage(t, host+"/base", configLayer(t), p)
	}

	rendered, err := Render(dockerfiles.Dockerfile(), Params{ToolsImage: tools, PackageIndex: py.URL + "/simple", PythonRuntime: PythonRuntimeBase})
	if err != nil {
		t.Fatal(err)
	}
	set := testSet()
	set.Python = "3.11"
	epoch := time.Unix(1752537600, 0).UTC()
	ext := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ext, "testpub.hello-1.0.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ext, "extensions.json"), []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, err := name.NewRepository(host + "/built")
	if err != nil {
		t.Fatal(err)
	}
	solve := func(cold bool) *Published {
		var results []*PlatformResult
		for _, p := range []string{"linux/amd64", "linux/arm64"} {
			ctxs, err := PrepareContexts(filepath.Join(t.TempDir(), "ctx"), rendered, unlocked(set), ext, []byte("{}\n"), epoch)
			if err != nil {
				t.Fatal(err)
			}
			r, err := b.Build(ctx, Spec{
				Platform: p, Contexts: ctxs, SourceDateEpoch: epoch, Repo: repo.Name(), Push: true, Provenance: true,
				BuildArgs: map[string]string{"BASE_IMAGE": bases[p], "PYTHON_VERSION": set.Python},
				Labels:    Labels(set, p, "sha256:test", epoch, LabelSource{}),
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.EmulatedSteps != 0 {
				t.Errorf("%s: %d emulated steps: %v", p, r.EmulatedSteps, r.Emulated)
			}
			if cold && r.Steps == 0 {
				t.Errorf("%s: no RUN step counted on a cold solve; the emulated-step count proves nothing", p)
			}
			results = append(results, r)
		}
		pub, err := Publish(ctx, repo, results, []string{"t"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return pub
	}
	first := solve(true)
	if len(first.Platforms) != 2 || len(first.Provenance) != 2 {
		t.Fatalf("published %d platforms and %d provenance statements, want 2 and 2", len(first.Platforms), len(first.Provenance))
	}
	arch := fileInImage(t, repo.Digest(first.Platforms["linux/arm64"].Digest.String()), PythonSitePackages("3.11")[1:]+"/ray/_fixture_arch.txt")
	if strings.TrimSpace(arch) != "aarch64" {
		t.Errorf("arm64 image has the %q ray wheel, want aarch64", arch)
	}
	refs, err := remote.Referrers(repo.Digest(first.Platforms["linux/arm64"].Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	if im, _ := refs.IndexManifest(); im == nil || len(im.Manifests) == 0 || im.Manifests[0].ArtifactType != ProvenanceArtifactType {
		t.Errorf("no provenance referrer on the arm64 manifest: %+v", im)
	}
	second := solve(false)
	if first.Index != second.Index {
		t.Errorf("index digest changed between two solves: %s then %s", first.Index, second.Index)
	}
}

func nopLogger() *log.Logger { return log.New(io.Discard, "", 0) }

func mustRootfs(t *testing.T, path string) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// configLayer is a layer with /config owned by 911:911, like the real base.
func configLayer(t *testing.T) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "config/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: 911, Gid: 911},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// pushImage pushes a one-layer image for platform and returns repo@digest.
func pushImage(t *testing.T, repo string, layer v1.Layer, platform string) string {
	t.Helper()
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	pl, _ := v1.ParsePlatform(platform)
	cf.OS, cf.Architecture = pl.OS, pl.Architecture
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	ref, err := name.ParseReference(repo + "@" + d.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	return ref.String()
}

// fileInImage returns the content of file (no leading slash) in the image.
func fileInImage(t *testing.T, ref name.Reference, file string) string {
	t.Helper()
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s not in %s", file, ref)
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimPrefix(h.Name, "./") == file {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
}

// TestBuildKitStandaloneRuntime checks the python-build-standalone path's
// mechanics with a small tarball shaped like an install_only release
// (python/bin, python/lib/pythonX.Y): it is fetched and checked on the build
// platform and lands in PythonDir of the arm64 image with no emulated step;
// a wrong checksum fails the build.
func TestBuildKitStandaloneRuntime(t *testing.T) {
	f := newFixture(t)
	b, host, tools, pyDir := f.b, f.host, f.tools, f.pyDir
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// install_only-shaped tarballs per architecture, beside the index.
	sums := map[string]string{}
	for _, arch := range []string{"x86_64", "aarch64"} {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		for _, f := range []struct{ name, body string }{
			{"python/bin/python3", "#!/bin/sh\necho standalone " + arch + "\n"},
			{"python/lib/python3.11/os.py", "# " + arch + "\n"},
		} {
			tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o755, Size: int64(len(f.body)), Typeflag: tar.TypeReg})
			tw.Write([]byte(f.body))
		}
		tw.Close()
		gz.Close()
		name := "cpython-3.11-" + arch + "-install_only.tar.gz"
		if err := os.WriteFile(filepath.Join(pyDir, name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(buf.Bytes())
		sums[arch] = hex.EncodeToString(sum[:])
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(pyDir)))
	defer srv.Close()
	base := pushImage(t, host+"/base", configLayer(t), "linux/arm64")
	set := testSet()
	set.Python = "3.11"
	epoch := time.Unix(1752537600, 0).UTC()
	repo, _ := name.NewRepository(host + "/standalone")

	solve := func(sums map[string]string) (*PlatformResult, error) {
		rendered, err := Render(dockerfiles.Dockerfile(), Params{ToolsImage: tools, PackageIndex: srv.URL + "/simple",
			PythonRuntime: PythonRuntimeStandalone, StandaloneURL: srv.URL + "/cpython-3.11-{arch}-install_only.tar.gz", StandaloneSHA256: sums})
		if err != nil {
			t.Fatal(err)
		}
		ctxs, err := PrepareContexts(filepath.Join(t.TempDir(), "ctx"), rendered, unlocked(set), t.TempDir(), nil, epoch)
		if err != nil {
			t.Fatal(err)
		}
		return b.Build(ctx, Spec{Platform: "linux/arm64", Contexts: ctxs, SourceDateEpoch: epoch, Repo: repo.Name(), Push: true,
			BuildArgs: map[string]string{"BASE_IMAGE": base, "PYTHON_VERSION": set.Python}})
	}
	r, err := solve(sums)
	if err != nil {
		t.Fatal(err)
	}
	if r.EmulatedSteps != 0 || r.Steps < 2 {
		t.Errorf("standalone runtime: %d RUN steps, %d emulated (%v); want 2 (runtime, wheels) and 0", r.Steps, r.EmulatedSteps, r.Emulated)
	}
	pub, err := Publish(ctx, repo, []*PlatformResult{r}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := fileInImage(t, repo.Digest(pub.Platforms["linux/arm64"].Digest.String()), PythonDir[1:]+"/bin/python3")
	if !strings.Contains(got, "standalone aarch64") {
		t.Errorf("arm64 image's python3 is %q, want the aarch64 tarball's", got)
	}
	bad := map[string]string{"x86_64": sums["x86_64"], "aarch64": sums["x86_64"]}
	if _, err := solve(bad); err == nil {
		t.Error("a tarball with the wrong sha256 was accepted")
	}
}

// TestBuildKitCountsEmulatedRun proves the emulated-step count is measured:
// a RUN in an arm64 stage on an amd64 buildkitd must count as one.
func TestBuildKitCountsEmulatedRun(t *testing.T) {
	b := requireBuildKit(t)
	cache := os.Getenv("IMAGECTL_TEST_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "imagectl-test")
	}
	baseTar := filepath.Join(cache, "base", "base-arm64.tar")
	_, err := os.Stat(baseTar)
	need(t, "arm64 stand-in base tarball (run hack/deps.d/35-base-images.sh)", err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	native, err := b.Ping(ctx, "linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	if native == "linux/arm64" {
		t.Skip("buildkitd is native arm64: nothing would be emulated")
	}
	reg := httptest.NewServer(registry.New(registry.Logger(nopLogger())))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	base := pushImage(t, host+"/arm-base", mustRootfs(t, baseTar), "linux/arm64")
	def := []byte("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN uname -m > /arch\n")
	ctxs, err := PrepareContexts(filepath.Join(t.TempDir(), "ctx"), def, nil, t.TempDir(), nil, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := name.NewRepository(host + "/emulated")
	r, err := b.Build(ctx, Spec{Platform: "linux/arm64", Contexts: ctxs, Repo: repo.Name(), Push: true,
		BuildArgs: map[string]string{"BASE_IMAGE": base}})
	if err != nil {
		t.Fatal(err)
	}
	if r.EmulatedSteps != 1 || r.Steps != 1 || len(r.Emulated) != 1 || !strings.Contains(r.Emulated[0], "RUN uname -m") {
		t.Errorf("an arm64 RUN on %s: steps %d, emulated %d %v; want 1 and 1", native, r.Steps, r.EmulatedSteps, r.Emulated)
	}
	pub, err := Publish(ctx, repo, []*PlatformResult{r}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fileInImage(t, repo.Digest(pub.Platforms["linux/arm64"].Digest.String()), "arch"); strings.TrimSpace(got) != "aarch64" {
		t.Errorf("uname -m in the arm64 RUN printed %q, want aarch64 (QEMU)", got)
	}
}

// TestBuildKitPushesWithDockerLogin: buildkitd pushes by itself but asks the
// client session for credentials. Against a registry that requires token
// authentication as Docker Hub does, the push succeeds with the docker
// config `docker login` writes, and fails without it.
func TestBuildKitPushesWithDockerLogin(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	private := authregistry.New(registry.New(registry.Logger(nopLogger())), "ci", "s3cret")
	srv := httptest.NewServer(private)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	def := []byte("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n")
	ctxs, err := PrepareContexts(filepath.Join(t.TempDir(), "ctx"), def, nil, t.TempDir(), nil, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Platform: "linux/amd64", Contexts: ctxs, Repo: host + "/team/private", Push: true,
		BuildArgs: map[string]string{"BASE_IMAGE": f.tools}}

	t.Setenv("DOCKER_CONFIG", t.TempDir()) // logged in nowhere
	if _, err := f.b.Build(ctx, spec); err == nil {
		t.Fatal("buildkitd pushed to a registry requiring a login without credentials")
	} else if !strings.Contains(err.Error(), "push access denied") {
		t.Errorf("push without credentials failed, but not for want of them: %v", err)
	}

	dir := t.TempDir()
	if err := authregistry.WriteDockerConfig(dir, host, "ci", "s3cret"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	r, err := f.b.Build(ctx, spec)
	if err != nil {
		t.Fatalf("push with docker login credentials: %v (registry: %q)", err, private.Log())
	}
	repo, _ := name.NewRepository(spec.Repo)
	if _, err := remote.Head(repo.Digest(r.Exported), regauth.RemoteOptions(ctx)...); err != nil {
		t.Errorf("the pushed %s is not in the registry: %v", r.Exported, err)
	}
	var issued bool
	for _, l := range private.Log() {
		issued = issued || strings.HasPrefix(l, "token user=ci ") && strings.Contains(l, "team/private:pull,push")
	}
	if !issued {
		t.Errorf("no push token was issued to user ci for BuildKit: %q", private.Log())
	}
}

// unlocked is the requirements file of a set without a locked closure.
func unlocked(set resolve.Set) []byte {
	b, _ := Requirements(set, "linux/amd64")
	return b
}

// TestBuildKitLockedWheels builds the arm64 wheels stage from a closure
// locked with the machine's pip against the fixture index: the transitive
// platform wheel is the aarch64 one; after a wheel is swapped in the index,
// the build fails with one line naming it, the platform and both hashes.
func TestBuildKitLockedWheels(t *testing.T) {
	f := newFixture(t)
	locker := pip.New(pip.WithTimeout(20*time.Second), pip.WithRetries(0))
	_, err := locker.Check(context.Background())
	need(t, "pip for python3 (locks the closure)", err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	srv := httptest.NewServer(http.FileServer(http.Dir(f.pyDir)))
	defer srv.Close()
	index := srv.URL + "/simple"

	set := testSet()
	set.Python, set.Debugpy = "3.11", "1.8.14"
	const platform = "linux/arm64"
	ds, err := locker.Lock(ctx, catalog.LockRequest{Requirements: []string{"ray[default]==2.46.0", "debugpy==1.8.14"}, Python: set.Python, Platform: platform, Index: index})
	if err != nil {
		t.Fatal(err)
	}
	set.PythonLocks = map[string][]resolve.PythonDist{}
	var aiosignal resolve.PythonDist
	for _, d := range ds {
		pd := resolve.PythonDist{Name: d.Name, Version: d.Version, Filename: d.Filename, URL: d.URL, SHA256: d.SHA256}
		set.PythonLocks[platform] = append(set.PythonLocks[platform], pd)
		if d.Name == "aiosignal" {
			aiosignal = pd
		}
	}
	reqs, locked := Requirements(set, platform)
	if !locked || aiosignal.SHA256 == "" {
		t.Fatalf("no locked requirements (aiosignal %+v):\n%s", aiosignal, reqs)
	}
	rendered, err := Render(dockerfiles.Dockerfile(), Params{ToolsImage: f.tools, PackageIndex: index, PythonRuntime: PythonRuntimeBase})
	if err != nil {
		t.Fatal(err)
	}
	base := pushImage(t, f.host+"/base", configLayer(t), platform)
	repo, _ := name.NewRepository(f.host + "/locked")
	epoch := time.Unix(1752537600, 0).UTC()
	solve := func(reqs []byte) (*PlatformResult, error) {
		ctxs, err := PrepareContexts(filepath.Join(t.TempDir(), "ctx"), rendered, reqs, t.TempDir(), nil, epoch)
		if err != nil {
			t.Fatal(err)
		}
		return f.b.Build(ctx, Spec{Platform: platform, Contexts: ctxs, SourceDateEpoch: epoch, Repo: repo.Name(), Push: true,
			BuildArgs: map[string]string{"BASE_IMAGE": base, "PYTHON_VERSION": set.Python}})
	}
	r, err := solve(reqs)
	if err != nil {
		t.Fatalf("locked build: %v", err)
	}
	idx, err := remote.Index(repo.Digest(r.Exported))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var img name.Digest
	for _, m := range im.Manifests {
		if m.Platform != nil && m.Platform.Architecture == "arm64" {
			img = repo.Digest(m.Digest.String())
		}
	}
	if arch := fileInImage(t, img, PythonSitePackages("3.11")[1:]+"/frozenlist/_fixture_arch.txt"); strings.TrimSpace(arch) != "aarch64" {
		t.Errorf("the transitive platform wheel frozenlist is the %q one, want aarch64", arch)
	}
	fileInImage(t, img, PythonSitePackages("3.11")[1:]+"/aiosignal-1.3.1.dist-info/METADATA")

	// The index now serves other bytes under aiosignal's locked name.
	if out, err := exec.Command("python3", "../tests/e2e/mkwheels.py", "--swap", "aiosignal", f.pyDir).CombinedOutput(); err != nil {
		t.Fatalf("mkwheels.py --swap: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(f.pyDir, "files", aiosignal.Filename))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	got := hex.EncodeToString(sum[:])
	// Another comment line: the RUN step is not taken from the cache.
	_, err = solve(append(append([]byte(nil), reqs...), "# after the swap\n"...))
	var he *HashMismatchError
	if !errors.As(err, &he) {
		t.Fatalf("build after the swap: err = %v, want a HashMismatchError", err)
	}
	t.Logf("after the swap: %v", err)
	msg := he.Error()
	for _, want := range []string{"aiosignal 1.3.1 on linux/arm64", "locked sha256 " + aiosignal.SHA256, "served sha256 " + got} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the error is more than one line: %q", err)
	}
}
