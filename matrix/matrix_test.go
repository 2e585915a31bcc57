package matrix

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/imagespec"
)

func TestLoadInvalid(t *testing.T) {
	tests := map[string]string{
		"alias":                       "invalid-alias.yaml:3: YAML anchors and aliases are not supported",
		"bad-base-image":              `invalid-bad-base-image.yaml:3: base.image: bad image "lscr.io/linuxserver/code-server:4.101.2"`,
		"bad-constraint":              `invalid-bad-constraint.yaml:5: components.codeServer.constraint: bad version constraint ">=4.96.0 <<"`,
		"bad-exclude":                 `invalid-bad-exclude.yaml:4: components.ray.exclude[0]: bad version "two"`,
		"bad-extension-id":            `invalid-bad-extension-id.yaml:4: extensions[0].id: bad extension id "python" (want publisher.name`,
		"bad-override":                `invalid-bad-override.yaml:4: base.vscodeOverrides["4.99.4"]: bad VS Code version "1.99"`,
		"bad-platform":                `invalid-bad-platform.yaml:3: platforms[1]: unsupported platform "linux/s390x" (want linux/amd64 or linux/arm64)`,
		"bad-ray-build":               `invalid-bad-ray-build.yaml:4: components.ray.build: unknown build policy "nightly"`,
		"bad-repository":              `invalid-bad-repository.yaml:1: image.repositories[0]: bad repository "ghcr.io/A/B:latest"`,
		"bad-source":                  `invalid-bad-source.yaml:7: extensions[1].source: unknown source "foo" (want marketplace or openvsx)`,
		"bad-tag-template":            `invalid-bad-tag-template.yaml:2: tags[0].template: tag template "{{.CodeServer}-{{.Ray}}"`,
		"bad-url":                     `invalid-bad-url.yaml:4: upstreams.pypi: bad URL "ftp://pypi.org" (want an absolute http or https URL)`,
		"bad-url-relative":            `invalid-bad-url-relative.yaml:4: upstreams.openvsx: bad URL "open-vsx.org"`,
		"bad-versions":                `invalid-bad-versions.yaml:3: base.versions: unknown version source "dockerhub" (want registry-tags or github-releases)`,
		"bad-yaml":                    `invalid-bad-yaml.yaml: invalid YAML: yaml: line 1:`,
		"build-runtime":               `invalid-build-runtime.yaml:4: build.pythonRuntime: unknown Python runtime "system" (want standalone or base)`,
		"build-standalone-repository": `invalid-build-standalone-repository.yaml:5: build.standalone.repository: bad GitHub repository "python-build-standalone" (want owner/name`,
		"build-standalone-release":    `invalid-build-standalone-release.yaml:6: build.standalone.release: bad release "2025.08" (want a python-build-standalone release tag`,
		"build-standalone-flavor":     `invalid-build-standalone-flavor.yaml:5: build.standalone.flavor: unknown flavor "full" (want install_only or install_only_stripped)`,
		"build-standalone-old-shape":  `invalid-build-standalone-old-shape.yaml:5: build.standalone["3.12"]: unknown field "3.12" (want one of flavor, release, repository)`,
		"build-tools-image":           `invalid-build-tools-image.yaml:4: build.toolsImage: bad image "Python:3.12 slim"`,
		"debugger-local-root":         `invalid-debugger-local-root.yaml:4: settings["anyscalecompute.ray-distributed-debugger.clusterDashboards"]: anyscalecompute.ray-distributed-debugger.clusterDashboards[0].localRoot is "/tmp/ray/session_latest/runtime_resources", want ""`,
		"dup-extension":               `invalid-dup-extension.yaml:5: extensions[1].id: extension "MS-Python.Python" already listed at extensions[0]`,
		"dup-key":                     `invalid-dup-key.yaml:4: platforms: duplicate key (first at line 3)`,
		"dup-platform":                `invalid-dup-platform.yaml:3: platforms[1]: platform "linux/amd64" listed twice`,
		"empty":                       `invalid-empty.yaml: empty document`,
		"first-tag-floating":          `invalid-first-tag-floating.yaml:2: tags[0].floating: the first tag must be immutable`,
		"missing-name":                `invalid-missing-name.yaml:1: image.name: missing`,
		"missing-source":              `invalid-missing-source.yaml:4: extensions[0].source: missing (want marketplace or openvsx)`,
		"no-tags":                     `invalid-no-tags.yaml:1: tags: missing`,
		"not-mapping":                 `invalid-not-mapping.yaml:1: want a mapping, got a list`,
		"python-max":                  `invalid-python-max.yaml:4: components.python.max: bad Python version "3.x"`,
		"python-min-above-max":        `invalid-python-min-above-max.yaml:4: components.python.min: min 3.12 is above max 3.10`,
		"python-policy":               `invalid-python-policy.yaml:5: components.python.policy: unknown python policy "newest" (want highest-common)`,
		"settings-key":                `invalid-settings-key.yaml:4: settings: want a string key, got a list`,
		"settings-nan":                `invalid-settings-nan.yaml:4: settings.a: .nan is not representable in JSON`,
		"tag-invalid-chars":           `invalid-tag-invalid-chars.yaml:2: tags[0].template: tag template "{{.CodeServer}}/ray{{.Ray}}:{{.Python}}" renders "4.101.2/ray2.46.0:3.12", not a valid tag`,
		"tag-floating-inputs":         `invalid-tag-floating-inputs.yaml:4: tags[1].template: floating tag "ray{{.Ray}}-{{.Inputs}}" uses {{.Inputs}}`,
		"tag-no-inputs":               `invalid-tag-no-inputs.yaml:2: tags[0].template: immutable tag "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}" does not change with the inputs digest (add {{.Inputs}}`,
		"tag-not-unique":              `invalid-tag-not-unique.yaml:2: tags[0].template: immutable tag "ray{{.Ray}}" does not change with code-server, Ray and Python`,
		"tag-pattern-bad":             `invalid-tag-pattern-bad.yaml:3: base.tagPattern: bad regular expression`,
		"tag-pattern-no-group":        `invalid-tag-pattern-no-group.yaml:3: base.tagPattern: "^\\d+\\.\\d+\\.\\d+$" has no group`,
		"tag-unknown-field":           `invalid-tag-unknown-field.yaml:2: tags[0].template: tag template "{{.CodeServer}}-{{.Ray}}-{{.Pyton}}": {{.Pyton}}: unknown field (want one of .CodeServer .VSCode .Ray .RayMinor .Python .Debugpy .Inputs)`,
		"tag-printf":                  `invalid-tag-printf.yaml:2: tags[0].template: tag template "{{printf \"%999999999d\" 1}}{{.CodeServer}}-{{.Ray}}-{{.Python}}-{"... (74 bytes): "{{printf \"%999999999d\" 1}}" is not allowed: only text and {{.Field}} references`,
		"tag-control":                 `invalid-tag-control.yaml:2: tags[0].template: tag template "{{.CodeServer}}-{{.Ray}}-{{.Python}}-{{.Inputs}}{{if .Ray}}x{{en"... (67 bytes): "{{if .Ray}}x{{end}}" is not allowed`,
		"two-docs":                    `invalid-two-docs.yaml:3: more than one YAML document`,
		"two-docs-broken":             `invalid-two-docs-broken.yaml: more than one YAML document, the second not YAML:`,
		"unknown-field":               `invalid-unknown-field.yaml:6: components.ray.extra: unknown field "extra" (want one of build, constraint, exclude, extras)`,
		"unknown-top":                 `invalid-unknown-top.yaml:3: platform: unknown field "platform"`,
		"wrong-type-bool":             `invalid-wrong-type-bool.yaml:6: extensions[0].preRelease: want true or false, got the string "yes"`,
		"wrong-type-platforms":        `invalid-wrong-type-platforms.yaml:3: platforms: want a list, got the string "linux/amd64"`,
	}
	files, err := filepath.Glob("testdata/invalid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(tests) {
		t.Errorf("%d invalid-*.yaml files but %d table entries: keep them in step", len(files), len(tests))
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "invalid-"), ".yaml")
		t.Run(name, func(t *testing.T) {
			want, ok := tests[name]
			if !ok {
				t.Fatalf("no expected error for %s", f)
			}
			cfg, err := Load(f)
			if err == nil {
				t.Fatalf("Load(%s) = %+v, want error containing %q", f, cfg, want)
			}
			if !strings.HasPrefix(err.Error(), "testdata/") || !strings.Contains(err.Error(), want) {
				t.Errorf("Load(%s) error:\n got %q\nwant containing %q", f, err, want)
			}
		})
	}
}

func TestLoadValidMinimalDefaults(t *testing.T) {
	got, err := Load("testdata/valid-minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Image:     Image{Name: "minimal", Repositories: []string{"localhost:5000/minimal"}},
		Platforms: []string{"linux/amd64", "linux/arm64"},
		Base:      Base{Image: DefaultBaseImage, Versions: VersionsRegistryTags, TagPattern: DefaultTagPattern},
		Components: Components{
			CodeServer: Constraint{Constraint: "*"},
			Ray:        Ray{Constraint: "*", Build: RayBuildLatestPatch},
			Python:     PythonPolicy{Policy: PolicyHighestCommon},
			Debugpy:    Constraint{Constraint: ">=1.8.0"},
		},
		Build: Build{ToolsImage: DefaultToolsImage, PythonRuntime: imagespec.PythonRuntimeStandalone, Standalone: Standalone{
			Repository: DefaultStandaloneRepository, Release: DefaultStandaloneRelease, Flavor: StandaloneInstallOnly,
		}},
		Tags: []Tag{{Template: "{{.CodeServer}}-{{.Ray}}-{{.Python}}-{{.Inputs}}"}},
		Upstreams: Upstreams{
			PyPI: DefaultPyPIURL, Marketplace: DefaultMarketplace, OpenVSX: DefaultOpenVSXURL,
			GitHub: DefaultGitHubURL, PackageIndex: DefaultPackageIndex,
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load(valid-minimal) mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadValidFull(t *testing.T) {
	got, err := Load("testdata/valid-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(PythonPolicy{Policy: "highest-common", Min: "3.9", Max: "3.10"}, got.Components.Python); diff != "" {
		t.Errorf("python policy (-want +got):\n%s\n(an unquoted 3.10 must keep its literal text)", diff)
	}
	wantExt := []Extension{
		{ID: "ms-python.python", Source: "marketplace", Constraint: ">=2025.0.0"},
		{ID: "ms-python.debugpy", Source: "openvsx", Constraint: "*", PreRelease: true},
		{ID: "anyscalecompute.ray-distributed-debugger", Source: "marketplace", Constraint: "*"},
	}
	if diff := cmp.Diff(wantExt, got.Extensions); diff != "" {
		t.Errorf("extensions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"4.99.4": "1.99.3"}, got.Base.VSCodeOverrides); diff != "" {
		t.Errorf("vscodeOverrides (-want +got):\n%s", diff)
	}
	if got.Upstreams.PyPI != "http://127.0.0.1:9999" || got.Upstreams.OpenVSX != DefaultOpenVSXURL {
		t.Errorf("upstreams = %+v, want pypi overridden and openvsx defaulted", got.Upstreams)
	}
	b, err := json.Marshal(got.Settings)
	if err != nil {
		t.Fatalf("settings must be JSON-encodable: %v", err)
	}
	wantSettings := `{"anyscalecompute.ray-distributed-debugger.clusterDashboards":[{"host":"127.0.0.1:8265","localRoot":""}],"editor.tabSize":4,"workbench.startupEditor":"none"}`
	if string(b) != wantSettings {
		t.Errorf("settings JSON = %s, want %s", b, wantSettings)
	}
	wantBuild := Build{
		ToolsImage:    "docker.io/library/python:3.12-slim-bookworm",
		PythonRuntime: imagespec.PythonRuntimeStandalone,
		Standalone: Standalone{
			Repository: "astral-sh/python-build-standalone", Release: "20250808", Flavor: StandaloneInstallOnlyStripped,
		},
	}
	if diff := cmp.Diff(wantBuild, got.Build); diff != "" {
		t.Errorf("build (-want +got):\n%s", diff)
	}
	if _, ok := got.Extension("MS-PYTHON.PYTHON"); !ok {
		t.Error(`Extension("MS-PYTHON.PYTHON") not found; ids are case-insensitive`)
	}
}

func TestLoadValidAll(t *testing.T) {
	files, err := filepath.Glob("testdata/valid-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid testdata: %v", err)
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("Load(%s): %v", f, err)
		}
	}
}

func TestLoadRepoMatrix(t *testing.T) {
	if _, err := Load("../matrix.yaml"); err != nil {
		t.Errorf("the committed matrix.yaml does not load: %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("Load(missing) error = %v, want one naming the file", err)
	}
}

func TestTagRender(t *testing.T) {
	d := TagData{CodeServer: "4.101.2", VSCode: "1.101.2", Ray: "2.46.0", RayMinor: "2.46", Python: "3.12", Debugpy: "1.8.14", Inputs: "3f2a9c0b1d4e"}
	tests := []struct {
		tmpl, want, wantErr string
	}{
		{"{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}-{{.Inputs}}", "4.101.2-ray2.46.0-py3.12-3f2a9c0b1d4e", ""},
		{"{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}", "4.101.2-ray2.46.0-py3.12", ""},
		{"ray{{.RayMinor}}", "ray2.46", ""},
		{"latest", "latest", ""},
		{"{{.Nope}}", "", "{{.Nope}}: unknown field"},
		{"{{- .Ray -}}", "2.46.0", ""},
		{"ray{{/* a comment */}}{{.Ray}}", "ray2.46.0", ""},
		{`{{printf "%d" 1}}`, "", "is not allowed"},
		{`{{.Ray | printf "%s"}}`, "", "is not allowed"},
		{`{{$x := .Ray}}{{$x}}`, "", "is not allowed"},
		{`{{define "x"}}a{{end}}{{template "x"}}`, "", "{{define}} and {{block}} are not allowed"},
		{`{{range .Ray}}x{{end}}`, "", "is not allowed"},
		{`{{len .Ray}}`, "", "is not allowed"},
		{`{{.Ray.Foo}}`, "", "is not allowed"},
		{`{{"literal"}}`, "", "is not allowed"},
		{strings.Repeat("a", 129), "", "renders more than 128 bytes"},
		{strings.Repeat("a", 128), strings.Repeat("a", 128), ""},
		{strings.Repeat("{{.Inputs}}", 11), "", "renders more than 128 bytes"},
		{"-{{.Ray}}", "", "not a valid tag"},
		{"", "", "not a valid tag"},
	}
	for _, tc := range tests {
		got, err := Tag{Template: tc.tmpl}.Render(d)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Render(%q) = %q, %v; want error containing %q", tc.tmpl, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Render(%q) = %q, %v; want %q", tc.tmpl, got, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("a: &a [*a]"))
	f.Add([]byte("settings: {x: !!binary aGk=}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if cfg == nil || len(cfg.Tags) == 0 || len(cfg.Platforms) == 0 {
			t.Fatalf("Parse accepted an incomplete config: %+v", cfg)
		}
		if _, err := json.Marshal(cfg); err != nil {
			t.Fatalf("accepted config is not JSON-encodable: %v", err)
		}
	})
}

// Tag templates are bounded: a printf with a huge width (which on its own
// renders a megabyte, or exhausts memory) is refused before anything is
// rendered, and errors quote only the start of a long template.
func TestTagTemplateHostile(t *testing.T) {
	const head = "image: {name: x, repositories: [ghcr.io/a/b]}\ntags: [{template: '"
	for _, tc := range []struct {
		name, tmpl, wantErr string
	}{
		{"one megabyte", `{{printf "%1000000d" 1}}{{.CodeServer}}-{{.Ray}}-{{.Python}}-{{.Inputs}}`, "is not allowed"},
		{"huge width", `{{printf "%0999999999d" 1}}{{.CodeServer}}-{{.Ray}}-{{.Python}}-{{.Inputs}}`, "is not allowed"},
		{"75 KB of widths", strings.Repeat(`{{printf "%0999999d" 0}}`, 3400), "bytes, want at most 256"},
		{"75 KB of text", strings.Repeat("a", 75<<10), "bytes, want at most 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("m.yaml", []byte(head+tc.tmpl+"'}]\n"))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse = %v, want an error containing %q", err, tc.wantErr)
			}
			if len(err.Error()) > 400 {
				t.Errorf("error is %d bytes long: %.200s...", len(err.Error()), err)
			}
		})
	}
}

// The limits hold against hostile input, and what yaml.v3 would accept
// leniently is refused with the line and field path.
func TestParseLimitsAndStrictness(t *testing.T) {
	const head = "image: {name: x, repositories: [ghcr.io/a/b]}\ntags: [{template: '{{.CodeServer}}-{{.Ray}}-{{.Python}}-{{.Inputs}}'}]\n"
	keys := func(n int, key func(int) string) string {
		var b strings.Builder
		b.WriteString(head + "settings:\n")
		for i := range n {
			b.WriteString("  " + key(i) + ": 1\n")
		}
		return b.String()
	}
	distinct := func(i int) string { return "k" + strconv.Itoa(i) }
	tests := []struct {
		name, in, wantErr string
	}{
		{"too large", head + "# " + strings.Repeat("x", maxFileSize), "m.yaml: larger than 1048576 bytes"},
		{"too deep", head + "settings: {a: " + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + "}", "m.yaml:3: nested deeper than 64 levels"},
		{"anchor", head + "settings: {a: &x 1}", "m.yaml:3: YAML anchors and aliases are not supported"},
		{"merge key", head + "settings: {<<: {a: 1}}", "m.yaml:3: YAML merge keys (<<) are not supported"},
		{"too many keys", keys(maxMappingKeys+1, distinct), "m.yaml:4: a mapping with 1001 keys (want at most 1000)"},
		{"one key repeated", keys(maxMappingKeys, func(int) string { return "k" }), `m.yaml:5: settings.k: duplicate key (first at line 4)`},
		{"duplicate nested field", head + "build: {standalone: {flavor: a, flavor: b}}", `m.yaml:3: build.standalone.flavor: duplicate key (first at line 3)`},
		{"string written as true", head + "base: {image: true}", `m.yaml:3: base.image: want a string, got the boolean true`},
		{"boolean written as on", head + "extensions: [{id: a.b, source: openvsx, preRelease: on}]", `m.yaml:3: extensions[0].preRelease: want true or false, got the string "on"`},
		{"null list item", head + "platforms: [linux/amd64, ~]", "m.yaml:3: platforms[1]: want a string, got null"},
		{"null extension", head + "extensions:\n  -\n", "m.yaml:4: extensions[0]: want a mapping, got null"},
		{"tag that does not fit", head + "components: {python: {max: !!int abc}}", "m.yaml:3: components.python.max: bad !!int \"abc\""},
		{"binary key", head + "!!binary cGxhdGZvcm1z: [linux/amd64]", `m.yaml:3: want a string key, got !!binary "cGxhdGZvcm1z"`},
		{"binary value", head + "base: {image: !!binary eA==}", `m.yaml:3: base.image: want a string, got !!binary "eA=="`},
		{"timestamp", head + "settings: {a: 2025-08-08}", `m.yaml:3: settings.a: unsupported YAML tag !!timestamp`},
		{"integer beyond int64", head + "settings: {a: 18446744073709551615}", `m.yaml:3: settings.a: bad integer "18446744073709551615"`},
		{"duplicate before unknown", head + "s: 1\nplatforms: 0\ns: 2", `m.yaml:5: s: duplicate key (first at line 3)`},
		{"unknown field in a list item", head + "extensions:\n  - {id: a.b, source: openvsx}\n  - {id: c.d, source: openvsx, pre: true}", `m.yaml:5: extensions[1].pre: unknown field "pre" (want one of constraint, exclude, id, preRelease, source)`},
		{"mapping inside a mapping on one line", "tags: [{template: x}]\nimage:\n  name: {a: b}\n  repositories: [ghcr.io/a/b]", `m.yaml:3: image.name: want a string, got a mapping`},
		{"mapping holding a mapping on one line", head + "platforms: {a: {b: c}}", `m.yaml:3: platforms: want a list, got a mapping`},
		{"unknown field named like a value on its line", head + "extensions: [{id: pre, source: openvsx, pre: x}]", `m.yaml:3: extensions[0].pre: unknown field "pre" (want one of`},
		{"mapping written as true", "tags: [{template: x}]\nimage: true", `m.yaml:2: image: want a mapping, got the boolean true`},
		{"list of mappings written as a string", "image: {name: x, repositories: [ghcr.io/a/b]}\ntags: x", `m.yaml:2: tags: want a list, got the string "x"`},
		{"floating written as on", "image: {name: x, repositories: [ghcr.io/a/b]}\ntags: [{template: '{{.CodeServer}}-{{.Ray}}-{{.Python}}-{{.Inputs}}'}, {template: latest, floating: on}]", `m.yaml:2: tags[1].floating: want true or false, got the string "on"`},
		{"unknown field before a lenient value", head + "s: 1\nbase: {image: true}", `m.yaml:3: s: unknown field "s"`},
		{"lenient value before an unknown field", head + "base: {image: true}\ns: 1", `m.yaml:3: base.image: want a string, got the boolean true`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			cfg, err := Parse("m.yaml", []byte(tc.in))
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Fatalf("Parse = %+v, %v; want an error starting %q", cfg, err, tc.wantErr)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Parse took %v", d)
			}
		})
	}
}

// Settings keep the literal text of every key, as JSON needs string keys,
// and the most keys a mapping may have still load.
func TestParseSettingsKeys(t *testing.T) {
	const head = "image: {name: x, repositories: [ghcr.io/a/b]}\ntags: [{template: '{{.CodeServer}}-{{.Ray}}-{{.Python}}-{{.Inputs}}'}]\n"
	cfg, err := Parse("m.yaml", []byte(head+"settings: {1: a, b: {0x10: c, true: d, 1.0: e, ~x: [1, 2.5, null, f]}}"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(cfg.Settings)
	if err != nil {
		t.Fatalf("settings are not JSON-encodable: %v", err)
	}
	const want = `{"1":"a","b":{"0x10":"c","1.0":"e","true":"d","~x":[1,2.5,null,"f"]}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("settings JSON (-want +got):\n%s", diff)
	}
	var b strings.Builder
	b.WriteString(head + "settings:\n")
	for i := range maxMappingKeys {
		b.WriteString("  k" + strconv.Itoa(i) + ": 1\n")
	}
	cfg, err = Parse("m.yaml", []byte(b.String()))
	if err != nil || len(cfg.Settings) != maxMappingKeys {
		t.Fatalf("Parse(%d settings) = %v; want them all", maxMappingKeys, err)
	}
}
