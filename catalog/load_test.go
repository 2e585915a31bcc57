package catalog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
)

// baseCatalog is a small valid catalog; hostileCases edit its text.
const baseCatalog = `{
  "schemaVersion": 1,
  "describes": "2025-07-15",
  "codeServer": [
    {"version": "4.101.2", "vscode": "1.101.2", "tag": "4.101.2",
     "indexDigest": "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     "platforms": {"linux/amd64": "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
                   "linux/arm64": "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"}}
  ],
  "ray": [
    {"version": "2.46.0", "requiresPython": ">=3.9", "pythons": {"linux/amd64": ["3.11", "3.12"], "linux/arm64": ["3.11", "3.12"]}}
  ],
  "debugpy": [
    {"version": "1.8.14", "pythons": {"any": ["any"]}}
  ],
  "extensions": [
    {"id": "anyscalecompute.ray-distributed-debugger", "source": "marketplace", "versions": [
      {"version": "0.1.6", "engine": "^1.66.0", "files": {"universal": {"url": "https://example.com/0.1.6.vsix", "sha256": "1111111111111111111111111111111111111111111111111111111111111111", "size": 1234}}},
      {"version": "0.1.4", "engine": "^1.66.0", "files": {"universal": {"sha256": "2222222222222222222222222222222222222222222222222222222222222222"}}}
    ]},
    {"id": "ms-python.debugpy", "source": "marketplace", "versions": [
      {"version": "2025.10.0", "engine": "^1.92.0", "dependencies": ["ms-python.python"],
       "files": {"linux-x64": {}, "linux-arm64": {}}}
    ]}
  ]
}
`

// hostileCases replace old (once) with new in baseCatalog; each must be
// refused with an error naming the file, the JSON path and what was wanted.
// wantErr follows the file name: ":LINE: " for what decoding finds, ": "
// for what Validate finds.
var hostileCases = []struct {
	name, old, new, wantErr string
}{
	// sha256 values that are not 64 lowercase hex digits.
	{"sha256 not hex", `"1111111111111111111111111111111111111111111111111111111111111111"`, `"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"`,
		`: extensions[0].versions[0].files.universal.sha256: "zzzz`},
	{"sha256 short", `"1111111111111111111111111111111111111111111111111111111111111111"`, `"abc"`,
		`: extensions[0].versions[0].files.universal.sha256: "abc": want 64 lowercase hex digits`},
	{"sha256 with prefix", `"2222222222222222222222222222222222222222222222222222222222222222"`, `"sha256:2222222222222222222222222222222222222222222222222222222222222222"`,
		`: extensions[0].versions[1].files.universal.sha256: "sha256:2222`},
	{"sha256 upper case", `"1111111111111111111111111111111111111111111111111111111111111111"`, `"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"`,
		`: extensions[0].versions[0].files.universal.sha256`},
	// A malformed newest version must not be skipped in favour of 0.1.4.
	{"version without engine", `{"version": "0.1.6", "engine": "^1.66.0",`, `{"version": "0.1.6",`,
		`: extensions[0].versions[0].engine: missing`},
	{"version with a bad engine", `"engine": "^1.66.0", "files": {"universal": {"url"`, `"engine": "latest", "files": {"universal": {"url"`,
		`: extensions[0].versions[0].engine: "latest": want engines.vscode`},
	{"version without files", `"files": {"universal": {"url": "https://example.com/0.1.6.vsix", "sha256": "1111111111111111111111111111111111111111111111111111111111111111", "size": 1234}}`, `"files": {}`,
		`: extensions[0].versions[0].files: none`},
	{"version with null files", `"files": {"universal": {"url": "https://example.com/0.1.6.vsix", "sha256": "1111111111111111111111111111111111111111111111111111111111111111", "size": 1234}}`, `"files": null`,
		`: extensions[0].versions[0].files: none`},
	{"version is a path", `"version": "0.1.6"`, `"version": "../../x"`,
		`: extensions[0].versions[0].version: "../../x": want a version`},
	{"version is empty", `"version": "0.1.6"`, `"version": ""`,
		`: extensions[0].versions[0].version: "": want a version`},
	{"version is not a version", `"version": "0.1.6"`, `"version": "banana"`,
		`: extensions[0].versions[0].version: "banana": want a semver or PEP 440 version`},
	{"unknown target platform", `"files": {"linux-x64": {}`, `"files": {"linux-x64/../../x": {}`,
		`: extensions[1].versions[0].files["linux-x64/../../x"]: key "linux-x64/../../x": want a VS Code target platform`},
	{"file URL not http", `"https://example.com/0.1.6.vsix"`, `"file:///etc/passwd"`,
		`: extensions[0].versions[0].files.universal.url: "file:///etc/passwd": want an absolute http(s) URL`},
	{"negative size", `"size": 1234`, `"size": -1`,
		`: extensions[0].versions[0].files.universal.size: -1`},
	{"fractional size", `"size": 1234`, `"size": 12.5`,
		`:18: extensions[0].versions[0].files.universal.size: the number "12.5": want an integer (64-bit)`},
	{"bad dependency", `"dependencies": ["ms-python.python"]`, `"dependencies": ["ms-python.python", "../x"]`,
		`: extensions[1].versions[0].dependencies[1]: "../x": want an extension id`},
	{"bad extension id", `"id": "ms-python.debugpy"`, `"id": "ms-python/debugpy"`,
		`: extensions[1].id: "ms-python/debugpy": want publisher.name`},
	{"bad source", `"id": "ms-python.debugpy", "source": "marketplace"`, `"id": "ms-python.debugpy", "source": "evil"`,
		`: extensions[1].source: "evil": want marketplace or openvsx`},
	// Duplicates.
	{"duplicate key", `"schemaVersion": 1,`, `"schemaVersion": 1, "schemaVersion": 1,`,
		`:2: schemaVersion: duplicate key`},
	{"duplicate nested key", `{"version": "0.1.4", "engine": "^1.66.0",`, `{"version": "0.1.4", "engine": "^1.66.0", "engine": "^1.0.0",`,
		`:19: extensions[0].versions[1].engine: duplicate key`},
	{"duplicate map key", `"linux/amd64": ["3.11", "3.12"], "linux/arm64"`, `"linux/amd64": ["3.11", "3.12"], "linux/amd64": ["3.9"], "linux/arm64"`,
		`:11: ray[0].pythons["linux/amd64"]: duplicate key`},
	{"key differing in case", `{"version": "0.1.4", "engine": "^1.66.0",`, `{"version": "0.1.4", "Engine": "^1.0.0", "engine": "^1.66.0",`,
		`:19: extensions[0].versions[1].Engine: unknown field (want one of dependencies, engine, extensionPack, files, preRelease, version)`},
	{"overlong map key", `"linux/amd64": ["3.11", "3.12"], "linux/arm64"`, `"linux/amd64": ["3.11", "3.12"], "` + strings.Repeat("k", 20000) + `": ["3.9"], "linux/arm64"`,
		`:11: ray[0].pythons["kkkkkkkkkk`},
	{"overlong string", `"describes": "2025-07-15",`, `"describes": "2025-07-15", "origin": "` + strings.Repeat("a", 20000) + `",`,
		`:3: origin: a string of 20000 bytes: want at most 16384`},
	{"unknown field in a list item", `"dependencies": ["ms-python.python"]`, `"dependencies": ["ms-python.python"], "sha256": "x"`,
		`:22: extensions[1].versions[0].sha256: unknown field (want one of dependencies, engine, extensionPack, files, preRelease, version)`},
	{"unknown field", `"describes": "2025-07-15",`, `"describes": "2025-07-15", "trustMe": true,`,
		`:3: trustMe: unknown field (want one of codeServer, debugpy, describes, extensions, origin, pythonLocks, pythonRuntimes, ray, schemaVersion, toolsImage)`},
	{"duplicate extension record", `{"id": "ms-python.debugpy", "source": "marketplace"`, `{"id": "anyscalecompute.Ray-Distributed-Debugger", "source": "marketplace"`,
		`: extensions[1]: duplicate of extensions[0]`},
	{"duplicate extension version", `{"version": "0.1.4", "engine"`, `{"version": "0.1.6", "engine"`,
		`: extensions[0].versions[1].version: duplicate of extensions[0].versions[0]`},
	{"duplicate ray version", `"debugpy": [
    {"version": "1.8.14"`, `"debugpy": [
    {"version": "1.8.14", "pythons": {"any": ["any"]}},
    {"version": "1.8.14"`,
		`: debugpy[1].version: duplicate of debugpy[0]`},
	{"duplicate code-server version", `"codeServer": [`, `"codeServer": [
    {"version": "4.101.2"},`,
		`: codeServer[1].version: duplicate of codeServer[0]`},
	{"duplicate python", `["3.11", "3.12"], "linux/arm64"`, `["3.12", "3.12"], "linux/arm64"`,
		`: ray[0].pythons["linux/amd64"][1]: duplicate of ray[0].pythons["linux/amd64"][0]`},
	// Trailing data.
	{"trailing object", "]\n}\n", "]\n}\n{}", `:27: data after the JSON document: want exactly one JSON object`},
	{"trailing garbage", "]\n}\n", "]\n}\nxyz", `:27: data after the JSON document`},
	{"trailing brace", "]\n}\n", "]\n}\n}", `:27: data after the JSON document`},
	// Base image references.
	{"index digest not a digest", `"indexDigest": "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"`, `"indexDigest": "sha256:xyz"`,
		`: codeServer[0].indexDigest: "sha256:xyz": want sha256:<64 lowercase hex digits>`},
	{"tag carrying a digest", `"tag": "4.101.2",`, `"tag": "4.101.2@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",`,
		`: codeServer[0].tag: "4.101.2@sha256:bbbb`},
	{"platform digest", `"sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"`, `"latest"`,
		`: codeServer[0].platforms["linux/arm64"]: "latest": want sha256:`},
	{"bad vscode", `"vscode": "1.101.2"`, `"vscode": "1.101"`,
		`: codeServer[0].vscode: "1.101": want the bundled VS Code version`},
	{"bad vscodeFrom", `"vscode": "1.101.2"`, `"vscode": "1.101.2", "vscodeFrom": "guess"`,
		`: codeServer[0].vscodeFrom: "guess": want "image" (read from the base image) or nothing`},
	// Python packages.
	{"bad requires-python", `"requiresPython": ">=3.9"`, `"requiresPython": "python3 please"`,
		`: ray[0].requiresPython: "python3 please": want a PEP 440 specifier`},
	{"bad wheel platform", `"pythons": {"any": ["any"]}`, `"pythons": {"windows": ["any"]}`,
		`: debugpy[0].pythons.windows: key "windows"`},
	{"bad python", `["3.11", "3.12"], "linux/arm64"`, `["3.11", "python3.12"], "linux/arm64"`,
		`: ray[0].pythons["linux/amd64"][1]: "python3.12": want a CPython minor version`},
	// Types and the document.
	{"wrong type", `"schemaVersion": 1,`, `"schemaVersion": "1",`, `:2: schemaVersion: the string "1": want an integer`},
	{"null string", `"describes": "2025-07-15"`, `"describes": null`, `:3: describes: null: want a string`},
	{"bad date", `"describes": "2025-07-15"`, `"describes": "yesterday"`, `: describes: "yesterday": want the date`},
	{"schema version", `"schemaVersion": 1,`, `"schemaVersion": 2,`, `: schemaVersion: 2: want 1`},
	{"origin with escape", `"describes": "2025-07-15",`, `"describes": "2025-07-15", "origin": "\u001b]0;pwned\u0007",`, `: origin: control character`},
	{"invalid JSON", `"ray": [`, `"ray": [,`, `:10: ray: invalid JSON: invalid character ',' at start of value`},
	{"truncated", "]\n}\n", "]\n", `:26: invalid JSON: unexpected end of the document`},
}

func TestParseHostile(t *testing.T) {
	if _, err := catalog.Parse("catalog.json", []byte(baseCatalog)); err != nil {
		t.Fatalf("the base catalog does not parse: %v", err)
	}
	for _, tc := range hostileCases {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Count(baseCatalog, tc.old) != 1 {
				t.Fatalf("%q occurs %d times in the base catalog, want once", tc.old, strings.Count(baseCatalog, tc.old))
			}
			doc := strings.Replace(baseCatalog, tc.old, tc.new, 1)
			c, err := catalog.Parse("catalog.json", []byte(doc))
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", c)
			}
			want := "catalog.json" + tc.wantErr
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error\n  %v\nwant one starting with\n  %s", err, want)
			}
			var ce *catalog.Error
			if !errors.As(err, &ce) || ce.File != "catalog.json" {
				t.Errorf("error %v is not a *catalog.Error naming catalog.json", err)
			}
			if len(err.Error()) > 400 {
				t.Errorf("error is %d bytes long, want a readable line", len(err.Error()))
			}
		})
	}
}

// An empty catalog.json is named as such, not as a bare EOF.
func TestParseEmpty(t *testing.T) {
	for _, doc := range []string{"", " \n\t\n"} {
		_, err := catalog.Parse("catalog.json", []byte(doc))
		if want := "catalog.json: empty document: want a JSON object"; err == nil || err.Error() != want {
			t.Errorf("Parse(%q) = %v, want %s", doc, err, want)
		}
	}
}

// Write refuses a catalog Load would refuse, so refresh never writes one.
func TestWriteRefusesInvalid(t *testing.T) {
	p := filepath.Join(t.TempDir(), "catalog.json")
	c, err := catalog.Parse("catalog.json", []byte(baseCatalog))
	if err != nil {
		t.Fatal(err)
	}
	c.Extensions[0].Versions[0].Files["universal"] = catalog.File{SHA256: "sha256:abc"}
	err = catalog.Write(p, c)
	if err == nil || !strings.Contains(err.Error(), `extensions[0].versions[0].files.universal.sha256: "sha256:abc"`) {
		t.Fatalf("Write(invalid) = %v, want an error naming the sha256", err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Write(invalid) left %s behind (stat: %v)", p, err)
	}
}

// A long hostile value is quoted, escaped and cut in the error.
func TestParseErrorQuotesAndCuts(t *testing.T) {
	long := strings.Repeat("\x1b[31m", 2000)
	doc := strings.Replace(baseCatalog, `"version": "0.1.6"`, `"version": "`+strings.ReplaceAll(long, "\x1b", `\u001b`)+`"`, 1)
	_, err := catalog.Parse("catalog.json", []byte(doc))
	if err == nil {
		t.Fatal("Parse accepted a 10 KB escape-sequence version")
	}
	if strings.Contains(err.Error(), "\x1b") || len(err.Error()) > 300 {
		t.Errorf("error is %d bytes and carries raw escapes: %q", len(err.Error()), err)
	}
}

// Load reads only regular files, bounded: /dev/zero and a FIFO are refused
// at once, a sparse file larger than the limit before it is read.
func TestLoadNotRegularOrTooLarge(t *testing.T) {
	dir := t.TempDir()
	sparse := filepath.Join(dir, "sparse.json")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", "/dev/zero: not a regular file (a character device)"},
		{dir, dir + ": not a regular file (a directory)"},
		{sparse, sparse + ": larger than the limit of 64 MiB"},
	} {
		if _, err := catalog.Load(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%s) = %v, want an error containing %q", tc.path, err, tc.want)
		}
	}
}

func TestLoadRepoCatalog(t *testing.T) {
	raw, err := os.ReadFile("../catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Load("../catalog.json")
	if err != nil {
		t.Fatalf("the committed catalog.json does not load: %v", err)
	}
	// It is already in canonical form: Marshal gives it back byte for byte.
	b, err := catalog.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(raw), string(b)); diff != "" {
		t.Errorf("catalog.json is not what Marshal writes (-file +Marshal):\n%s", diff)
	}
}

var fuzzErrRE = regexp.MustCompile(`^fuzz\.json(:\d+)?: `)

// FuzzParse: Parse never panics; whatever it accepts Marshal encodes and
// Parse accepts again, identically (so nothing it accepts is half-valid).
func FuzzParse(f *testing.F) {
	for _, p := range []string{"../catalog.json"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(baseCatalog))
	for _, tc := range hostileCases {
		f.Add([]byte(strings.Replace(baseCatalog, tc.old, tc.new, 1)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := catalog.Parse("fuzz.json", data)
		if err != nil {
			if !fuzzErrRE.MatchString(err.Error()) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		b, err := catalog.Marshal(c)
		if err != nil {
			t.Fatalf("Parse accepted a catalog Marshal refuses: %v", err)
		}
		c2, err := catalog.Parse("fuzz.json", b)
		if err != nil {
			t.Fatalf("Parse refuses what Marshal wrote from an accepted catalog: %v\n%s", err, b)
		}
		b2, err := catalog.Marshal(c2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, b2) {
			t.Fatalf("Marshal(Parse(Marshal(c))) differs:\n%s\n%s", b, b2)
		}
	})
}

// null for a list is an error naming the field, not an empty list; a
// catalog whose lists are empty is written with [] and reads back.
func TestParseNullList(t *testing.T) {
	for _, tc := range []struct{ field, want string }{
		{"codeServer", "catalog.json:1: codeServer: null: want a list ([] for none)"},
		{"ray", "catalog.json:1: ray: null: want a list ([] for none)"},
		{"debugpy", "catalog.json:1: debugpy: null: want a list ([] for none)"},
		{"extensions", "catalog.json:1: extensions: null: want a list ([] for none)"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			var doc map[string]json.RawMessage
			if err := json.Unmarshal([]byte(baseCatalog), &doc); err != nil {
				t.Fatal(err)
			}
			doc[tc.field] = json.RawMessage("null")
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = catalog.Parse("catalog.json", b)
			got := fmt.Sprint(err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse error (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("extension versions", func(t *testing.T) {
		doc := strings.Replace(baseCatalog, `"source": "marketplace", "versions": [
      {"version": "2025.10.0"`, `"source": "marketplace", "versions": null, "x": [
      {"version": "2025.10.0"`, 1)
		_, err := catalog.Parse("catalog.json", []byte(doc))
		want := "catalog.json:21: extensions[1].versions: null: want a list ([] for none)"
		if got := fmt.Sprint(err); got != want {
			t.Errorf("Parse error %q, want %q", got, want)
		}
	})
	t.Run("empty lists round-trip", func(t *testing.T) {
		c, err := catalog.Parse("catalog.json", []byte(baseCatalog))
		if err != nil {
			t.Fatal(err)
		}
		c.Extensions, c.Debugpy = nil, nil
		b, err := catalog.Marshal(c)
		if err != nil {
			t.Skipf("a catalog without extensions does not validate: %v", err)
		}
		if _, err := catalog.Parse("catalog.json", b); err != nil {
			t.Errorf("Parse(Marshal(c)) with empty lists: %v\n%s", err, b)
		}
	})
}
