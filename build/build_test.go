package build

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/client/connhelper"
	digest "github.com/opencontainers/go-digest"

	"github.com/imagectl/imagectl/dockerfiles"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
)

func testSet() imagespec.Set {
	return imagespec.Set{
		CodeServer: imagespec.CodeServer{
			Version: "4.101.2", VSCode: "1.101.2", Base: "lscr.io/linuxserver/code-server:4.101.2",
			IndexDigest: "sha256:" + strings.Repeat("a", 64),
			Platforms: map[string]string{
				"linux/amd64": "sha256:" + strings.Repeat("1", 64),
				"linux/arm64": "sha256:" + strings.Repeat("2", 64),
			},
		},
		Ray: "2.46.0", Python: "3.12", RayPythons: []string{"3.9", "3.10", "3.11", "3.12"},
		RayExtras: []string{"default"}, Debugpy: "1.8.14",
		Platforms:     []string{"linux/amd64", "linux/arm64"},
		ToolsImage:    "docker.io/library/python:3.12-slim-bookworm@sha256:" + strings.Repeat("7", 64),
		PythonRuntime: testRuntime(),
		Extensions: []imagespec.Extension{{
			ID: "ms-python.debugpy", Version: "2025.10.0", Source: "marketplace", Engine: "^1.92.0",
			Files: map[string]imagespec.File{
				"linux/amd64": {TargetPlatform: "linux-x64", SHA256: strings.Repeat("3", 64)},
				"linux/arm64": {TargetPlatform: "linux-arm64", SHA256: strings.Repeat("4", 64)},
			},
		}},
		Tags: []string{"4.101.2-ray2.46.0-py3.12", "ray2.46.0"},
	}
}

func TestInputsDigestStableAndSensitive(t *testing.T) {
	def := []byte("FROM x\n")
	base := InputsDigest(testSet(), def, "v1.0.0")
	if got := InputsDigest(testSet(), def, "v1.0.0"); got != base {
		t.Fatalf("same inputs gave %s then %s", base, got)
	}
	if !strings.HasPrefix(base, "sha256:") || len(base) != len("sha256:")+64 {
		t.Fatalf("digest %q is not sha256:<64 hex>", base)
	}
	changes := map[string]func(*imagespec.Set, *[]byte, *string){
		"extension file digest": func(s *imagespec.Set, _ *[]byte, _ *string) {
			s.Extensions[0].Files["linux/arm64"] = imagespec.File{TargetPlatform: "linux-arm64", SHA256: strings.Repeat("5", 64)}
		},
		"extension version": func(s *imagespec.Set, _ *[]byte, _ *string) { s.Extensions[0].Version = "2025.10.1" },
		"base digest arm64": func(s *imagespec.Set, _ *[]byte, _ *string) {
			s.CodeServer.Platforms["linux/arm64"] = "sha256:" + strings.Repeat("9", 64)
		},
		"ray":        func(s *imagespec.Set, _ *[]byte, _ *string) { s.Ray = "2.46.1" },
		"python":     func(s *imagespec.Set, _ *[]byte, _ *string) { s.Python = "3.11" },
		"definition": func(_ *imagespec.Set, d *[]byte, _ *string) { *d = []byte("FROM y\n") },
		"tools image digest": func(s *imagespec.Set, _ *[]byte, _ *string) {
			s.ToolsImage = "docker.io/library/python:3.12-slim-bookworm@sha256:" + strings.Repeat("8", 64)
		},
		"version": func(_ *imagespec.Set, _ *[]byte, v *string) { *v = "v1.0.1" },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			s, d, v := testSet(), append([]byte(nil), def...), "v1.0.0"
			change(&s, &d, &v)
			if got := InputsDigest(s, d, v); got == base {
				t.Errorf("changing the %s left the inputs digest at %s", name, got)
			}
		})
	}
}

func TestInputsDigestIgnoresMapOrder(t *testing.T) {
	// Maps built in different insertion orders must hash alike.
	a, b := testSet(), testSet()
	b.CodeServer.Platforms = map[string]string{}
	b.CodeServer.Platforms["linux/arm64"] = a.CodeServer.Platforms["linux/arm64"]
	b.CodeServer.Platforms["linux/amd64"] = a.CodeServer.Platforms["linux/amd64"]
	if InputsDigest(a, nil, "x") != InputsDigest(b, nil, "x") {
		t.Fatal("map insertion order changed the digest")
	}
}

func TestRender(t *testing.T) {
	def := dockerfiles.Dockerfile()
	got, err := Render(def, Params{ToolsImage: "127.0.0.1:5000/tools@sha256:" + strings.Repeat("a", 64), PackageIndex: "http://127.0.0.1:8080/simple", PythonRuntime: imagespec.PythonRuntimeBase})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`ARG TOOLS_IMAGE="127.0.0.1:5000/tools@sha256:` + strings.Repeat("a", 64) + `"`,
		`ARG PIP_INDEX_URL="http://127.0.0.1:8080/simple"`,
		`ARG PIP_TRUSTED_HOST="127.0.0.1"`,
		`ARG PYTHON_RUNTIME="base"`,
		`ARG PYTHON_STANDALONE_URL=""`,
	} {
		if !strings.Contains(string(got), want+"\n") {
			t.Errorf("rendered definition lacks %q", want)
		}
	}
	// The wheels stage's --platform tags are the base's manylinux tags,
	// the lock's (upstream/pip) and the catalog's (upstream/pypi).
	for platform, arch := range map[string]string{"linux/amd64": "X86_64", "linux/arm64": "AARCH64"} {
		tags, err := imagespec.ManylinuxTags(platform)
		if err != nil {
			t.Fatal(err)
		}
		if want := `ARG PIP_PLATFORMS_` + arch + `="` + strings.Join(tags, ",") + `"`; !strings.Contains(string(got), want+"\n") {
			t.Errorf("rendered definition lacks %q", want)
		}
	}
	sa := map[string]string{"x86_64": strings.Repeat("b", 64), "aarch64": strings.Repeat("c", 64)}
	saURL := "https://example.com/cpython-3.12.11-{arch}-unknown-linux-gnu-install_only.tar.gz"
	https, err := Render(def, Params{ToolsImage: "python:3.12-slim", PackageIndex: "https://pypi.org/simple",
		PythonRuntime: imagespec.PythonRuntimeStandalone, StandaloneURL: saURL, StandaloneSHA256: sa})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(https), `ARG PIP_TRUSTED_HOST=""`) {
		t.Error("an https index must not be a trusted host")
	}
	for _, want := range []string{
		`ARG PYTHON_RUNTIME="standalone"`,
		`ARG PYTHON_STANDALONE_URL="` + saURL + `"`,
		`ARG PYTHON_STANDALONE_SHA256_X86_64="` + sa["x86_64"] + `"`,
		`ARG PYTHON_STANDALONE_SHA256_AARCH64="` + sa["aarch64"] + `"`,
	} {
		if !strings.Contains(string(https), want+"\n") {
			t.Errorf("standalone rendering lacks %q", want)
		}
	}
	// Only the global declarations get defaults; stages inherit them.
	if n := strings.Count(string(https), "ARG PYTHON_STANDALONE_URL\n"); n != 1 {
		t.Errorf("%d stage-local PYTHON_STANDALONE_URL declarations, want 1 (the runtime-standalone stage)", n)
	}
	if regexp.MustCompile(`(?mi)^#\s*syntax\s*=`).Match(got) {
		t.Error("the definition has a # syntax= line: buildkitd would pull a frontend image")
	}

	// One COPY --link per extension, in install order, where the marker was.
	exts, err := Render(def, Params{ToolsImage: "x", PackageIndex: "https://pypi.org/simple", PythonRuntime: imagespec.PythonRuntimeBase,
		Extensions: []string{"ms-python.python", "ms-python.debugpy", "anyscalecompute.ray-distributed-debugger"}})
	if err != nil {
		t.Fatal(err)
	}
	wantCopies := "COPY --link --from=wheels /out/debugpy/ /\n" +
		"COPY --link --chown=911:911 --from=ext-ms-python.python / /\n" +
		"COPY --link --chown=911:911 --from=ext-ms-python.debugpy / /\n" +
		"COPY --link --chown=911:911 --from=ext-anyscalecompute.ray-distributed-debugger / /\n" +
		"COPY --link --chown=911:911 --from=extensionsjson / /\n"
	if !strings.Contains(string(exts), wantCopies) {
		t.Errorf("rendered definition lacks the extension layers\n%s\nin\n%s", wantCopies, exts)
	}
	if strings.Contains(string(exts), ExtensionsMarker) || strings.Contains(string(got), ExtensionsMarker) {
		t.Error("the extensions marker is left in the rendered definition")
	}

	base := Params{ToolsImage: "x", PackageIndex: "https://pypi.org/simple", PythonRuntime: "base"}
	withExt := func(ids ...string) Params { p := base; p.Extensions = ids; return p }
	errCases := map[string]struct {
		def []byte
		p   Params
	}{
		"no extensions marker":     {[]byte(strings.ReplaceAll(string(def), ExtensionsMarker+"\n", "")), base},
		"two extensions markers":   {[]byte(strings.ReplaceAll(string(def), ExtensionsMarker+"\n", ExtensionsMarker+"\n"+ExtensionsMarker+"\n")), base},
		"extension id with a path": {def, withExt("ms-python.python", "../../etc")},
		"extension id with spaces": {def, withExt("a.b /x")},
		"extension id twice":       {def, withExt("a.b", "A.b")},
		"extension id without dot": {def, withExt("ab")},
		"extension id ending in -": {def, withExt("a.b-")},
		"no tools image":           {def, Params{PackageIndex: "https://pypi.org/simple", PythonRuntime: "base"}},
		"no runtime":               {def, Params{ToolsImage: "x", PackageIndex: "https://pypi.org/simple"}},
		"standalone without sums": {def, Params{ToolsImage: "x", PackageIndex: "https://pypi.org/simple", PythonRuntime: "standalone",
			StandaloneURL: "https://example.com/{arch}.tar.gz", StandaloneSHA256: map[string]string{"x86_64": strings.Repeat("b", 64)}}},
		"standalone bad URL": {def, Params{ToolsImage: "x", PackageIndex: "https://pypi.org/simple", PythonRuntime: "standalone",
			StandaloneURL: "file:///x.tar.gz", StandaloneSHA256: sa}},
		"not a URL":           {def, Params{ToolsImage: "x", PackageIndex: "pypi.org/simple", PythonRuntime: "base"}},
		"ftp":                 {def, Params{ToolsImage: "x", PackageIndex: "ftp://h/simple", PythonRuntime: "base"}},
		"quote injection":     {def, Params{ToolsImage: `x" \` + "\nRUN evil", PackageIndex: "https://pypi.org/simple", PythonRuntime: "base"}},
		"ARG only in a stage": {[]byte("FROM x\nARG TOOLS_IMAGE\n"), Params{ToolsImage: "x", PackageIndex: "https://pypi.org/simple", PythonRuntime: "base"}},
		"ARG twice": {[]byte("ARG TOOLS_IMAGE\nARG TOOLS_IMAGE\nARG PIP_INDEX_URL\nARG PIP_TRUSTED_HOST\nARG PIP_PLATFORMS_X86_64\nARG PIP_PLATFORMS_AARCH64\nARG PYTHON_RUNTIME\nARG PYTHON_STANDALONE_URL\nARG PYTHON_STANDALONE_SHA256_X86_64\nARG PYTHON_STANDALONE_SHA256_AARCH64\n"),
			Params{ToolsImage: "x", PackageIndex: "https://pypi.org/simple", PythonRuntime: "base"}},
	}
	for name, c := range errCases {
		if _, err := Render(c.def, c.p); err == nil {
			t.Errorf("%s: Render succeeded, want an error", name)
		}
	}
}

func TestRequirements(t *testing.T) {
	s := testSet()
	s.RayExtras = []string{"default", "client"}
	want := "# Generated by imagectl from the resolved set; top-level pins only.\ndebugpy==1.8.14\nray[client,default]==2.46.0\n"
	got, locked := Requirements(s, "linux/amd64")
	if diff := cmp.Diff(want, string(got)); diff != "" || locked {
		t.Errorf("Requirements without a lock (locked %v) (-want +got):\n%s", locked, diff)
	}
	// With the platform's closure: every distribution pinned with its hash,
	// sorted by normalized name; the other platform's closure is not used.
	sum := func(c string) string { return strings.Repeat(c, 64) }
	s.PythonLocks = map[string][]imagespec.PythonDist{
		"linux/arm64": {
			{Name: "ray", Version: "2.46.0", Filename: "ray-2.46.0-cp312-cp312-manylinux2014_aarch64.whl", URL: "https://x/ray.whl", SHA256: sum("a")},
			{Name: "Aio_Signal", Version: "1.3.1", Filename: "Aio_Signal-1.3.1-py3-none-any.whl", URL: "https://x/a.whl", SHA256: sum("b")},
			{Name: "debugpy", Version: "1.8.14", Filename: "debugpy-1.8.14-py2.py3-none-any.whl", URL: "https://x/d.whl", SHA256: sum("c")},
		},
		"linux/amd64": {{Name: "ray", Version: "2.46.0", Filename: "ray-2.46.0-cp312-cp312-manylinux2014_x86_64.whl", URL: "https://x/r.whl", SHA256: sum("d")}},
	}
	want = "# Generated by imagectl: the locked closure for CPython 3.12 on linux/arm64 (catalog.json\n" +
		"# pythonLocks, imagectl matrix refresh); installed with --no-deps --require-hashes.\n" +
		"Aio_Signal==1.3.1 --hash=sha256:" + sum("b") + "\n" +
		"debugpy==1.8.14 --hash=sha256:" + sum("c") + "\n" +
		"ray==2.46.0 --hash=sha256:" + sum("a") + "\n"
	got, locked = Requirements(s, "linux/arm64")
	if diff := cmp.Diff(want, string(got)); diff != "" || !locked {
		t.Errorf("Requirements with the arm64 lock (locked %v) (-want +got):\n%s", locked, diff)
	}
}

func TestLabels(t *testing.T) {
	s := testSet()
	created := time.Unix(1700000000, 0)
	l := Labels(s, "linux/arm64", "sha256:abc", created, LabelSource{Source: "https://example.com/src", Revision: "deadbeef"})
	var lock imagespec.Set
	if err := json.Unmarshal([]byte(l[imagespec.LabelLock]), &lock); err != nil {
		t.Fatalf("lock label is not JSON: %v", err)
	}
	if diff := cmp.Diff(s, lock); diff != "" {
		t.Errorf("lock label does not round-trip (-want +got):\n%s", diff)
	}
	want := map[string]string{
		"org.opencontainers.image.version":     "4.101.2-ray2.46.0-py3.12",
		"org.opencontainers.image.created":     "2023-11-14T22:13:20Z",
		"org.opencontainers.image.base.name":   "lscr.io/linuxserver/code-server:4.101.2",
		"org.opencontainers.image.base.digest": "sha256:" + strings.Repeat("2", 64),
		"org.opencontainers.image.source":      "https://example.com/src",
		"org.opencontainers.image.revision":    "deadbeef",
		imagespec.LabelInputs:                  "sha256:abc",
		imagespec.LabelCodeServer:              "4.101.2",
		imagespec.LabelVSCode:                  "1.101.2",
		imagespec.LabelRay:                     "2.46.0",
		imagespec.LabelPython:                  "3.12",
		imagespec.LabelDebugpy:                 "1.8.14",
		imagespec.LabelExtensions:              "ms-python.debugpy@2025.10.0",
	}
	delete(l, imagespec.LabelLock)
	if diff := cmp.Diff(want, l); diff != "" {
		t.Errorf("Labels (-want +got):\n%s", diff)
	}
}

func TestPrepareContexts(t *testing.T) {
	layout := func(t *testing.T) string {
		ext := t.TempDir()
		for _, d := range []string{"ms-python.debugpy-2025.10.0/dist", "anyscalecompute.ray-distributed-debugger-0.1.6"} {
			if err := os.MkdirAll(filepath.Join(ext, d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(ext, "ms-python.debugpy-2025.10.0", "dist", "x.js"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ext, "extensions.json"), []byte("[]"), 0o600); err != nil {
			t.Fatal(err)
		}
		return ext
	}
	folders := []ExtensionFolder{
		{ID: "ms-python.debugpy", Folder: "ms-python.debugpy-2025.10.0"},
		{ID: "anyscalecompute.ray-distributed-debugger", Folder: "anyscalecompute.ray-distributed-debugger-0.1.6"},
	}
	mtime := time.Unix(1700000000, 0)
	root := filepath.Join(t.TempDir(), "ctx")
	ext := layout(t)
	c, err := PrepareContexts(root, ContextInput{Definition: []byte("FROM x\n"), Requirements: []byte("ray==2.46.0\n"),
		Settings: []byte(`{"a":1}`), Layout: ext, Extensions: folders, Time: mtime})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if !fi.ModTime().Equal(mtime) {
			t.Errorf("%s: mtime %v, want %v", rel, fi.ModTime(), mtime)
		}
		got = append(got, rel+" "+fi.Mode().Perm().String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		". -rwxr-xr-x",
		"dockerfile -rwxr-xr-x",
		"dockerfile/Dockerfile -rw-r--r--",
		"extensions -rwxr-xr-x",
		"extensions/anyscalecompute.ray-distributed-debugger -rwxr-xr-x",
		"extensions/anyscalecompute.ray-distributed-debugger/config -rwxr-xr-x",
		"extensions/anyscalecompute.ray-distributed-debugger/config/extensions -rwxr-xr-x",
		"extensions/anyscalecompute.ray-distributed-debugger/config/extensions/anyscalecompute.ray-distributed-debugger-0.1.6 -rwxr-xr-x",
		"extensions/ms-python.debugpy -rwxr-xr-x",
		"extensions/ms-python.debugpy/config -rwxr-xr-x",
		"extensions/ms-python.debugpy/config/extensions -rwxr-xr-x",
		"extensions/ms-python.debugpy/config/extensions/ms-python.debugpy-2025.10.0 -rwxr-xr-x",
		"extensions/ms-python.debugpy/config/extensions/ms-python.debugpy-2025.10.0/dist -rwxr-xr-x",
		"extensions/ms-python.debugpy/config/extensions/ms-python.debugpy-2025.10.0/dist/x.js -rw-r--r--",
		"extensionsjson -rwxr-xr-x",
		"extensionsjson/config -rwxr-xr-x",
		"extensionsjson/config/extensions -rwxr-xr-x",
		"extensionsjson/config/extensions/extensions.json -rw-r--r--",
		"main -rwxr-xr-x",
		"python -rwxr-xr-x",
		"python/requirements.txt -rw-r--r--",
		"userdata -rwxr-xr-x",
		"userdata/config -rwxr-xr-x",
		"userdata/config/data -rwxr-xr-x",
		"userdata/config/data/User -rwxr-xr-x",
		"userdata/config/data/User/settings.json -rw-r--r--",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("context tree (-want +got):\n%s", diff)
	}
	if left, _ := os.ReadDir(ext); len(left) != 0 {
		t.Errorf("the layout still holds %d entries; PrepareContexts moves them", len(left))
	}
	if diff := cmp.Diff(map[string]string{
		"context": c.Main, "dockerfile": c.Dockerfile, "python": c.Python,
		"ext-ms-python.debugpy":                        filepath.Join(c.Extensions, "ms-python.debugpy"),
		"ext-anyscalecompute.ray-distributed-debugger": filepath.Join(c.Extensions, "anyscalecompute.ray-distributed-debugger"),
		"extensionsjson":                               c.ExtensionsJSON, "userdata": c.UserData,
	}, c.Mounts()); diff != "" {
		t.Errorf("Mounts (-want +got):\n%s", diff)
	}

	bad := map[string]func(t *testing.T) ContextInput{
		"a symlink in the layout": func(t *testing.T) ContextInput {
			ext := layout(t)
			if err := os.Symlink("/etc/passwd", filepath.Join(ext, "ms-python.debugpy-2025.10.0", "link")); err != nil {
				t.Fatal(err)
			}
			return ContextInput{Layout: ext, Extensions: folders}
		},
		"invalid settings JSON": func(t *testing.T) ContextInput {
			return ContextInput{Layout: layout(t), Extensions: folders, Settings: []byte("{")}
		},
		"a folder of no extension": func(t *testing.T) ContextInput {
			return ContextInput{Layout: layout(t), Extensions: folders[:1]}
		},
		"an extension without its folder": func(t *testing.T) ContextInput {
			return ContextInput{Layout: layout(t), Extensions: append(folders, ExtensionFolder{ID: "a.b", Folder: "a.b-1.0.0"})}
		},
		"an id with a slash": func(t *testing.T) ContextInput {
			return ContextInput{Layout: layout(t), Extensions: []ExtensionFolder{folders[0], {ID: "../x", Folder: folders[1].Folder}}}
		},
	}
	for name, in := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := PrepareContexts(filepath.Join(t.TempDir(), "ctx"), in(t)); err == nil {
				t.Error("PrepareContexts succeeded, want an error")
			}
		})
	}
}

func TestSummarizeCountsEmulatedRuns(t *testing.T) {
	now := time.Now()
	v := func(d, name string, cached, started bool) *client.Vertex {
		x := &client.Vertex{Digest: digest.FromString(d), Name: name, Cached: cached}
		if started {
			x.Started, x.Completed = &now, &now
		}
		return x
	}
	r := newRecorder()
	r.add(&client.SolveStatus{Vertexes: []*client.Vertex{
		v("1", "[linux/amd64->arm64 wheels 1/1] RUN --mount=type=bind,from=python,target=/in set -eu; pip install", false, true),
		v("2", "[linux/arm64 stage-1 2/4] COPY --link --from=wheels /out/ /opt/imagectl/python/", false, true),
		v("3", "[linux/arm64 stage-1 1/4] RUN apt-get install -y python3", false, true),
		v("4", "[linux/arm64/v8 stage-1 3/4] RUN echo cached", true, true),
		v("5", "[internal] load metadata for 127.0.0.1:5000/base@sha256:x", false, true),
		v("6", "[linux/amd64 stage-1 1/1] RUN never started", false, false),
	}})
	res := &PlatformResult{}
	r.summarize(res, "linux/amd64")
	want := &PlatformResult{Steps: 2, EmulatedSteps: 1, CachedSteps: 1, Emulated: []string{"[linux/arm64 stage-1 1/4] RUN apt-get install -y python3"}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	// On a native arm64 builder the same RUN is not emulated.
	res = &PlatformResult{}
	r.summarize(res, "linux/arm64")
	if res.EmulatedSteps != 1 || res.Emulated[0] != "[linux/amd64->arm64 wheels 1/1] RUN --mount=type=bind,from=python,target=/in set -eu; pip install" {
		t.Errorf("on an arm64 builder: %+v, want the amd64 wheels step counted as emulated", res)
	}
}

func TestPlatformCacheRef(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:5000/img:cache": "127.0.0.1:5000/img:cache-arm64",
		"127.0.0.1:5000/img":       "127.0.0.1:5000/img:buildcache-arm64",
		"ghcr.io/o/img-cache":      "ghcr.io/o/img-cache:buildcache-arm64",
	} {
		if got := platformCacheRef(in, "linux/arm64"); got != want {
			t.Errorf("platformCacheRef(%q) = %q, want %q", in, got, want)
		}
	}
}

func testMatrix(t *testing.T, extra string) *matrix.Config {
	t.Helper()
	cfg, err := matrix.Parse("matrix.yaml", []byte(`image: {name: x, repositories: [ghcr.io/a/b]}
tags:
  - template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}-{{.Inputs}}"
  - {template: "ray{{.Ray}}", floating: true}
upstreams: {packageIndex: "https://pypi.org/simple"}
`+extra))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const standaloneYAML = `build:
  toolsImage: python:3.12-slim
`

// testRuntime is a python-build-standalone runtime of Python 3.12 as the
// resolver copies it from catalog.json.
func testRuntime() *imagespec.PythonRuntime {
	return &imagespec.PythonRuntime{Version: "3.12.11", Release: "20250808", Files: map[string]imagespec.RuntimeFile{
		"linux/amd64": {URL: "https://example.com/cpython-3.12.11-x86_64-install_only.tar.gz", SHA256: strings.Repeat("1", 64)},
		"linux/arm64": {URL: "https://example.com/cpython-3.12.11-aarch64-install_only.tar.gz", SHA256: strings.Repeat("2", 64)},
	}}
}

func TestDefinitionFromMatrix(t *testing.T) {
	cfg := testMatrix(t, standaloneYAML)
	d, err := NewDefinition(cfg, Overrides{}, "v1")
	if err != nil {
		t.Fatal(err)
	}
	set := testSet()
	set.ToolsImage = "" // a lock from before tools images were locked: matrix.yaml's
	set.PythonRuntime = testRuntime()
	r, err := d.Render(set)
	if err != nil {
		t.Fatal(err)
	}
	want := Params{
		ToolsImage: "python:3.12-slim", PackageIndex: "https://pypi.org/simple", PythonRuntime: imagespec.PythonRuntimeStandalone,
		StandaloneURL:    "https://example.com/cpython-3.12.11-{arch}-install_only.tar.gz",
		StandaloneSHA256: map[string]string{"x86_64": strings.Repeat("1", 64), "aarch64": strings.Repeat("2", 64)},
		Extensions:       []string{"ms-python.debugpy"},
	}
	if diff := cmp.Diff(want, r.Params); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
	rendered, err := Render(dockerfiles.Dockerfile(), want)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(rendered), string(r.Definition)); diff != "" {
		t.Errorf("rendered definition (-want +got):\n%s", diff)
	}
	// The set as built carries the tools image rendered (here matrix.yaml's,
	// the set having none).
	built := set
	built.ToolsImage = "python:3.12-slim"
	if diff := cmp.Diff(built, r.Set); diff != "" {
		t.Errorf("rendered set (-want +got):\n%s", diff)
	}
	if in := InputsDigest(built, rendered, "v1"); r.Inputs != in {
		t.Errorf("Inputs = %s, want InputsDigest = %s", r.Inputs, in)
	}
	if got, _ := d.InputsDigest(set); got != r.Inputs {
		t.Errorf("InputsDigest = %s, want %s", got, r.Inputs)
	}
	tags, err := d.Tags(set)
	if err != nil {
		t.Fatal(err)
	}
	if wantTags := []string{"4.101.2-ray2.46.0-py3.12-" + r.Inputs[7:19], "ray2.46.0"}; !cmp.Equal(wantTags, tags.Names()) {
		t.Errorf("Tags = %v, want %v", tags, wantTags)
	}
	if wantImmutable := []string{"4.101.2-ray2.46.0-py3.12-" + r.Inputs[7:19]}; !cmp.Equal(wantImmutable, tags.Immutable()) {
		t.Errorf("Tags.Immutable = %v, want %v", tags.Immutable(), wantImmutable)
	}

	// Every override changes the parameters and so the inputs digest; an
	// empty override keeps matrix.yaml's value.
	for name, o := range map[string]Overrides{
		"tools image":    {ToolsImage: "python:3.12-slim@sha256:" + strings.Repeat("c", 64)},
		"package index":  {PackageIndex: "https://mirror.example/simple"},
		"python runtime": {PythonRuntime: imagespec.PythonRuntimeBase},
		"standalone": {StandaloneURL: "https://example.com/other-{arch}.tar.gz",
			StandaloneSHA256: map[string]string{"x86_64": strings.Repeat("3", 64), "aarch64": strings.Repeat("4", 64)}},
		"definition": {Definition: append([]byte("# changed\n"), dockerfiles.Dockerfile()...)},
	} {
		od, err := NewDefinition(cfg, o, "v1")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		in, err := od.InputsDigest(set)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if in == r.Inputs {
			t.Errorf("override %s did not change the inputs digest", name)
		}
	}
	if v2, _ := NewDefinition(cfg, Overrides{}, "v2"); v2 != nil {
		if in, _ := v2.InputsDigest(set); in == r.Inputs {
			t.Error("another imagectl version gave the same inputs digest")
		}
	}
}

func TestDefinitionErrors(t *testing.T) {
	set := testSet()
	set.PythonRuntime = nil
	// The default runtime is standalone: a Python without a tarball is an error
	// that says what to add.
	d, err := NewDefinition(testMatrix(t, ""), Overrides{}, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Render(set); err == nil || !strings.Contains(err.Error(), "no python-build-standalone runtime for Python 3.12") || !strings.Contains(err.Error(), "run imagectl matrix refresh") {
		t.Errorf("no runtime in the set: %v", err)
	}
	for name, mutate := range map[string]func(*imagespec.PythonRuntime){
		"other minor": func(r *imagespec.PythonRuntime) { r.Version = "3.11.13" },
		"URLs not by arch": func(r *imagespec.PythonRuntime) {
			r.Files["linux/arm64"] = imagespec.RuntimeFile{URL: "https://example.com/other.tar.gz", SHA256: strings.Repeat("2", 64)}
		},
		"no arm64 tarball": func(r *imagespec.PythonRuntime) { delete(r.Files, "linux/arm64") },
		"bad sum": func(r *imagespec.PythonRuntime) {
			r.Files["linux/amd64"] = imagespec.RuntimeFile{URL: r.Files["linux/amd64"].URL, SHA256: "abc"}
		},
	} {
		rs := testSet()
		rs.PythonRuntime = testRuntime()
		mutate(rs.PythonRuntime)
		if _, err := d.Render(rs); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
	d, _ = NewDefinition(testMatrix(t, standaloneYAML), Overrides{StandaloneURL: "https://example.com/{arch}.tar.gz"}, "v1")
	if _, err := d.Render(set); err == nil || !strings.Contains(err.Error(), "give both the URL and the sha256") {
		t.Errorf("half a standalone override: %v", err)
	}
	if _, err := NewDefinition(testMatrix(t, ""), Overrides{PythonRuntime: "system"}, "v1"); err == nil {
		t.Error("unknown runtime override accepted")
	}
}

func TestInputsDigestIgnoresTags(t *testing.T) {
	def := []byte("FROM x\n")
	a, b := testSet(), testSet()
	b.Tags = append(b.Tags, "latest")
	c := testSet()
	c.Tags = nil
	if x, y, z := InputsDigest(a, def, "v1"), InputsDigest(b, def, "v1"), InputsDigest(c, def, "v1"); x != y || x != z {
		t.Errorf("tags changed the inputs digest: %s, %s, %s", x, y, z)
	}
}

// A same-size change with the same (fixed) mtime must change the shared key,
// or buildkitd would reuse the stale transfer of the earlier context.
func TestSharedKeysFollowContent(t *testing.T) {
	root := t.TempDir()
	epoch := time.Unix(1752537600, 0)
	mounts := map[string]string{contextDockerfile: filepath.Join(root, "df"), ContextExtensionsJSON: filepath.Join(root, "list"), ExtensionContext("a.b"): filepath.Join(root, "ab")}
	write := func(mount, file, content string) {
		t.Helper()
		p := filepath.Join(mounts[mount], file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, epoch, epoch); err != nil {
			t.Fatal(err)
		}
	}
	keys := func(platform string) (string, map[string]string) {
		t.Helper()
		s, k, err := sharedKeys(platform, mounts)
		if err != nil {
			t.Fatal(err)
		}
		return s, k
	}
	write(contextDockerfile, "Dockerfile", "FROM a@sha256:1111\n")
	write(ContextExtensionsJSON, "extensions.json", `[{"version":"0.1.4"}]`)
	write(ExtensionContext("a.b"), "x.js", "x")
	s1, k1 := keys("linux/arm64")
	if diff := cmp.Diff([]string{"ext-a.b", ContextExtensionsJSON}, slices.Sorted(maps.Keys(k1))); diff != "" {
		t.Errorf("per-context keys for (-want +got):\n%s", diff)
	}
	if s, k := keys("linux/arm64"); s != s1 || !cmp.Equal(k, k1) {
		t.Errorf("same content gave keys %s %v and %s %v", s1, k1, s, k)
	}
	// A same-size change of extensions.json moves its key only.
	write(ContextExtensionsJSON, "extensions.json", `[{"version":"0.1.6"}]`)
	s2, k2 := keys("linux/arm64")
	if s2 != s1 || k2["ext-a.b"] != k1["ext-a.b"] || k2[ContextExtensionsJSON] == k1[ContextExtensionsJSON] {
		t.Errorf("extensions.json changed: session %s -> %s, keys %v -> %v; want only extensionsjson's key to move", s1, s2, k1, k2)
	}
	// A same-size change of the Dockerfile moves the session key.
	write(contextDockerfile, "Dockerfile", "FROM a@sha256:2222\n")
	if s3, _ := keys("linux/arm64"); s3 == s2 {
		t.Errorf("a same-size change of the Dockerfile kept the session key %s", s3)
	}
	if s4, _ := keys("linux/amd64"); s4 == s2 {
		t.Error("the platform is not part of the session key")
	}
}

// The inputs digest moves with the locked runtime's sum (a re-published
// tarball), and the runtime override replaces the set's runtime.
func TestInputsDigestFollowsPythonRuntime(t *testing.T) {
	d, err := NewDefinition(testMatrix(t, standaloneYAML), Overrides{}, "v1")
	if err != nil {
		t.Fatal(err)
	}
	digest := func(mutate func(*imagespec.PythonRuntime)) (string, Params) {
		t.Helper()
		set := testSet()
		set.PythonRuntime = testRuntime()
		mutate(set.PythonRuntime)
		r, err := d.Render(set)
		if err != nil {
			t.Fatal(err)
		}
		return r.Inputs, r.Params
	}
	base, p := digest(func(*imagespec.PythonRuntime) {})
	if want := map[string]string{"x86_64": strings.Repeat("1", 64), "aarch64": strings.Repeat("2", 64)}; !cmp.Equal(want, p.StandaloneSHA256) {
		t.Errorf("rendered sums %v, want %v", p.StandaloneSHA256, want)
	}
	for name, m := range map[string]func(*imagespec.PythonRuntime){
		"x86_64 sum": func(r *imagespec.PythonRuntime) {
			f := r.Files["linux/amd64"]
			f.SHA256 = strings.Repeat("9", 64)
			r.Files["linux/amd64"] = f
		},
		"aarch64 sum": func(r *imagespec.PythonRuntime) {
			f := r.Files["linux/arm64"]
			f.SHA256 = strings.Repeat("9", 64)
			r.Files["linux/arm64"] = f
		},
		"release": func(r *imagespec.PythonRuntime) { r.Release = "20250818" },
	} {
		if got, _ := digest(m); got == base {
			t.Errorf("%s changed but the inputs digest did not", name)
		}
	}
	o, err := NewDefinition(testMatrix(t, standaloneYAML), Overrides{StandaloneURL: "https://mirror.example/{arch}.tar.gz",
		StandaloneSHA256: map[string]string{"x86_64": strings.Repeat("5", 64), "aarch64": strings.Repeat("6", 64)}}, "v1")
	if err != nil {
		t.Fatal(err)
	}
	set := testSet()
	set.PythonRuntime = testRuntime()
	r, err := o.Render(set)
	if err != nil {
		t.Fatal(err)
	}
	if r.Params.StandaloneURL != "https://mirror.example/{arch}.tar.gz" || r.Params.StandaloneSHA256["x86_64"] != strings.Repeat("5", 64) {
		t.Errorf("override not applied: %+v", r.Params)
	}
}

// The builder addresses docs/build.md lists have connection helpers
// registered (the imports of buildkit.go), so --builder accepts them.
func TestBuilderAddressSchemes(t *testing.T) {
	for _, addr := range []string{"ssh://builder@arm64-host", "kube-pod://buildkitd-0?namespace=buildkit", "docker-container://imagectl-buildkit"} {
		h, err := connhelper.GetConnectionHelper(addr)
		if err != nil || h == nil {
			t.Errorf("%s: no connection helper (%v)", addr, err)
		}
	}
}

func TestHashMismatchLine(t *testing.T) {
	exp, got := strings.Repeat("a", 64), strings.Repeat("b", 64)
	out := "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE. If you have updated the package versions, please update the hashes. Otherwise, examine the package contents carefully; someone may have tampered with them.\n" +
		"    aiosignal==1.3.1 from http://127.0.0.1:9/files/aiosignal-1.3.1-py3-none-any.whl#sha256=" + got + " (from -r /in/requirements.txt (line 3)):\n" +
		"        Expected sha256 " + exp + "\n" +
		"             Got        " + got + "\n\n"
	l := newLogTail()
	vtx := digest.FromString("run")
	// pip's report arrives in pieces, as BuildKit streams it.
	for i := 0; i < len(out); i += 50 {
		end := min(i+50, len(out))
		l.add(&client.SolveStatus{Logs: []*client.VertexLog{{Vertex: vtx, Data: []byte(out[i:end])}}})
	}
	l.add(&client.SolveStatus{Logs: []*client.VertexLog{{Vertex: digest.FromString("other"), Data: []byte("unrelated\n")}}})
	err := l.hashMismatch("linux/arm64")
	want := "python lock: wheel hash mismatch: aiosignal 1.3.1 on linux/arm64: locked sha256 " + exp + ", the index served sha256 " + got + " (http://127.0.0.1:9/files/aiosignal-1.3.1-py3-none-any.whl)"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant %s", err, want)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Error("the error has more than one line")
	}
	if err := newLogTail().hashMismatch("linux/amd64"); err != nil {
		t.Errorf("no logs: %v", err)
	}
}

// The locked closure is an input: another wheel under the same versions
// gives another inputs digest.
func TestInputsDigestCoversTheClosure(t *testing.T) {
	s := testSet()
	s.PythonLocks = map[string][]imagespec.PythonDist{"linux/amd64": {{Name: "aiosignal", Version: "1.3.1", Filename: "aiosignal-1.3.1-py3-none-any.whl", URL: "https://x/a.whl", SHA256: strings.Repeat("a", 64)}}}
	d1 := InputsDigest(s, []byte("def"), "v1")
	s.PythonLocks["linux/amd64"][0].SHA256 = strings.Repeat("b", 64)
	if d2 := InputsDigest(s, []byte("def"), "v1"); d1 == d2 {
		t.Error("a changed wheel sha256 in the closure did not change the inputs digest")
	}
	s.PythonLocks = nil
	if d3 := InputsDigest(s, []byte("def"), "v1"); d3 == d1 {
		t.Error("dropping the closure did not change the inputs digest")
	}
}
