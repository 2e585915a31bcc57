package build

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/moby/buildkit/client"

	"github.com/imagectl/imagectl/dockerfiles"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/publish"
	"github.com/imagectl/imagectl/pylock"
	"github.com/imagectl/imagectl/regauth"
	"github.com/imagectl/imagectl/regauth/regauthtest"
	"github.com/imagectl/imagectl/upstream/pip"
)

// requireBuildKit returns a BuildKit for $BUILDKIT_HOST, or skips.
func requireBuildKit(t *testing.T) *BuildKit {
	t.Helper()
	addr := os.Getenv("BUILDKIT_HOST")
	if addr == "" {
		testutil.SkipOrFail(t, "BUILDKIT_HOST is not set: no buildkitd to build with (make test runs go test under tests/e2e/with-buildkitd.sh, which starts one)")
	}
	b := NewBuildKit(WithAddress(addr))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	native, err := b.Ping(ctx, "linux/amd64")
	if err != nil {
		testutil.SkipOrFail(t, "BUILDKIT_HOST=%s is unreachable: %v", addr, err)
	}
	t.Logf("buildkitd at %s, native platform %s", addr, native)
	return b
}

// need skips (fails under IMAGECTL_REQUIRE_TOOLS=1) when err is not nil.
func need(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		testutil.SkipOrFail(t, "%s: %v", what, err)
	}
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
	cache := testutil.CacheDir()
	toolsTar := filepath.Join(cache, "base", "tools-amd64.tar")
	_, err := os.Stat(toolsTar)
	need(t, "tools image tarball (run hack/deps.d/35-base-images.sh)", err)
	_, err = exec.LookPath("python3")
	need(t, "python3 (builds the fixture wheels)", err)

	host := testutil.Registry(t)
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

	// Two extensions: testpub.hello is universal (the same files on both
	// platforms), testpub.native has a build per platform.
	folders := []ExtensionFolder{{ID: "testpub.hello", Folder: "testpub.hello-1.0.0"}, {ID: "testpub.native", Folder: "testpub.native-2.0.0"}}
	ids := []string{folders[0].ID, folders[1].ID}
	rendered, err := Render(dockerfiles.Dockerfile(), Params{ToolsImage: tools, PackageIndex: py.URL + "/simple", PythonRuntime: imagespec.PythonRuntimeBase, Extensions: ids})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(rendered), "COPY --link --chown=911:911 --from=ext-"); n != 2 {
		t.Fatalf("rendered definition has %d extension COPY lines, want 2:\n%s", n, rendered)
	}
	set := testSet()
	set.Python = "3.11"
	epoch := time.Unix(1752537600, 0).UTC()
	layout := func(t *testing.T, platform string) string {
		ext := t.TempDir()
		files := map[string]string{
			"testpub.hello-1.0.0/package.json":      `{"name":"hello"}`,
			"testpub.hello-1.0.0/out/extension.js":  "exports.activate = () => {};\n",
			"testpub.native-2.0.0/package.json":     `{"name":"native"}`,
			"testpub.native-2.0.0/bin/platform.txt": platform + "\n",
			"extensions.json":                       `[{"platform":"` + platform + `"}]`,
		}
		for name, body := range files {
			p := filepath.Join(ext, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return ext
	}
	repo, err := name.NewRepository(host + "/built")
	if err != nil {
		t.Fatal(err)
	}
	solve := func(cold bool) *publish.Published {
		var results []*PlatformResult
		for _, p := range []string{"linux/amd64", "linux/arm64"} {
			ctxs, err := PrepareContexts(filepath.Join(t.TempDir(), "ctx"), ContextInput{Definition: rendered, Requirements: unlocked(set),
				Layout: layout(t, p), Extensions: folders, Settings: []byte("{}\n"), Time: epoch})
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
		pub, err := publish.Publish(ctx, repo, exports(results), []string{"t"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return pub
	}
	// BuildKit's cache keys ignore file times: a cache warmed by a build
	// with other times would lend its layers. Both solves start empty.
	pruneAll(ctx, t)
	first := solve(true)
	if len(first.Platforms) != 2 || len(first.Provenance) != 2 {
		t.Fatalf("published %d platforms and %d provenance statements, want 2 and 2", len(first.Platforms), len(first.Provenance))
	}
	arch := fileInImage(t, repo.Digest(first.Platforms["linux/arm64"].Digest.String()), imagespec.PythonSitePackages("3.11")[1:]+"/ray/_fixture_arch.txt")
	if strings.TrimSpace(arch) != "aarch64" {
		t.Errorf("arm64 image has the %q ray wheel, want aarch64", arch)
	}
	refs, err := remote.Referrers(repo.Digest(first.Platforms["linux/arm64"].Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	if im, _ := refs.IndexManifest(); im == nil || len(im.Manifests) == 0 || im.Manifests[0].ArtifactType != imagespec.ProvenanceArtifactType {
		t.Errorf("no provenance referrer on the arm64 manifest: %+v", im)
	}

	// Without the exporter's rewrite pass, every layer the definition adds
	// has every time at SOURCE_DATE_EPOCH, and each extension, the list and
	// the settings are layers of their own.
	layers := map[string]map[string]v1.Hash{}
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		layers[p] = addedLayers(t, repo.Digest(first.Platforms[p].Digest.String()), 1, epoch)
		for _, what := range []string{"packages", "ray", "debugpy", "testpub.hello-1.0.0", "testpub.native-2.0.0", "extensions.json", "settings.json"} {
			if _, ok := layers[p][what]; !ok {
				t.Errorf("%s: no layer of its own holds %s: %v", p, what, layers[p])
			}
		}
	}
	amd, arm := layers["linux/amd64"], layers["linux/arm64"]
	if amd["testpub.hello-1.0.0"] != arm["testpub.hello-1.0.0"] {
		t.Errorf("the universal extension's layer differs between platforms: %s vs %s", amd["testpub.hello-1.0.0"], arm["testpub.hello-1.0.0"])
	}
	if amd["testpub.native-2.0.0"] == arm["testpub.native-2.0.0"] {
		t.Errorf("the platform-specific extension's layers are the same blob %s: the contexts were not per platform", amd["testpub.native-2.0.0"])
	}

	// From an empty cache, later: anything that took the time of the
	// build would now differ.
	pruneAll(ctx, t)
	time.Sleep(1100 * time.Millisecond)
	second := solve(true)
	if first.Index != second.Index {
		t.Errorf("index digest changed between two solves from an empty cache: %s then %s", first.Index, second.Index)
		for _, p := range []string{"linux/amd64", "linux/arm64"} {
			again := addedLayers(t, repo.Digest(second.Platforms[p].Digest.String()), 1, epoch)
			if diff := cmp.Diff(layers[p], again); diff != "" {
				t.Errorf("%s: layers (-first +second):\n%s", p, diff)
			}
			for what, d := range layers[p] {
				if again[what] == d {
					continue
				}
				a, b := layerListing(t, repo.Digest(d.String())), layerListing(t, repo.Digest(again[what].String()))
				if diff := cmp.Diff(a, b); diff != "" {
					t.Errorf("%s: %s layer entries (-first +second):\n%s", p, what, diff)
				}
			}
		}
	}
}

// pruneAll empties the build cache of $BUILDKIT_HOST.
func pruneAll(ctx context.Context, t *testing.T) {
	t.Helper()
	c, err := client.New(ctx, os.Getenv("BUILDKIT_HOST"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Prune(ctx, nil, client.PruneAll); err != nil {
		t.Fatalf("pruning the build cache: %v", err)
	}
}

// layerListing describes every entry of the layer blob ref: header fields
// and a digest of the content.
func layerListing(t *testing.T, ref name.Digest) []string {
	t.Helper()
	l, err := remote.Layer(ref)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var out []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.New()
		if _, err := io.Copy(sum, tr); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s type=%c mode=%o uid=%d gid=%d size=%d link=%q mtime=%d format=%v pax=%v sha256=%x",
			h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Size, h.Linkname, h.ModTime.Unix(), h.Format, h.PAXRecords, sum.Sum(nil)))
	}
}

// addedLayers checks the layers of the image ref after its first base ones:
// every tar entry has mtime epoch and no access or change time. It returns
// the layers by what they hold: "packages" (site-packages/click, a
// dependency), "ray", "debugpy", an extension
// folder name, "extensions.json" or "settings.json".
func addedLayers(t *testing.T, ref name.Reference, base int, epoch time.Time) map[string]v1.Hash {
	t.Helper()
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.Hash{}
	for _, l := range ls[base:] {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		bad := 0
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if (!h.ModTime.Equal(epoch) || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero()) && bad < 5 {
				bad++
				t.Errorf("%s layer %s: %s has mtime %v (atime %v, ctime %v), want %v", ref, d, h.Name, h.ModTime.UTC(), h.AccessTime, h.ChangeTime, epoch)
			}
			n := strings.TrimPrefix(h.Name, "./")
			switch {
			case strings.Contains(n, "/site-packages/ray/"):
				out["ray"] = d
			case strings.Contains(n, "/site-packages/debugpy/"):
				out["debugpy"] = d
			case strings.Contains(n, "/site-packages/click/"):
				out["packages"] = d
			case strings.HasPrefix(n, "config/extensions/") && strings.Count(n, "/") >= 3:
				out[strings.Split(n, "/")[2]] = d
			case n == "config/extensions/extensions.json":
				out["extensions.json"] = d
			case n == "config/data/User/settings.json":
				out["settings.json"] = d
			}
		}
		rc.Close()
	}
	return out
}

// exports are the pushed exports of results, for publish.Publish.
func exports(results []*PlatformResult) []publish.Export {
	out := make([]publish.Export, len(results))
	for i, r := range results {
		out[i] = publish.Export{Platform: r.Platform, Digest: r.Exported}
	}
	return out
}

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
			PythonRuntime: imagespec.PythonRuntimeStandalone, StandaloneURL: srv.URL + "/cpython-3.11-{arch}-install_only.tar.gz", StandaloneSHA256: sums})
		if err != nil {
			t.Fatal(err)
		}
		ctxs, err := PrepareContexts(filepath.Join(t.TempDir(), "ctx"), ContextInput{Definition: rendered, Requirements: unlocked(set), Time: epoch})
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
	pub, err := publish.Publish(ctx, repo, exports([]*PlatformResult{r}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := fileInImage(t, repo.Digest(pub.Platforms["linux/arm64"].Digest.String()), imagespec.PythonDir[1:]+"/bin/python3")
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
	cache := testutil.CacheDir()
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
	host := testutil.Registry(t)
	base := pushImage(t, host+"/arm-base", mustRootfs(t, baseTar), "linux/arm64")
	def := []byte("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN uname -m > /arch\n")
	ctxs, err := PrepareContexts(filepath.Join(t.TempDir(), "ctx"), ContextInput{Definition: def, Time: time.Unix(0, 0)})
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
	pub, err := publish.Publish(ctx, repo, exports([]*PlatformResult{r}), nil, nil)
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
	private := regauthtest.New(testutil.RegistryHandler(), "ci", "s3cret")
	host := testutil.Serve(t, private)
	def := []byte("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n")
	ctxs, err := PrepareContexts(filepath.Join(t.TempDir(), "ctx"), ContextInput{Definition: def, Time: time.Unix(0, 0)})
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
	if err := regauthtest.WriteDockerConfig(dir, host, "ci", "s3cret"); err != nil {
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

// TestBuildKitPrepareThenPush: a prepared solve (exported into buildkitd's
// store only) makes the same solve with Push a cached one that pushes the
// same image.
func TestBuildKitPrepareThenPush(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	def := []byte("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nCOPY --link --from=userdata / /\n")
	ctxs, err := PrepareContexts(filepath.Join(t.TempDir(), "ctx"), ContextInput{Definition: def, Settings: []byte(`{"prepared":true}`), Time: time.Unix(1752537600, 0)})
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Platform: "linux/amd64", Contexts: ctxs, Repo: f.host + "/prepared", BuildArgs: map[string]string{"BASE_IMAGE": f.tools},
		SourceDateEpoch: time.Unix(1752537600, 0)}
	prep := spec
	prep.Prepare = true
	p, err := f.b.Build(ctx, prep)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	spec.Push = true
	r, err := f.b.Build(ctx, spec)
	if err != nil {
		t.Fatalf("push after prepare: %v", err)
	}
	if p.Exported == "" || r.Exported != p.Exported {
		t.Errorf("prepared %q, pushed %q: want the same image", p.Exported, r.Exported)
	}
	repo, _ := name.NewRepository(spec.Repo)
	if _, err := remote.Head(repo.Digest(r.Exported)); err != nil {
		t.Errorf("the pushed %s is not in the registry: %v", r.Exported, err)
	}

	// A signed build's push asks for provenance, which its prepare does
	// not (build/pipeline: the SBOM scan reads the prepared image while it
	// is pushed). The image manifest in the index it pushes is the
	// prepared one, which Image opens with want "".
	img, closeImg, _, err := f.b.Image(ctx, p, "", nil)
	if err != nil {
		t.Fatalf("Image of the prepared %s: %v", p.Exported, err)
	}
	defer closeImg()
	prepared, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	spec.Provenance = true
	r, err = f.b.Build(ctx, spec)
	if err != nil {
		t.Fatalf("push with provenance after prepare: %v", err)
	}
	pub, err := publish.Publish(ctx, repo, exports([]*PlatformResult{r}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := pub.Platforms["linux/amd64"].Digest; got != prepared {
		t.Errorf("pushed with provenance: the platform manifest is %s, want the prepared %s", got, prepared)
	}
	if r.Exported == prepared.String() {
		t.Errorf("pushed with provenance: exported %s, the bare manifest; want an index with the attestation manifest", r.Exported)
	}
	if ls, err := img.Layers(); err != nil || len(ls) < 2 {
		t.Fatalf("the prepared image from buildkitd: %d layers (%v), want the base's and the COPY's", len(ls), err)
	}
}

// unlocked is the requirements file of a set without a locked closure.
func unlocked(set imagespec.Set) []byte {
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
	ds, err := locker.Lock(ctx, pylock.Request{Requirements: []string{"ray[default]==2.46.0", "debugpy==1.8.14"}, Python: set.Python, Platform: platform, Index: index})
	if err != nil {
		t.Fatal(err)
	}
	set.PythonLocks = map[string][]imagespec.PythonDist{}
	var aiosignal imagespec.PythonDist
	for _, d := range ds {
		pd := imagespec.PythonDist{Name: d.Name, Version: d.Version, Filename: d.Filename, URL: d.URL, SHA256: d.SHA256}
		set.PythonLocks[platform] = append(set.PythonLocks[platform], pd)
		if d.Name == "aiosignal" {
			aiosignal = pd
		}
	}
	reqs, locked := Requirements(set, platform)
	if !locked || aiosignal.SHA256 == "" {
		t.Fatalf("no locked requirements (aiosignal %+v):\n%s", aiosignal, reqs)
	}
	rendered, err := Render(dockerfiles.Dockerfile(), Params{ToolsImage: f.tools, PackageIndex: index, PythonRuntime: imagespec.PythonRuntimeBase})
	if err != nil {
		t.Fatal(err)
	}
	base := pushImage(t, f.host+"/base", configLayer(t), platform)
	repo, _ := name.NewRepository(f.host + "/locked")
	epoch := time.Unix(1752537600, 0).UTC()
	solve := func(reqs []byte) (*PlatformResult, error) {
		ctxs, err := PrepareContexts(filepath.Join(t.TempDir(), "ctx"), ContextInput{Definition: rendered, Requirements: reqs, Time: epoch})
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
	if arch := fileInImage(t, img, imagespec.PythonSitePackages("3.11")[1:]+"/frozenlist/_fixture_arch.txt"); strings.TrimSpace(arch) != "aarch64" {
		t.Errorf("the transitive platform wheel frozenlist is the %q one, want aarch64", arch)
	}
	fileInImage(t, img, imagespec.PythonSitePackages("3.11")[1:]+"/aiosignal-1.3.1.dist-info/METADATA")

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
	var he *pylock.HashMismatchError
	if !errors.As(err, &he) {
		t.Fatalf("build after the swap: err = %v, want a pylock.HashMismatchError", err)
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

// TestBuildKitImageFromContentStore: the image a pushing solve exported is
// read back from buildkitd's content store (BuildKit.Image), not from the
// registry: the same manifest, config and layers, byte for byte, as the
// registry holds; another manifest digest is refused.
func TestBuildKitImageFromContentStore(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	def := []byte("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN echo built > /built.txt\n")
	ctxs, err := PrepareContexts(filepath.Join(t.TempDir(), "ctx"), ContextInput{Definition: def, Time: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := name.NewRepository(f.host + "/from-store")
	r, err := f.b.Build(ctx, Spec{Platform: "linux/amd64", Contexts: ctxs, Repo: repo.Name(), Push: true, Provenance: true,
		BuildArgs: map[string]string{"BASE_IMAGE": f.tools}})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := publish.Publish(ctx, repo, exports([]*PlatformResult{r}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := pub.Platforms["linux/amd64"].Digest.String()
	pushed, err := remote.Image(repo.Digest(want))
	if err != nil {
		t.Fatal(err)
	}
	img, closeImg, fellBack, err := f.b.Image(ctx, r, want, pushed)
	if err != nil {
		t.Fatalf("Image(%s, %s): %v", r.Exported, want, err)
	}
	defer closeImg()
	if d, err := img.Digest(); err != nil || d.String() != want {
		t.Errorf("the image from buildkitd is %s (%v), want the pushed %s", d, err, want)
	}
	a, _ := img.RawConfigFile()
	b, _ := pushed.RawConfigFile()
	if !bytes.Equal(a, b) {
		t.Error("the config from buildkitd differs from the pushed one")
	}
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	pls, _ := pushed.Layers()
	if len(ls) != len(pls) || len(ls) < 2 {
		t.Fatalf("%d layers from buildkitd, %d pushed; want the same, at least 2", len(ls), len(pls))
	}
	for i := range ls {
		got := readLayer(t, ls[i])
		if !bytes.Equal(got, readLayer(t, pls[i])) {
			t.Errorf("layer %d: the bytes from buildkitd differ from the pushed ones", i)
		}
	}
	// The RUN step unpacked the base: buildkitd holds every layer.
	if n := fellBack(); n != 0 {
		t.Errorf("%d layer(s) read from the registry, want none: buildkitd holds them all", n)
	}
	if _, _, _, err := f.b.Image(ctx, r, "sha256:"+strings.Repeat("0", 64), pushed); err == nil {
		t.Error("Image of a manifest the solve did not export: no error")
	}

	// Without a RUN step buildkitd never pulls the base's layers: it
	// pushes them by cross-repository mount. They are read from the
	// fallback, the registry's copy, and nothing else is.
	def = []byte("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nLABEL imagectl.test=lazy\n")
	ctxs, err = PrepareContexts(filepath.Join(t.TempDir(), "ctx"), ContextInput{Definition: def, Time: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	pruneAll(ctx, t)
	r, err = f.b.Build(ctx, Spec{Platform: "linux/amd64", Contexts: ctxs, Repo: repo.Name(), Push: true,
		BuildArgs: map[string]string{"BASE_IMAGE": f.tools}})
	if err != nil {
		t.Fatal(err)
	}
	pub, err = publish.Publish(ctx, repo, exports([]*PlatformResult{r}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want = pub.Platforms["linux/amd64"].Digest.String()
	if pushed, err = remote.Image(repo.Digest(want)); err != nil {
		t.Fatal(err)
	}
	lazy, closeLazy, lazyFellBack, err := f.b.Image(ctx, r, want, pushed)
	if err != nil {
		t.Fatalf("Image of the LABEL-only image: %v", err)
	}
	defer closeLazy()
	ls, err = lazy.Layers()
	if err != nil {
		t.Fatal(err)
	}
	pls, _ = pushed.Layers()
	for i := range ls {
		if !bytes.Equal(readLayer(t, ls[i]), readLayer(t, pls[i])) {
			t.Errorf("LABEL-only image, layer %d: the bytes differ from the pushed ones", i)
		}
	}
	t.Logf("LABEL-only image: %d of %d layers read from the registry", lazyFellBack(), len(ls))
	if n := lazyFellBack(); n != len(ls) {
		t.Errorf("LABEL-only image: %d of its %d base layers read from the registry, want all (buildkitd never pulled them)", n, len(ls))
	}
}

// readLayer reads a layer's compressed content to its end (which checks
// it against the layer's digest).
func readLayer(t *testing.T, l v1.Layer) []byte {
	t.Helper()
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
