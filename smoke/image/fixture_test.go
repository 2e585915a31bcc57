package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/testutil"
)

// The fixture images of the runc integration tests: the stand-in base root
// filesystem (hack/deps.d/35-base-images.sh: Debian bookworm minbase with
// python3 3.11), plus code-server laid out as linuxserver's
// (hack/standin/code-server.sh) when the base does not already carry it
// (amd64 only), plus a layer shaped like the one imagectl build adds:
// site-packages under imagespec.PythonDir with a ray stand-in (a real compiled
// module of the platform inside, from the base's own lib-dynload) and the
// real debugpy from Debian's python3-debugpy, one extension in
// /config/extensions, and settings.json. The config carries the labels of
// a lock for exactly that.

const (
	fixturePython   = "3.11"
	fixtureRay      = "2.46.0"
	fixtureExtID    = "imagectl-test.hello"
	fixtureExtVer   = "1.0.0"
	systemDebugpy   = "/usr/lib/python3/dist-packages/debugpy"
	fixtureInterp   = "/usr/bin/python3"
	standinCodeServ = "../../hack/standin/code-server.sh"
)

// need skips (or fails under IMAGECTL_REQUIRE_TOOLS=1) with msg.
func need(t *testing.T, ok bool, msg string) {
	t.Helper()
	if !ok {
		testutil.SkipOrFail(t, "%s", msg)
	}
}

// requireRunc checks what the runc tests need: root, runc, the stand-in base
// tarballs and Debian's debugpy. They start containers, so -short skips
// them.
func requireRunc(t *testing.T, arch string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts runc containers: skipped under -short")
	}
	need(t, os.Geteuid() == 0, "runc tests need root")
	_, err := exec.LookPath("runc")
	need(t, err == nil, "runc not on PATH: install Debian's runc (hack/deps.d/10-apt.sh)")
	base := filepath.Join(testutil.CacheDir(), "base", "base-"+arch+".tar")
	_, err = os.Stat(base)
	need(t, err == nil, "no stand-in base "+base+": run hack/deps.d/35-base-images.sh")
	_, err = os.Stat(filepath.Join(systemDebugpy, "__init__.py"))
	need(t, err == nil, "no "+systemDebugpy+": install Debian's python3-debugpy (hack/deps.d/10-apt.sh)")
	if arch == "arm64" {
		b, err := os.ReadFile("/proc/sys/fs/binfmt_misc/qemu-aarch64")
		need(t, err == nil && strings.Contains(string(b), "enabled") && strings.Contains(string(b), "flags: ") && strings.Contains(strings.SplitN(string(b), "flags: ", 2)[1], "F"),
			"no QEMU binfmt_misc registration for aarch64 with the F flag: install qemu-user-static (hack/deps.d/30-buildkit.sh)")
	}
}

// fileLayer is an uncompressed layer backed by a tar file (no gzip pass to
// compute a digest of a 500 MB root filesystem).
type fileLayer struct {
	path string
	once sync.Once
	h    v1.Hash
	size int64
	err  error
}

func (l *fileLayer) hash() {
	l.once.Do(func() {
		f, err := os.Open(l.path)
		if err != nil {
			l.err = err
			return
		}
		defer f.Close()
		hh := sha256.New()
		n, err := io.Copy(hh, f)
		l.h, l.size, l.err = v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(hh.Sum(nil))}, n, err
	})
}
func (l *fileLayer) Digest() (v1.Hash, error)             { l.hash(); return l.h, l.err }
func (l *fileLayer) DiffID() (v1.Hash, error)             { l.hash(); return l.h, l.err }
func (l *fileLayer) Size() (int64, error)                 { l.hash(); return l.size, l.err }
func (l *fileLayer) Compressed() (io.ReadCloser, error)   { return os.Open(l.path) }
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) { return os.Open(l.path) }
func (l *fileLayer) MediaType() (types.MediaType, error)  { return types.OCIUncompressedLayer, nil }

// tarBuilder writes a layer tar in memory.
type tarBuilder struct {
	buf  bytes.Buffer
	tw   *tar.Writer
	dirs map[string]bool
}

func newTar() *tarBuilder {
	b := &tarBuilder{dirs: map[string]bool{}}
	b.tw = tar.NewWriter(&b.buf)
	return b
}

func (b *tarBuilder) dir(p string, uid int) {
	if p == "/" || p == "." || b.dirs[p] {
		return
	}
	b.dir(path.Dir(p), 0)
	b.dirs[p] = true
	b.tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(p, "/") + "/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: uid, Gid: uid, ModTime: time.Unix(0, 0)})
}

func (b *tarBuilder) file(p string, data []byte, mode int64, uid int) {
	b.dir(path.Dir(p), 0)
	b.tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(p, "/"), Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(data)), Uid: uid, Gid: uid, ModTime: time.Unix(0, 0)})
	b.tw.Write(data)
}

func (b *tarBuilder) layer(t *testing.T) v1.Layer {
	t.Helper()
	if err := b.tw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "layer.tar")
	if err := os.WriteFile(p, b.buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return &fileLayer{path: p}
}

// dist writes a distribution into site with METADATA and RECORD.
func (b *tarBuilder) dist(site, name, version string, files map[string][]byte) {
	var record []string
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		b.file(site+"/"+p, files[p], 0o644, 0)
		sum := sha256.Sum256(files[p])
		record = append(record, fmt.Sprintf("%s,sha256=%s,%d", p, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[p])))
	}
	di := fmt.Sprintf("%s-%s.dist-info", name, version)
	b.file(site+"/"+di+"/METADATA", []byte("Metadata-Version: 2.1\nName: "+name+"\nVersion: "+version+"\n\n"), 0o644, 0)
	record = append(record, di+"/METADATA,,", di+"/RECORD,,")
	b.file(site+"/"+di+"/RECORD", []byte(strings.Join(record, "\n")+"\n"), 0o644, 0)
}

// fixtureOpts breaks the fixture image on purpose.
type fixtureOpts struct {
	// soArch is the architecture of the compiled module inside ray
	// (default: the image's).
	soArch string
	// path replaces the PATH of the config.
	path string
	// noInterpreterSetting leaves python.defaultInterpreterPath out.
	noInterpreterSetting bool
	// flood makes the image's python3 and entrypoint flood stdout and
	// stderr (floodPython, floodEntrypoint).
	flood bool
}

// floodPython is the flooding image's python3: 3 GiB on each of stdout
// and stderr, then it waits to be killed.
const floodPython = `#!/bin/sh
head -c 3G /dev/zero >&2 &
head -c 3G /dev/zero
wait
exec sleep 3600
`

// floodEntrypoint is the flooding image's entrypoint: output without end.
var floodEntrypoint = []string{"/bin/sh", "-c", "yes entrypoint-flood"}

// memberOf reads one file of a tarball.
func memberOf(t *testing.T, tarPath, name string) []byte {
	t.Helper()
	b, ok := testutil.TarMember(t, tarPath, name)
	if !ok {
		t.Fatalf("%s: no %s", tarPath, name)
	}
	return b
}

func unameArch(arch string) string {
	return map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[arch]
}

// fixtureSet is the lock the fixture images carry.
func fixtureSet(t *testing.T, arches ...string) imagespec.Set {
	t.Helper()
	out, err := exec.Command(fixtureInterp, "-c", "import importlib.metadata as m; print(m.version('debugpy'))").Output()
	if err != nil {
		t.Fatalf("debugpy version: %v", err)
	}
	set := imagespec.Set{
		CodeServer: imagespec.CodeServer{Version: "4.100.3", VSCode: "1.100.3", Base: "example.invalid/code-server:4.100.3", Platforms: map[string]string{}},
		Ray:        fixtureRay, Python: fixturePython, RayPythons: []string{fixturePython},
		Debugpy:    strings.TrimSpace(string(out)),
		Extensions: []imagespec.Extension{{ID: fixtureExtID, Version: fixtureExtVer, Source: "marketplace", Engine: "^1.90.0", Files: map[string]imagespec.File{}}},
	}
	for _, a := range arches {
		p := "linux/" + a
		set.Platforms = append(set.Platforms, p)
		set.CodeServer.Platforms[p] = "sha256:" + strings.Repeat("0", 64)
		set.Extensions[0].Files[p] = imagespec.File{TargetPlatform: "universal"}
	}
	return set
}

// fixtureImage builds the platform image for arch.
func fixtureImage(t *testing.T, arch string, set imagespec.Set, o fixtureOpts) v1.Image {
	t.Helper()
	baseTar := filepath.Join(testutil.CacheDir(), "base", "base-"+arch+".tar")
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &fileLayer{path: baseTar})
	if err != nil {
		t.Fatal(err)
	}
	hasInit := tarHas(t, baseTar, "init")
	if arch == "amd64" && !hasInit {
		if l := codeServerLayer(t); l != nil {
			if img, err = mutate.AppendLayers(img, l); err != nil {
				t.Fatal(err)
			}
			hasInit = true
		}
	}

	site := imagespec.PythonSitePackages(fixturePython)
	soArch := o.soArch
	if soArch == "" {
		soArch = arch
	}
	soName := fmt.Sprintf("_json.cpython-311-%s-linux-gnu.so", unameArch(soArch))
	so := memberOf(t, filepath.Join(testutil.CacheDir(), "base", "base-"+soArch+".tar"), "usr/lib/python3.11/lib-dynload/"+soName)
	b := newTar()
	b.dist(site, "ray", fixtureRay, map[string][]byte{
		"ray/__init__.py":          []byte("__version__ = \"" + fixtureRay + "\"\n"),
		"ray/_fixture/" + soName:   so,
		"ray/_fixture/__init__.py": nil,
	})
	// Debian's debugpy, its symbolic links (to the unbundled pydevd)
	// followed, without its x86-64 cython speedups (pure Python works on
	// any architecture).
	dbg := map[string][]byte{}
	copyFollow(t, systemDebugpy, "debugpy", dbg)
	b.dist(site, "debugpy", set.Debugpy, dbg)
	// Debian unbundled pydevd's bytecode dependency (python3-bytecode).
	bc := map[string][]byte{}
	copyFollow(t, "/usr/lib/python3/dist-packages/bytecode", "bytecode", bc)
	b.dist(site, "bytecode", "0.14.0", bc)
	// The image's interpreter: with the base's python3, a link to it (as
	// the image definition makes it).
	b.dir(imagespec.PythonDir+"/bin", 0)
	if o.flood {
		b.file(imagespec.InterpreterPath, []byte(floodPython), 0o755, 0)
		// code-server is never run: the entrypoint floods instead.
		b.file(imagespec.CodeServerBin, []byte("#!/bin/sh\nexit 1\n"), 0o755, 0)
	} else {
		b.tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(imagespec.InterpreterPath, "/"), Typeflag: tar.TypeSymlink, Linkname: "/usr/bin/python3.11", Mode: 0o777, ModTime: time.Unix(0, 0)})
	}

	extDir := imagespec.ExtensionsDir + "/" + fixtureExtID + "-" + fixtureExtVer
	b.dir("/config", 911)
	b.dir(imagespec.ExtensionsDir, 911)
	b.dir(extDir, 911)
	b.file(extDir+"/package.json", []byte(`{"name":"hello","publisher":"imagectl-test","version":"`+fixtureExtVer+`","engines":{"vscode":"^1.90.0"}}`), 0o644, 911)
	b.file(imagespec.ExtensionsDir+"/extensions.json", []byte(`[{"identifier":{"id":"`+fixtureExtID+`"},"version":"`+fixtureExtVer+`","location":{"$mid":1,"path":"`+extDir+`","scheme":"file"},"relativeLocation":"`+fixtureExtID+`-`+fixtureExtVer+`","metadata":{"installedTimestamp":0,"source":"vsix"}}]`), 0o644, 911)
	settings := map[string]any{imagespec.SettingClusterDashboards: []map[string]string{{"host": "127.0.0.1:8265", "localRoot": imagespec.DebuggerLocalRoot}}}
	if !o.noInterpreterSetting {
		settings[imagespec.SettingInterpreterPath] = imagespec.InterpreterPath
	}
	sj, _ := json.Marshal(settings)
	b.dir(imagespec.UserDataDir, 911)
	b.dir(path.Dir(imagespec.SettingsPath), 911)
	b.file(imagespec.SettingsPath, sj, 0o644, 911)
	if img, err = mutate.AppendLayers(img, b.layer(t)); err != nil {
		t.Fatal(err)
	}

	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	p := o.path
	if p == "" {
		p = imagespec.PythonDir + "/bin:" + DefaultPath
	}
	cf.Config.Env = []string{"PATH=" + p, "PYTHONPATH=" + site, "HOME=/config"}
	switch {
	case o.flood:
		cf.Config.Entrypoint = floodEntrypoint
	case hasInit:
		cf.Config.Entrypoint = []string{"/init"}
	default:
		cf.Config.Cmd = []string{"/bin/sh"}
	}
	cf.Config.Labels = build.Labels(set, "linux/"+arch, "sha256:"+strings.Repeat("1", 64), time.Unix(0, 0), build.LabelSource{})
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// copyFollow reads the tree at src into files (keyed rel/...), following
// symbolic links, skipping __pycache__ and shared objects.
func copyFollow(t *testing.T, src, rel string, files map[string][]byte) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := filepath.Join(src, e.Name())
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case e.Name() == "__pycache__" || strings.Contains(e.Name(), ".so"):
		case fi.IsDir():
			copyFollow(t, p, rel+"/"+e.Name(), files)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			files[rel+"/"+e.Name()] = b
		}
	}
}

func tarHas(t *testing.T, tarPath, name string) bool {
	t.Helper()
	_, ok := testutil.TarMember(t, tarPath, name)
	return ok
}

// codeServerLayer lays code-server out with hack/standin/code-server.sh and
// tars it, or returns nil when the npm build is missing.
func codeServerLayer(t *testing.T) v1.Layer {
	t.Helper()
	if _, err := os.Stat(filepath.Join(testutil.CacheDir(), "node", "code-server-4.100.3", ".done")); err != nil {
		return nil
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "usr", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", standinCodeServ, root).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", standinCodeServ, err, out)
	}
	p := filepath.Join(t.TempDir(), "code-server.tar")
	if out, err := exec.Command("tar", "-C", root, "--numeric-owner", "-cf", p, "app", "init", "etc", "usr").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	return &fileLayer{path: p}
}

// writeLayout writes imgs as one index (an OCI layout directory, as
// --archive accepts).
func writeLayout(t *testing.T, imgs ...v1.Image) string {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: cf.Architecture}}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	dir := filepath.Join(t.TempDir(), "layout")
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendIndex(idx); err != nil {
		t.Fatal(err)
	}
	return dir
}
