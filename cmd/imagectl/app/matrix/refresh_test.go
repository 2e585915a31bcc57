package matrix_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"gopkg.in/yaml.v3"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/cmd/imagectl/app/apptest"
	"github.com/imagectl/imagectl/extensions/gallerytest"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/pylock"
	"github.com/imagectl/imagectl/upstream/github/githubtest"
	"github.com/imagectl/imagectl/upstream/pip"
	"github.com/imagectl/imagectl/upstream/pypi/pypitest"
)

// fakeBase is a base image repository in an in-process registry, tagged like
// lscr.io/linuxserver/code-server.
type fakeBase struct {
	repo string // host:port/linuxserver/code-server
	// index, amd64 and arm64 are the digests behind the plain version tag.
	index, amd64, arm64 string
	// tools is a two-platform tools image tag in the same registry and
	// toolsIndex the index digest it names.
	tools, toolsIndex string
}

func platformImage(t *testing.T, arch string) v1.Image {
	t.Helper()
	img, err := imagetest.RandomPlatformImage(arch)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func twoPlatformIndex(t *testing.T) (v1.ImageIndex, v1.Image, v1.Image) {
	t.Helper()
	idx, err := imagetest.RandomIndex("amd64", "arm64")
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	imgs := make([]v1.Image, 2)
	for i, d := range im.Manifests {
		if imgs[i], err = idx.Image(d.Digest); err != nil {
			t.Fatal(err)
		}
	}
	return idx, imgs[0], imgs[1]
}

func startFakeBase(t *testing.T) fakeBase {
	t.Helper()
	host := testutil.Registry(t)
	repo := host + "/linuxserver/code-server"
	push := func(tag string, write func(name.Reference) error) {
		t.Helper()
		ref, err := name.ParseReference(repo+":"+tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := write(ref); err != nil {
			t.Fatalf("pushing %s: %v", ref, err)
		}
	}
	idx, amd, arm := twoPlatformIndex(t)
	push("4.101.2", func(r name.Reference) error { return remote.WriteIndex(r, idx) })
	// Tags that must be ignored, each on different content so that picking
	// one by mistake shows in the digests: a linuxserver build tag, a
	// single-arch tag, a floating tag, and a version below the matrix
	// constraint.
	for _, tag := range []string{"4.101.2-ls285", "latest", "4.95.0"} {
		other, _, _ := twoPlatformIndex(t)
		push(tag, func(r name.Reference) error { return remote.WriteIndex(r, other) })
	}
	push("amd64-4.101.2", func(r name.Reference) error { return remote.Write(r, platformImage(t, "amd64")) })
	digest := func(d func() (v1.Hash, error)) string {
		h, err := d()
		if err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
	tools := host + "/library/python:3.12-slim-bookworm"
	toolsIdx, _, _ := twoPlatformIndex(t)
	tref, err := name.ParseReference(tools)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tref, toolsIdx); err != nil {
		t.Fatalf("pushing %s: %v", tools, err)
	}
	return fakeBase{repo: repo, index: digest(idx.Digest), amd64: digest(amd.Digest), arm64: digest(arm.Digest),
		tools: tools, toolsIndex: digest(toolsIdx.Digest)}
}

// fakePyPIProjects is ray and debugpy as the fake PyPI serves them: Ray
// 2.46.0 has wheels for CPython 3.9-3.12 on amd64 but only 3.9-3.11 on arm64
// (so the common Python is 3.11, unlike the committed catalog), and debugpy
// 1.8.15 is newer than anything the committed catalog knows. Ray requires
// click (pure) and its [default] extra aiohttp (pure), which requires
// aiosignal (pure) and frozenlist (a platform wheel per architecture):
// the closure refresh locks with pip.
func fakePyPIProjects() []pypitest.Project {
	rayWheel := func(name string) pypitest.File {
		f := pypitest.Wheel(name)
		f.Requires = []string{"click>=7.0", `aiohttp>=3.7; extra == "default"`}
		f.Extras = []string{"default"}
		return f
	}
	var ray, frozenlist []pypitest.File
	for _, py := range []string{"39", "310", "311", "312"} {
		ray = append(ray,
			rayWheel(fmt.Sprintf("ray-2.46.0-cp%s-cp%s-manylinux2014_x86_64.whl", py, py)),
			rayWheel(fmt.Sprintf("ray-2.46.0-cp%s-cp%s-macosx_12_0_arm64.whl", py, py)))
		if py != "312" {
			ray = append(ray, rayWheel(fmt.Sprintf("ray-2.46.0-cp%s-cp%s-manylinux2014_aarch64.whl", py, py)))
		}
		for _, arch := range []string{"x86_64", "aarch64"} {
			frozenlist = append(frozenlist, pypitest.Wheel(fmt.Sprintf("frozenlist-1.4.1-cp%s-cp%s-manylinux2014_%s.whl", py, py, arch)))
		}
	}
	aiohttp := pypitest.Wheel("aiohttp-3.9.5-py3-none-any.whl")
	aiohttp.Requires = []string{"aiosignal>=1.1.2", "frozenlist>=1.1.1"}
	return []pypitest.Project{
		{Name: "click", Releases: map[string][]pypitest.File{"8.1.8": {pypitest.Wheel("click-8.1.8-py3-none-any.whl")}}},
		{Name: "aiohttp", Releases: map[string][]pypitest.File{"3.9.5": {aiohttp}}},
		{Name: "aiosignal", Releases: map[string][]pypitest.File{
			"1.3.1": {pypitest.Wheel("aiosignal-1.3.1-py3-none-any.whl")},
			"1.3.2": {pypitest.Yanked("aiosignal-1.3.2-py3-none-any.whl")},
		}},
		{Name: "frozenlist", Releases: map[string][]pypitest.File{"1.4.1": frozenlist}},
		{Name: "ray", RequiresPython: ">=3.9", Releases: map[string][]pypitest.File{
			"2.46.0":    ray,
			"2.47.0rc1": {pypitest.Wheel("ray-2.47.0rc1-cp312-cp312-manylinux2014_x86_64.whl")},
			"2.38.0":    {pypitest.Wheel("ray-2.38.0-cp312-cp312-manylinux2014_x86_64.whl")},
		}},
		{Name: "debugpy", RequiresPython: ">=3.8", Releases: map[string][]pypitest.File{
			"1.8.15": {
				pypitest.Wheel("debugpy-1.8.15-cp311-cp311-manylinux_2_5_x86_64.manylinux1_x86_64.manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
				pypitest.Wheel("debugpy-1.8.15-py2.py3-none-any.whl"),
				{Filename: "debugpy-1.8.15.tar.gz"},
			},
			"1.7.0": {pypitest.Wheel("debugpy-1.7.0-py2.py3-none-any.whl")},
		}},
	}
}

func pbsName(version, arch string) string {
	return "cpython-" + version + "+20250808-" + arch + "-unknown-linux-gnu-install_only.tar.gz"
}

// pbsSum is the fake sha256 of a tarball: derived from its name.
func pbsSum(version, arch string) string {
	return fmt.Sprintf("%x", sha256.Sum256([]byte(pbsName(version, arch))))
}

// startFakePBS serves python-build-standalone release 20250808 on the fake
// GitHub: tarballs of 3.11.13, 3.12.11, 3.12.12 (x86_64 only) and 3.13.5,
// and their SHA256SUMS.
func startFakePBS(t *testing.T) *httptest.Server {
	t.Helper()
	var assets []githubtest.Asset
	for _, v := range []string{"3.11.13", "3.12.11", "3.12.12", "3.13.5"} {
		for _, arch := range []string{"x86_64", "aarch64"} {
			if v == "3.12.12" && arch == "aarch64" {
				continue
			}
			assets = append(assets, githubtest.Asset{Name: pbsName(v, arch), Size: 100, SHA256: pbsSum(v, arch)})
		}
	}
	assets = append(assets, githubtest.SumsAsset(githubtest.Sums(assets)))
	srv := httptest.NewServer(githubtest.New([]githubtest.Release{{Repository: "astral-sh/python-build-standalone", ID: 7, TagName: "20250808", Assets: assets}}))
	t.Cleanup(srv.Close)
	return srv
}

// pbsURL is the browser_download_url of a tarball on the fake gh.
func pbsURL(gh *httptest.Server, version, arch string) string {
	return githubtest.DownloadURL(gh.URL, "astral-sh/python-build-standalone", "20250808", pbsName(version, arch))
}

// setYAML sets the scalar at path (mapping keys) in the document doc.
func setYAML(t *testing.T, doc *yaml.Node, value string, path ...string) {
	t.Helper()
	n := doc
	if n.Kind == yaml.DocumentNode {
		n = n.Content[0]
	}
	for _, key := range path {
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				n, found = n.Content[i+1], true
				break
			}
		}
		if !found {
			t.Fatalf("matrix.yaml has no %s", strings.Join(path, "."))
		}
	}
	if n.Kind != yaml.ScalarNode {
		t.Fatalf("matrix.yaml %s is not a scalar", strings.Join(path, "."))
	}
	n.Value = value
}

// refreshFakes are fakes of every upstream matrix refresh asks (gallery,
// PyPI, the base and tools images) and the committed matrix.yaml as a
// YAML node pointed at them; the IMAGECTL_* variables that would override
// it are cleared.
type refreshFakes struct {
	builds  []gallerytest.Build
	gallery *gallerytest.Fake
	pypi    *pypitest.Fake
	pypiSrv *httptest.Server
	base    fakeBase
	doc     yaml.Node
}

func newRefreshFakes(t *testing.T) *refreshFakes {
	t.Helper()
	for _, env := range []string{"IMAGECTL_PYPI_URL", "IMAGECTL_MARKETPLACE_URL", "IMAGECTL_OPENVSX_URL", "IMAGECTL_GITHUB_URL", "IMAGECTL_BASE_IMAGE", "IMAGECTL_BASE_VERSIONS", "IMAGECTL_CATALOG", "IMAGECTL_MATRIX"} {
		t.Setenv(env, "")
	}
	builds, err := gallerytest.LoadDir(gallerytest.FixtureDir())
	if err != nil {
		t.Fatal(err)
	}
	fx := &refreshFakes{builds: builds, gallery: gallerytest.New(builds), pypi: pypitest.New(fakePyPIProjects())}
	t.Cleanup(fx.gallery.Close)
	fx.pypiSrv = httptest.NewServer(fx.pypi)
	t.Cleanup(fx.pypiSrv.Close)
	fx.base = startFakeBase(t)
	src, err := os.ReadFile(apptest.RepoMatrix)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(src, &fx.doc); err != nil {
		t.Fatal(err)
	}
	setYAML(t, &fx.doc, fx.base.repo, "base", "image")
	setYAML(t, &fx.doc, fx.base.tools, "build", "toolsImage")
	setYAML(t, &fx.doc, fx.pypiSrv.URL, "upstreams", "pypi")
	setYAML(t, &fx.doc, fx.gallery.MarketplaceURL(), "upstreams", "marketplace")
	setYAML(t, &fx.doc, fx.gallery.OpenVSXURL(), "upstreams", "openvsx")
	return fx
}

// writeMatrix writes the matrix into a fresh directory and returns its
// path and that of the catalog.json beside it.
func (fx *refreshFakes) writeMatrix(t *testing.T) (mpath, cpath string) {
	t.Helper()
	out, err := yaml.Marshal(&fx.doc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mpath = filepath.Join(dir, "matrix.yaml")
	if err := os.WriteFile(mpath, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return mpath, filepath.Join(dir, "catalog.json")
}

// End to end through the CLI: refresh against fakes of every upstream, then
// resolve from the snapshot it wrote.
func TestMatrixRefreshThenResolve(t *testing.T) {
	requirePip(t)
	fx := newRefreshFakes(t)
	builds, gal, pypiFake, pypiSrv, base := fx.builds, fx.gallery, fx.pypi, fx.pypiSrv, fx.base
	setYAML(t, &fx.doc, pypiSrv.URL+"/simple", "upstreams", "packageIndex")
	gh := startFakePBS(t)
	setYAML(t, &fx.doc, gh.URL, "upstreams", "github")
	mpath, cpath := fx.writeMatrix(t) // catalog.json: the default, beside matrix.yaml
	dir := filepath.Dir(mpath)

	refresh := func() []byte {
		t.Helper()
		code, stdout, stderr := apptest.Run(t, "--matrix", mpath, "matrix", "refresh", "--retries", "0", "--http-timeout", "20s")
		if code != 0 {
			t.Fatalf("matrix refresh: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "wrote "+cpath) {
			t.Errorf("refresh stdout %q does not name %s", stdout, cpath)
		}
		b, err := os.ReadFile(cpath)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first := refresh()
	if second := refresh(); !bytes.Equal(first, second) {
		t.Errorf("two refreshes of the same upstream state wrote different bytes:\n%s\n---\n%s", first, second)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%s holds %d entries, want matrix.yaml and catalog.json only (no temp files)", dir, len(ents))
	}
	cat, err := catalog.Load(cpath)
	if err != nil {
		t.Fatal(err)
	}

	// The catalog holds exactly what the fakes serve.
	platforms := map[string]string{"linux/amd64": base.amd64, "linux/arm64": base.arm64}
	wantCS := []catalog.CodeServer{{Version: "4.101.2", VSCode: "1.101.2", Tag: "4.101.2", IndexDigest: base.index, Platforms: platforms}}
	if diff := cmp.Diff(wantCS, cat.CodeServer); diff != "" {
		t.Errorf("code-server in the catalog (-want +got); only the plain version tag counts:\n%s", diff)
	}
	if diff := cmp.Diff(&catalog.ToolsImage{Ref: base.tools, Digest: base.toolsIndex}, cat.ToolsImage); diff != "" {
		t.Errorf("toolsImage in the catalog (-want +got); the index digest of build.toolsImage:\n%s", diff)
	}
	var wantRuntimes []catalog.PythonRuntime
	for _, v := range []string{"3.11.13", "3.12.11"} {
		wantRuntimes = append(wantRuntimes, catalog.PythonRuntime{
			Python: v[:4], Version: v, Repository: "astral-sh/python-build-standalone", Release: "20250808", Flavor: "install_only",
			Files: map[string]catalog.RuntimeFile{
				"linux/amd64": {URL: pbsURL(gh, v, "x86_64"), SHA256: pbsSum(v, "x86_64"), Size: 100},
				"linux/arm64": {URL: pbsURL(gh, v, "aarch64"), SHA256: pbsSum(v, "aarch64"), Size: 100},
			},
		})
	}
	if diff := cmp.Diff(wantRuntimes, cat.PythonRuntimes); diff != "" {
		t.Errorf("pythonRuntimes in the catalog (-want +got); 3.11 and 3.12 (matrix max) from SHA256SUMS, not 3.13 nor the x86_64-only 3.12.12:\n%s", diff)
	}
	wantRay := []catalog.PythonPackage{{Version: "2.46.0", RequiresPython: ">=3.9", Pythons: map[string][]string{
		"linux/amd64": {"3.9", "3.10", "3.11", "3.12"},
		"linux/arm64": {"3.9", "3.10", "3.11"},
	}}}
	if diff := cmp.Diff(wantRay, cat.Ray); diff != "" {
		t.Errorf("Ray in the catalog (-want +got):\n%s", diff)
	}
	wantDebugpy := []catalog.PythonPackage{{Version: "1.8.15", RequiresPython: ">=3.9", Pythons: map[string][]string{
		"any": {"any"}, "linux/amd64": {"3.11"},
	}}}
	if diff := cmp.Diff(wantDebugpy, cat.Debugpy); diff != "" {
		t.Errorf("debugpy in the catalog (-want +got):\n%s", diff)
	}
	// The closure of the one set matrix list builds (Ray 2.46.0 [default],
	// debugpy 1.8.15, CPython 3.11), per platform, as pip resolved it from
	// the fake index: the platform's own wheels, the universal ones, the
	// yanked aiosignal 1.3.2 left out, every sha256 that of the bytes served.
	var wantLocks []pylock.Lock
	for _, p := range []struct{ platform, arch string }{{"linux/amd64", "x86_64"}, {"linux/arm64", "aarch64"}} {
		files := []string{
			"aiohttp-3.9.5-py3-none-any.whl", "aiosignal-1.3.1-py3-none-any.whl", "click-8.1.8-py3-none-any.whl",
			"debugpy-1.8.15-py2.py3-none-any.whl", "frozenlist-1.4.1-cp311-cp311-manylinux2014_" + p.arch + ".whl",
			"ray-2.46.0-cp311-cp311-manylinux2014_" + p.arch + ".whl",
		}
		if p.arch == "x86_64" {
			files[3] = "debugpy-1.8.15-cp311-cp311-manylinux_2_5_x86_64.manylinux1_x86_64.manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
		}
		l := pylock.Lock{Ray: "2.46.0", RayExtras: []string{"default"}, Debugpy: "1.8.15", Python: "3.11", Platform: p.platform, Index: pypiSrv.URL + "/simple"}
		for _, f := range files {
			parts := strings.Split(f, "-")
			sum := pypiFake.SHA256(f)
			l.Distributions = append(l.Distributions, imagespec.PythonDist{Name: parts[0], Version: parts[1], Filename: f,
				URL: pypiSrv.URL + "/packages/" + sum[:4] + "/" + f, SHA256: sum})
		}
		wantLocks = append(wantLocks, l)
	}
	if diff := cmp.Diff(wantLocks, cat.PythonLocks); diff != "" {
		t.Errorf("pythonLocks in the catalog (-want +got):\n%s", diff)
	}

	wantExt := galleryRecords(t, builds, cat.Extensions)
	gotExt := stripURLs(t, cat.Extensions, gal.MarketplaceURL()+"/")
	if diff := cmp.Diff(wantExt, gotExt); diff != "" {
		t.Errorf("extensions in the catalog (-want +got):\n%s", diff)
	}

	// resolve reads that snapshot (no network) and uses it.
	code, stdout, stderr := apptest.Run(t, "--matrix", mpath, "matrix", "resolve", "--ray", "2.46.0", "--output", "json")
	if code != 0 {
		t.Fatalf("matrix resolve: exit %d\nstderr:\n%s", code, stderr)
	}
	var res struct {
		Set imagespec.Set `json:"set"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("stdout is not {\"set\": ...}: %v\n%s", err, stdout)
	}
	set := res.Set
	if want := base.tools + "@" + base.toolsIndex; set.ToolsImage != want {
		t.Errorf("set toolsImage %q, want %q (pinned by the refreshed catalog)", set.ToolsImage, want)
	}
	if diff := cmp.Diff(platforms, set.CodeServer.Platforms); diff != "" {
		t.Errorf("base digests per platform (-want +got):\n%s", diff)
	}
	if want := base.repo + ":4.101.2@" + base.index; set.CodeServer.Base != want || set.CodeServer.Version != "4.101.2" || set.CodeServer.VSCode != "1.101.2" {
		t.Errorf("code-server %s (VS Code %s) base %s; want 4.101.2 (1.101.2) base %s", set.CodeServer.Version, set.CodeServer.VSCode, set.CodeServer.Base, want)
	}
	if diff := cmp.Diff([]string{"3.9", "3.10", "3.11"}, set.RayPythons); diff != "" {
		t.Errorf("rayPythons: Pythons with Ray wheels on both platforms (-want +got):\n%s", diff)
	}
	if rt := set.PythonRuntime; rt == nil || rt.Version != "3.11.13" || rt.Files["linux/arm64"].SHA256 != pbsSum("3.11.13", "aarch64") || rt.Files["linux/amd64"].URL != pbsURL(gh, "3.11.13", "x86_64") {
		t.Errorf("set pythonRuntime %+v, want the catalog's 3.11.13 (the set's Python)", rt)
	}
	for _, l := range wantLocks {
		var want []imagespec.PythonDist
		for _, d := range l.Distributions {
			want = append(want, imagespec.PythonDist{Name: d.Name, Version: d.Version, Filename: d.Filename, URL: d.URL, SHA256: d.SHA256})
		}
		if diff := cmp.Diff(want, set.PythonLocks[l.Platform]); diff != "" {
			t.Errorf("the set's Python closure on %s (-want +got):\n%s", l.Platform, diff)
		}
	}
	if set.Ray != "2.46.0" || set.Python != "3.11" || set.Debugpy != "1.8.15" {
		t.Errorf("ray %s python %s debugpy %s; want 2.46.0, 3.11 (no arm64 3.12 wheel), 1.8.15", set.Ray, set.Python, set.Debugpy)
	}
	var ids []string
	for _, e := range set.Extensions {
		ids = append(ids, e.ID)
		want := newestCompatible(t, builds, e.ID, set.CodeServer.VSCode, set.Platforms)
		if e.Version != want.Version || e.Engine != want.Engine {
			t.Errorf("%s %s (engines %s); want %s (engines %s), the newest the fake serves for VS Code %s", e.ID, e.Version, e.Engine, want.Version, want.Engine, set.CodeServer.VSCode)
		}
		for _, p := range set.Platforms {
			f := e.Files[p]
			if f.TargetPlatform != want.files[p] {
				t.Errorf("%s %s on %s: target platform %q, want %q", e.ID, e.Version, p, f.TargetPlatform, want.files[p])
			}
			if u := catalogURL(cat, e.ID, e.Version, f.TargetPlatform); f.URL != u || u == "" {
				t.Errorf("%s %s on %s: url %q, want the catalog's %q", e.ID, e.Version, p, f.URL, u)
			}
		}
	}
	var catIDs []string
	for _, r := range cat.Extensions {
		catIDs = append(catIDs, r.ID)
	}
	slices.Sort(ids)
	if diff := cmp.Diff(catIDs, ids); diff != "" {
		t.Errorf("extensions in the set (-want +got):\n%s", diff)
	}

	// extensions pin records the set's files; a later refresh keeps them.
	code, stdout, stderr = apptest.Run(t, "--matrix", mpath, "extensions", "pin", "--ray", "2.46.0", "--cache-dir", filepath.Join(dir, "..", "vsix"))
	if code != 0 || !strings.Contains(stdout, "newly pinned") {
		t.Fatalf("extensions pin: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	pinned := refresh()
	if bytes.Equal(pinned, first) {
		t.Fatal("extensions pin changed nothing in the catalog")
	}
	cat, err = catalog.Load(cpath)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range set.Extensions {
		for _, p := range set.Platforms {
			tp := e.Files[p].TargetPlatform
			for _, b := range builds {
				if b.ID == e.ID && b.Version == e.Version && b.TargetPlatform == tp {
					if got := catalogSHA256(cat, e.ID, e.Version, tp); got != b.SHA256() {
						t.Errorf("after pin and refresh, %s@%s (%s) has sha256 %q, want %s", e.ID, e.Version, tp, got, b.SHA256())
					}
				}
			}
		}
	}
}

func catalogSHA256(cat *catalog.Catalog, id, version, tp string) string {
	for _, r := range cat.Extensions {
		for _, v := range r.Versions {
			if r.ID == id && v.Version == version {
				return v.Files[tp].SHA256
			}
		}
	}
	return ""
}

// galleryRecords is what the catalog should say about the extensions in recs
// (their ids and sources) from the builds the fake gallery serves: every
// version newest first, with its engine, dependencies and target platforms.
func galleryRecords(t *testing.T, builds []gallerytest.Build, recs []catalog.ExtensionRecord) []catalog.ExtensionRecord {
	t.Helper()
	var out []catalog.ExtensionRecord
	for _, r := range recs {
		byVersion := map[string]*catalog.ExtensionVersion{}
		for _, b := range builds {
			if b.ID != r.ID {
				continue
			}
			v := byVersion[b.Version]
			if v == nil {
				v = &catalog.ExtensionVersion{Version: b.Version, PreRelease: b.PreRelease, Engine: b.Engine,
					Dependencies: b.Dependencies, ExtensionPack: b.ExtensionPack, Files: map[string]catalog.File{}}
				byVersion[b.Version] = v
			}
			v.Files[b.TargetPlatform] = catalog.File{}
		}
		if len(byVersion) == 0 {
			t.Fatalf("the fake gallery serves no %s", r.ID)
		}
		rec := catalog.ExtensionRecord{ID: r.ID, Source: "marketplace"}
		for _, v := range byVersion {
			rec.Versions = append(rec.Versions, *v)
		}
		slices.SortFunc(rec.Versions, func(a, b catalog.ExtensionVersion) int {
			return semver.MustParse(b.Version).Compare(semver.MustParse(a.Version))
		})
		out = append(out, rec)
	}
	return out
}

// stripURLs returns recs with every file URL cleared after checking that it
// points at prefix (the fake gallery).
func stripURLs(t *testing.T, recs []catalog.ExtensionRecord, prefix string) []catalog.ExtensionRecord {
	t.Helper()
	var out []catalog.ExtensionRecord
	for _, r := range recs {
		r.Versions = slices.Clone(r.Versions)
		for i, v := range r.Versions {
			files := map[string]catalog.File{}
			for tp, f := range v.Files {
				if !strings.HasPrefix(f.URL, prefix) {
					t.Errorf("%s %s %s: url %q is not on the fake %s", r.ID, v.Version, tp, f.URL, prefix)
				}
				f.URL = ""
				files[tp] = f
			}
			r.Versions[i].Files = files
		}
		out = append(out, r)
	}
	return out
}

type compatible struct {
	Version, Engine string
	files           map[string]string // OCI platform -> target platform
}

// newestCompatible is the newest version of id the fake serves whose engine
// accepts vscode and that has a build for every platform (the platform's own
// build preferred over universal).
func newestCompatible(t *testing.T, builds []gallerytest.Build, id, vscode string, platforms []string) compatible {
	t.Helper()
	target := map[string]string{"linux/amd64": "linux-x64", "linux/arm64": "linux-arm64"}
	var best *semver.Version
	var out compatible
	for _, b := range builds {
		if b.ID != id || b.PreRelease {
			continue
		}
		c, err := semver.NewConstraint(b.Engine)
		if err != nil || !c.Check(semver.MustParse(vscode)) {
			continue
		}
		has := map[string]bool{}
		for _, o := range builds {
			if o.ID == id && o.Version == b.Version {
				has[o.TargetPlatform] = true
			}
		}
		files := map[string]string{}
		for _, p := range platforms {
			switch {
			case has[target[p]]:
				files[p] = target[p]
			case has["universal"]:
				files[p] = "universal"
			}
		}
		v := semver.MustParse(b.Version)
		if len(files) == len(platforms) && (best == nil || v.GreaterThan(best)) {
			best, out = v, compatible{Version: b.Version, Engine: b.Engine, files: files}
		}
	}
	if best == nil {
		t.Fatalf("the fake serves no version of %s for VS Code %s", id, vscode)
	}
	return out
}

// catalogURL is the URL the catalog records for one file.
func catalogURL(cat *catalog.Catalog, id, version, tp string) string {
	for _, r := range cat.Extensions {
		if r.ID != id {
			continue
		}
		for _, v := range r.Versions {
			if v.Version == version {
				return v.Files[tp].URL
			}
		}
	}
	return ""
}

// requirePip skips (fails with IMAGECTL_REQUIRE_TOOLS=1) when the pip that
// refresh runs is missing.
func requirePip(t *testing.T) {
	t.Helper()
	testutil.RequirePip(t, "refresh locks Python closures with pip", pip.New().Check)
}

// A missing pip fails refresh in one line before any upstream is asked,
// and leaves the catalog as it was.
func TestMatrixRefreshWithoutPip(t *testing.T) {
	for _, env := range []string{"IMAGECTL_PIP", "IMAGECTL_CATALOG", "IMAGECTL_MATRIX"} {
		t.Setenv(env, "")
	}
	cpath := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(cpath, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := apptest.Run(t, "--matrix", apptest.RepoMatrix, "--catalog", cpath, "matrix", "refresh", "--pip", filepath.Join(t.TempDir(), "no-python")+" -m pip")
	if code == 0 {
		t.Fatal("refresh succeeded without pip")
	}
	if !strings.Contains(stderr, "python lock: pip") || !strings.Contains(stderr, "python3-pip") || !strings.Contains(stderr, "--no-python-lock") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("stderr = %q, want one line saying pip is missing, how to install it, and --no-python-lock", stderr)
	}
	if b, _ := os.ReadFile(cpath); string(b) != "old\n" {
		t.Errorf("the catalog was rewritten: %q", b)
	}
}
