package resolve

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
)

const testMatrix = `
image: {name: t, repositories: [localhost:5000/t]}
platforms: [linux/amd64, linux/arm64]
base: {image: lscr.io/linuxserver/code-server}
components:
  codeServer: {constraint: ">=4.96.0"}
  ray: {constraint: ">=2.39.0", extras: [default]}
  python: {policy: highest-common, max: "3.12"}
  debugpy: {constraint: ">=1.8.0"}
extensions:
  - {id: ms-python.debugpy, source: marketplace}
  - {id: ms-python.python, source: marketplace}
  - {id: anyscalecompute.ray-distributed-debugger, source: marketplace}
tags:
  - template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}-{{.Inputs}}"
  - {template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}", floating: true}
  - {template: "ray{{.RayMinor}}", floating: true}
  - {template: "ray{{.Ray}}", floating: true}
  - {template: latest, floating: true}
`

func mustMatrix(t *testing.T, s string) *matrix.Config {
	t.Helper()
	cfg, err := matrix.Parse("test-matrix.yaml", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func files(targets ...string) map[string]catalog.File {
	m := map[string]catalog.File{}
	for _, t := range targets {
		m[t] = catalog.File{URL: "https://example.test/" + t + ".vsix", SHA256: strings.Repeat("a", 64)}
	}
	return m
}

var py312 = []string{"3.9", "3.10", "3.11", "3.12"}

func testCatalog() *catalog.Catalog {
	return &catalog.Catalog{
		SchemaVersion: catalog.SchemaVersion,
		Describes:     "2025-07-15",
		CodeServer: []catalog.CodeServer{
			{Version: "4.101.2", VSCode: "1.101.2", Tag: "4.101.2", IndexDigest: "sha256:" + strings.Repeat("1", 64),
				Platforms: map[string]string{"linux/amd64": "sha256:" + strings.Repeat("2", 64), "linux/arm64": "sha256:" + strings.Repeat("3", 64)}},
			{Version: "4.95.0", VSCode: "1.95.0", Tag: "4.95.0"},
		},
		Ray: []catalog.PythonPackage{
			{Version: "2.46.0", Pythons: map[string][]string{
				"linux/amd64": {"3.9", "3.10", "3.11", "3.12", "3.13"},
				"linux/arm64": py312}},
			{Version: "2.45.0", Pythons: map[string][]string{"linux/amd64": py312, "linux/arm64": py312}},
			{Version: "2.44.1", Pythons: map[string][]string{"linux/amd64": py312, "linux/arm64": py312}},
			{Version: "2.44.0", Pythons: map[string][]string{"linux/amd64": py312, "linux/arm64": py312}},
			{Version: "2.38.0", Pythons: map[string][]string{"linux/amd64": py312, "linux/arm64": py312}},
		},
		Debugpy: []catalog.PythonPackage{
			{Version: "1.9.0rc1", PreRelease: true, Pythons: map[string][]string{"any": {"any"}}},
			{Version: "1.8.16", Yanked: true, Pythons: map[string][]string{"any": {"any"}}},
			{Version: "1.8.15", Pythons: map[string][]string{"linux/amd64": {"3.11"}, "linux/arm64": {"3.11"}}},
			{Version: "1.8.14", Pythons: map[string][]string{"linux/amd64": {"3.12"}, "linux/arm64": {"3.12"}}},
			{Version: "1.7.0", Pythons: map[string][]string{"any": {"any"}}},
		},
		Extensions: []catalog.ExtensionRecord{
			{ID: "ms-python.python", Source: "marketplace", Versions: []catalog.ExtensionVersion{
				{Version: "2025.22.0", Engine: "^1.104.0", Files: files("linux-x64", "linux-arm64")},
				{Version: "2025.11.0", PreRelease: true, Engine: "^1.95.0", Files: files("linux-x64", "linux-arm64")},
				{Version: "2025.10.0", Engine: "^1.95.0", ExtensionPack: []string{"ms-python.vscode-pylance", "ms-python.debugpy"}, Files: files("linux-x64", "linux-arm64", "darwin-arm64")},
			}},
			{ID: "ms-python.debugpy", Source: "marketplace", Versions: []catalog.ExtensionVersion{
				{Version: "2025.10.0", Engine: "^1.92.0", Dependencies: []string{"ms-python.python"}, Files: files("universal", "linux-x64", "linux-arm64")},
			}},
			{ID: "anyscalecompute.ray-distributed-debugger", Source: "marketplace", Versions: []catalog.ExtensionVersion{
				{Version: "0.2.0", Engine: "^1.66.0", Files: files("linux-x64")},
				{Version: "0.1.4", Engine: "^1.66.0", Files: files("universal")},
			}},
		},
	}
}

func ray46(platforms ...string) Request { return Request{Ray: "2.46.0", Platforms: platforms} }

func TestResolveFullSet(t *testing.T) {
	cfg := mustMatrix(t, testMatrix)
	set, ex, err := Resolve(cfg, testCatalog(), ray46())
	if err != nil {
		t.Fatal(err)
	}
	u := func(t string) string { return "https://example.test/" + t + ".vsix" }
	sum := strings.Repeat("a", 64)
	want := imagespec.Set{
		CodeServer: imagespec.CodeServer{
			Version: "4.101.2", VSCode: "1.101.2",
			Base:        "lscr.io/linuxserver/code-server:4.101.2@sha256:" + strings.Repeat("1", 64),
			IndexDigest: "sha256:" + strings.Repeat("1", 64),
			Platforms:   map[string]string{"linux/amd64": "sha256:" + strings.Repeat("2", 64), "linux/arm64": "sha256:" + strings.Repeat("3", 64)},
		},
		Ray: "2.46.0", Python: "3.12", RayPythons: py312, RayExtras: []string{"default"},
		Debugpy:   "1.8.14",
		Platforms: []string{"linux/amd64", "linux/arm64"},
		Extensions: []imagespec.Extension{
			// Dependencies first: ms-python.python before ms-python.debugpy
			// although matrix.yaml lists debugpy first.
			{ID: "ms-python.python", Version: "2025.10.0", Source: "marketplace", Engine: "^1.95.0", Files: map[string]imagespec.File{
				"linux/amd64": {TargetPlatform: "linux-x64", URL: u("linux-x64"), SHA256: sum},
				"linux/arm64": {TargetPlatform: "linux-arm64", URL: u("linux-arm64"), SHA256: sum}}},
			{ID: "ms-python.debugpy", Version: "2025.10.0", Source: "marketplace", Engine: "^1.92.0", Files: map[string]imagespec.File{
				"linux/amd64": {TargetPlatform: "linux-x64", URL: u("linux-x64"), SHA256: sum},
				"linux/arm64": {TargetPlatform: "linux-arm64", URL: u("linux-arm64"), SHA256: sum}}},
			{ID: "anyscalecompute.ray-distributed-debugger", Version: "0.1.4", Source: "marketplace", Engine: "^1.66.0", Files: map[string]imagespec.File{
				"linux/amd64": {TargetPlatform: "universal", URL: u("universal"), SHA256: sum},
				"linux/arm64": {TargetPlatform: "universal", URL: u("universal"), SHA256: sum}}},
		},
		// testCatalog records no tools image digest: the bare reference.
		ToolsImage: matrix.DefaultToolsImage,
		// Tags are publishing: rendered by RenderTags once the inputs
		// digest is known, never by Resolve.
	}
	if diff := cmp.Diff(want, set); diff != "" {
		t.Errorf("Resolve mismatch (-want +got):\n%s", diff)
	}
	text := ex.String()
	for _, line := range []string{
		"ms-python.python 2025.22.0 rejected: engines ^1.104.0 not satisfied by VS Code 1.101.2",
		"ms-python.python 2025.11.0 rejected: pre-release (matrix.yaml does not allow pre-releases for it)",
		"python 3.13 rejected: no Ray 2.46.0 wheel for linux/arm64",
		"debugpy 1.9.0rc1 rejected: pre-release",
		"debugpy 1.8.16 rejected: yanked on PyPI",
		"debugpy 1.8.15 rejected: no wheel for CPython 3.12 on linux/amd64, linux/arm64",
		"anyscalecompute.ray-distributed-debugger 0.2.0 rejected: no linux-arm64 or universal build (has: linux-x64)",
		"ms-python.python 2025.10.0 lists ms-python.vscode-pylance in its extensionPack",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("explanation lacks %q:\n%s", line, text)
		}
	}
}

func TestRenderTags(t *testing.T) {
	cfg := mustMatrix(t, testMatrix)
	set, _, err := Resolve(cfg, testCatalog(), ray46())
	if err != nil {
		t.Fatal(err)
	}
	inputs := "sha256:3f2a9c0b1d4e" + strings.Repeat("5", 52)
	got, err := RenderTags(cfg, set, inputs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"4.101.2-ray2.46.0-py3.12-3f2a9c0b1d4e", "4.101.2-ray2.46.0-py3.12", "ray2.46", "ray2.46.0", "latest"}
	if diff := cmp.Diff(want, got.Names()); diff != "" {
		t.Errorf("RenderTags (-want +got):\n%s", diff)
	}
	// Each tag is floating as its template is.
	wantTags := imagespec.Tags{{Name: want[0]}, {Name: want[1], Floating: true}, {Name: want[2], Floating: true}, {Name: want[3], Floating: true}, {Name: want[4], Floating: true}}
	if diff := cmp.Diff(wantTags, got); diff != "" {
		t.Errorf("RenderTags flags (-want +got):\n%s", diff)
	}
	// Other inputs move the versioned tag only.
	otherTags, err := RenderTags(cfg, set, "sha256:"+strings.Repeat("0", 64))
	if err != nil {
		t.Fatal(err)
	}
	other := otherTags.Names()
	if other[0] != "4.101.2-ray2.46.0-py3.12-000000000000" || !cmp.Equal(other[1:], want[1:]) {
		t.Errorf("RenderTags with other inputs = %v", other)
	}
	for _, bad := range []string{"", "sha256:abc", "sha512:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("A", 64)} {
		if _, err := RenderTags(cfg, set, bad); err == nil {
			t.Errorf("RenderTags(inputs %q) succeeded, want an error", bad)
		}
	}
}

func TestResolveExtensions(t *testing.T) {
	tests := []struct {
		name      string
		matrix    string // replaces the extensions block
		platforms []string
		edit      func(*catalog.Catalog)
		want      map[string]string // id -> version
		wantErr   string
	}{
		{
			name:      "engine mismatch rejected",
			platforms: []string{"linux/amd64"},
			want:      map[string]string{"ms-python.python": "2025.10.0", "ms-python.debugpy": "2025.10.0", "anyscalecompute.ray-distributed-debugger": "0.2.0"},
		},
		{
			name:      "platform build missing for arm64 falls back to older universal",
			platforms: []string{"linux/arm64"},
			want:      map[string]string{"ms-python.python": "2025.10.0", "ms-python.debugpy": "2025.10.0", "anyscalecompute.ray-distributed-debugger": "0.1.4"},
		},
		{
			name:      "no build at all for a platform is a conflict",
			platforms: []string{"linux/amd64", "linux/arm64"},
			edit: func(c *catalog.Catalog) {
				c.Extensions[2].Versions = c.Extensions[2].Versions[:1] // only 0.2.0 linux-x64
			},
			wantErr: "no anyscalecompute.ray-distributed-debugger version fits VS Code 1.101.2 on linux/amd64, linux/arm64; 0.2.0 no linux-arm64 or universal build (has: linux-x64)",
		},
		{
			name: "pre-release allowed",
			matrix: `extensions:
  - {id: ms-python.python, source: marketplace, preRelease: true}
  - {id: ms-python.debugpy, source: marketplace}
  - {id: anyscalecompute.ray-distributed-debugger, source: marketplace}`,
			want: map[string]string{"ms-python.python": "2025.11.0", "ms-python.debugpy": "2025.10.0", "anyscalecompute.ray-distributed-debugger": "0.1.4"},
		},
		{
			name: "constraint narrows",
			matrix: `extensions:
  - {id: ms-python.python, source: marketplace, constraint: "<2025.10.0"}`,
			wantErr: "2025.10.0 does not satisfy <2025.10.0",
		},
		{
			name: "missing dependency is an error",
			matrix: `extensions:
  - {id: ms-python.debugpy, source: marketplace}`,
			wantErr: "ms-python.debugpy 2025.10.0 depends on ms-python.python, which is not in matrix.yaml extensions",
		},
		{
			name: "extension not in catalog",
			matrix: `extensions:
  - {id: ms-python.python, source: openvsx}`,
			wantErr: "extension ms-python.python (source openvsx) is not in the catalog",
		},
		{
			name: "dependency cycle",
			matrix: `extensions:
  - {id: ms-python.python, source: marketplace}
  - {id: ms-python.debugpy, source: marketplace}`,
			edit: func(c *catalog.Catalog) {
				for i := range c.Extensions[0].Versions {
					c.Extensions[0].Versions[i].Dependencies = []string{"ms-python.debugpy"}
				}
			},
			wantErr: "extension dependency cycle",
		},
		{
			name: "unparseable engine rejected with reason",
			matrix: `extensions:
  - {id: anyscalecompute.ray-distributed-debugger, source: marketplace}`,
			edit: func(c *catalog.Catalog) {
				c.Extensions[2].Versions[0].Engine = "~1.66"
				c.Extensions[2].Versions[1].Engine = "~1.66"
			},
			wantErr: `0.1.4 engines.vscode "~1.66": cannot parse`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := testMatrix
			if tc.matrix != "" {
				i := strings.Index(m, "extensions:")
				j := strings.Index(m, "tags:")
				m = m[:i] + tc.matrix + "\n" + m[j:]
			}
			cfg := mustMatrix(t, m)
			cat := testCatalog()
			cat.CodeServer = cat.CodeServer[:1]
			if tc.edit != nil {
				tc.edit(cat)
			}
			set, _, err := Resolve(cfg, cat, ray46(tc.platforms...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Resolve error = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, e := range set.Extensions {
				got[e.ID] = e.Version
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("extension versions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolvePython(t *testing.T) {
	tests := []struct {
		name       string
		max        string
		req        Request
		wantPython string
		wantCommon []string
		wantErr    string
	}{
		{"highest common to both platforms", "", ray46(), "3.12", py312, ""},
		{"amd64 alone gets 3.13", "", ray46("linux/amd64"), "3.13", []string{"3.9", "3.10", "3.11", "3.12", "3.13"}, ""},
		{"capped by policy max", `"3.12"`, ray46("linux/amd64"), "3.12", []string{"3.9", "3.10", "3.11", "3.12", "3.13"}, ""},
		{"pinned", "", Request{Ray: "2.46.0", Python: "3.11"}, "3.11", py312, ""},
		{"pinned above common set", "", Request{Ray: "2.46.0", Python: "3.13"}, "", nil, "--python 3.13: Ray 2.46.0 ships wheels for it on only linux/amd64 (common to all: 3.9, 3.10, 3.11, 3.12)"},
		{"pinned unknown", "", Request{Ray: "2.46.0", Python: "3.8"}, "", nil, "--python 3.8: Ray 2.46.0 ships wheels for it on none of the requested platforms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := strings.Replace(testMatrix, `python: {policy: highest-common, max: "3.12"}`, "python: {policy: highest-common}", 1)
			if tc.max != "" {
				m = strings.Replace(m, "python: {policy: highest-common}", "python: {policy: highest-common, max: "+tc.max+"}", 1)
			}
			cat := testCatalog()
			// A debugpy usable everywhere so that Python alone decides.
			cat.Debugpy = []catalog.PythonPackage{{Version: "1.8.0", Pythons: map[string][]string{"any": {"any"}}}}
			set, _, err := Resolve(mustMatrix(t, m), cat, tc.req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if set.Python != tc.wantPython {
				t.Errorf("Python = %s, want %s", set.Python, tc.wantPython)
			}
			if diff := cmp.Diff(tc.wantCommon, set.RayPythons); diff != "" {
				t.Errorf("RayPythons (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveNoCommonPython(t *testing.T) {
	cat := testCatalog()
	cat.Ray[0].Pythons = map[string][]string{"linux/amd64": {"3.12"}, "linux/arm64": {"3.11"}}
	_, _, err := Resolve(mustMatrix(t, testMatrix), cat, ray46())
	want := "Ray 2.46.0 ships no CPython wheel common to every platform (linux/amd64: [3.12]; linux/arm64: [3.11])"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v, want containing %q", err, want)
	}
}

func TestResolveCodeServer(t *testing.T) {
	cfg := mustMatrix(t, strings.Replace(testMatrix, `">=4.96.0"`, `">=4.90.0"`, 1))
	tests := []struct {
		name    string
		edit    func(*catalog.Catalog)
		req     Request
		want    string
		wantErr string
	}{
		{name: "newest", req: ray46(), want: "4.101.2"},
		{name: "pinned", req: Request{Ray: "2.46.0", CodeServer: "4.95.0"}, want: "4.95.0"},
		{name: "pinned unknown", req: Request{Ray: "2.46.0", CodeServer: "4.1.0"}, wantErr: "code-server 4.1.0 is not in the catalog (known: 4.95.0, 4.101.2)"},
		{
			name: "base without arm64 manifest is skipped",
			edit: func(c *catalog.Catalog) { delete(c.CodeServer[0].Platforms, "linux/arm64") },
			req:  ray46(), want: "4.95.0",
		},
		{
			name: "base without arm64 manifest is fine for amd64 alone",
			edit: func(c *catalog.Catalog) { delete(c.CodeServer[0].Platforms, "linux/arm64") },
			req:  ray46("linux/amd64"), want: "4.101.2",
		},
		{
			name: "older VS Code fails an extension engine",
			edit: func(c *catalog.Catalog) {
				c.CodeServer[0].Version, c.CodeServer[0].VSCode = "4.91.0", "1.91.0"
				c.CodeServer = c.CodeServer[:1]
			},
			req: ray46(), wantErr: "code-server 4.91.0: no ms-python.debugpy version fits VS Code 1.91.0",
		},
		{
			name: "VS Code derived when the catalog lacks it",
			edit: func(c *catalog.Catalog) { c.CodeServer[0].VSCode = "" },
			req:  ray46(), want: "4.101.2",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cat := testCatalog()
			if tc.edit != nil {
				tc.edit(cat)
			}
			set, _, err := Resolve(cfg, cat, tc.req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if set.CodeServer.Version != tc.want {
				t.Errorf("code-server = %s, want %s", set.CodeServer.Version, tc.want)
			}
			if set.CodeServer.VSCode == "" {
				t.Error("VS Code version empty")
			}
		})
	}
}

func TestResolveRayErrors(t *testing.T) {
	cfg := mustMatrix(t, testMatrix)
	_, _, err := Resolve(cfg, testCatalog(), Request{Ray: "9.9.9"})
	var ur *UnknownRayError
	if !errors.As(err, &ur) {
		t.Fatalf("error = %v, want *UnknownRayError", err)
	}
	if diff := cmp.Diff([]string{"2.38.0", "2.44.0", "2.44.1", "2.45.0", "2.46.0"}, ur.Known); diff != "" {
		t.Errorf("known Ray versions (-want +got):\n%s", diff)
	}
	if !strings.Contains(err.Error(), "known Ray versions: 2.38.0, 2.44.0, 2.44.1, 2.45.0, 2.46.0") {
		t.Errorf("error text %q does not list known versions", err)
	}
	_, _, err = Resolve(cfg, testCatalog(), Request{Ray: "2.38.0"})
	if err == nil || !strings.Contains(err.Error(), `Ray 2.38.0 is outside matrix.yaml components.ray.constraint ">=2.39.0"`) {
		t.Errorf("error = %v, want outside-constraint error", err)
	}
	_, _, err = Resolve(cfg, testCatalog(), Request{Ray: "2.46.0", Platforms: []string{"linux/s390x"}})
	if err == nil || !strings.Contains(err.Error(), `unsupported platform "linux/s390x"`) {
		t.Errorf("error = %v, want unsupported platform", err)
	}
}

func TestResolveDeterministic(t *testing.T) {
	cfg := mustMatrix(t, testMatrix)
	first, ex1, err := Resolve(cfg, testCatalog(), ray46())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(first)
	wantEx := ex1.String()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		cat := testCatalog()
		rng.Shuffle(len(cat.CodeServer), func(a, b int) { cat.CodeServer[a], cat.CodeServer[b] = cat.CodeServer[b], cat.CodeServer[a] })
		rng.Shuffle(len(cat.Ray), func(a, b int) { cat.Ray[a], cat.Ray[b] = cat.Ray[b], cat.Ray[a] })
		rng.Shuffle(len(cat.Debugpy), func(a, b int) { cat.Debugpy[a], cat.Debugpy[b] = cat.Debugpy[b], cat.Debugpy[a] })
		rng.Shuffle(len(cat.Extensions), func(a, b int) { cat.Extensions[a], cat.Extensions[b] = cat.Extensions[b], cat.Extensions[a] })
		for _, e := range cat.Extensions {
			rng.Shuffle(len(e.Versions), func(a, b int) { e.Versions[a], e.Versions[b] = e.Versions[b], e.Versions[a] })
		}
		for _, r := range cat.Ray {
			for _, ps := range r.Pythons {
				rng.Shuffle(len(ps), func(a, b int) { ps[a], ps[b] = ps[b], ps[a] })
			}
		}
		set, ex, err := Resolve(cfg, cat, Request{Ray: "2.46.0", Platforms: []string{"linux/arm64", "linux/amd64"}})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(set)
		if string(got) != string(want) {
			t.Fatalf("shuffle %d: JSON differs:\n got %s\nwant %s", i, got, want)
		}
		if ex.String() != wantEx {
			t.Fatalf("shuffle %d: explanation differs:\n got %s\nwant %s", i, ex, wantEx)
		}
	}
}

func TestResolveDoesNotMutateCatalog(t *testing.T) {
	cat := testCatalog()
	cat.Debugpy[0], cat.Debugpy[4] = cat.Debugpy[4], cat.Debugpy[0]
	before, _ := json.Marshal(cat)
	if _, _, err := Resolve(mustMatrix(t, testMatrix), cat, ray46()); err != nil {
		t.Fatal(err)
	}
	after, _ := json.Marshal(cat)
	if string(before) != string(after) {
		t.Error("Resolve modified its catalog argument")
	}
}

func TestAll(t *testing.T) {
	tests := []struct {
		build       string
		wantRays    []string
		wantSkipped []Skipped
	}{
		{"latest-patch", []string{"2.46.0", "2.45.0", "2.44.1"}, nil},
		{"all", []string{"2.46.0", "2.45.0", "2.44.1", "2.44.0"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.build, func(t *testing.T) {
			m := strings.Replace(testMatrix, "extras: [default]", "extras: [default], build: "+tc.build, 1)
			sets, skipped, err := All(mustMatrix(t, m), testCatalog(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var rays []string
			for _, s := range sets {
				rays = append(rays, s.Ray)
			}
			if diff := cmp.Diff(tc.wantRays, rays); diff != "" {
				t.Errorf("rays (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkipped, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
		})
	}
	// A Ray version that cannot resolve is skipped with its reason.
	cat := testCatalog()
	cat.Ray[1].Pythons = map[string][]string{"linux/amd64": {"3.8"}}
	sets, skipped, err := All(mustMatrix(t, testMatrix), cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 || len(skipped) != 1 || skipped[0].Ray != "2.45.0" || !strings.Contains(skipped[0].Reason, "no CPython wheel common") {
		t.Errorf("All = %d sets, skipped %+v; want 2 sets and 2.45.0 skipped for Python", len(sets), skipped)
	}
}

func TestPythonSatisfies(t *testing.T) {
	tests := []struct {
		spec, py string
		want     bool
	}{
		{"", "3.12", true},
		{">=3.8", "3.12", true},
		{">=3.8", "3.7", false},
		{">=3.9.5", "3.9", true},
		{"<3.12", "3.12", false},
		{"<3.12", "3.11", true},
		{"<3.12.1", "3.12", true},
		{"<=3.12", "3.12", true},
		{">3.12", "3.12", true},
		{">3.12", "3.11", false},
		{"!=3.9.*", "3.9", false},
		{"!=3.9.0", "3.9", true},
		{"!=3.9", "3.9", false},
		{"==3.*", "3.12", true},
		{"==3.10.*", "3.12", false},
		{"~=3.8", "3.12", true},
		{"~=3.8.1", "3.9", false},
		{">=3.8, <3.13", "3.12", true},
		{">=3.8, <3.13", "3.13", false},
	}
	for _, tc := range tests {
		got, err := pythonSatisfies(tc.spec, tc.py)
		if err != nil || got != tc.want {
			t.Errorf("pythonSatisfies(%q, %q) = %v, %v; want %v", tc.spec, tc.py, got, err, tc.want)
		}
	}
	for _, bad := range []string{"3.8", ">=three", ">=3.8 || <2"} {
		if _, err := pythonSatisfies(bad, "3.12"); err == nil {
			t.Errorf("pythonSatisfies(%q) accepted a bad specifier", bad)
		}
	}
}
