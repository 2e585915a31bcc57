package vsix_test

import (
	"bytes"
	"context"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/vscode/vsixmanifest"
)

func validate(b []byte, want vsix.Expect, lim vsix.Limits) (*vsixmanifest.Info, error) {
	return vsix.Validate(context.Background(), bytes.NewReader(b), int64(len(b)), want, lim)
}

func TestValidateGoodFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		want    vsix.Expect
		info    vsixmanifest.Info
	}{
		{
			fixture: universalFixture,
			want:    vsix.Expect{ID: fixtureID, Version: fixtureVersion, TargetPlatform: vsix.Universal, VSCode: "1.100.3"},
			info:    vsixmanifest.Info{Publisher: "ms-python", Name: "debugpy", Version: fixtureVersion, TargetPlatform: vsix.Universal, Engine: fixtureEngine, Dependencies: []string{"ms-python.python"}, ExtensionPack: []string{}},
		},
		{
			// An empty TargetPlatform means universal.
			fixture: universalFixture,
			want:    vsix.Expect{ID: fixtureID, Version: fixtureVersion},
			info:    vsixmanifest.Info{Publisher: "ms-python", Name: "debugpy", Version: fixtureVersion, TargetPlatform: vsix.Universal, Engine: fixtureEngine, Dependencies: []string{"ms-python.python"}, ExtensionPack: []string{}},
		},
		{
			fixture: x64Fixture,
			want:    vsix.Expect{ID: fixtureID, Version: fixtureVersion, TargetPlatform: "linux-x64", VSCode: "1.92.0"},
			info:    vsixmanifest.Info{Publisher: "ms-python", Name: "debugpy", Version: fixtureVersion, TargetPlatform: "linux-x64", Engine: fixtureEngine, Dependencies: []string{"ms-python.python"}, ExtensionPack: []string{}},
		},
		{
			// The id is compared case-insensitively, as the Marketplace does.
			fixture: arm64Fixture,
			want:    vsix.Expect{ID: "MS-Python.Debugpy", Version: fixtureVersion, TargetPlatform: "linux-arm64"},
			info:    vsixmanifest.Info{Publisher: "ms-python", Name: "debugpy", Version: fixtureVersion, TargetPlatform: "linux-arm64", Engine: fixtureEngine, Dependencies: []string{"ms-python.python"}, ExtensionPack: []string{}},
		},
		{
			fixture: "ms-python.python-2025.8.0@linux-x64.vsix",
			want:    vsix.Expect{ID: "ms-python.python", Version: "2025.8.0", TargetPlatform: "linux-x64", VSCode: "1.100.3"},
			info:    vsixmanifest.Info{Publisher: "ms-python", Name: "python", Version: "2025.8.0", TargetPlatform: "linux-x64", Engine: "^1.95.0", Dependencies: []string{}, ExtensionPack: []string{"ms-python.debugpy"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.fixture+" as "+tc.want.ID+" "+tc.want.TargetPlatform, func(t *testing.T) {
			got, err := validate(readFixture(t, tc.fixture), tc.want, vsix.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.info, *got); diff != "" {
				t.Errorf("Info differs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	uni := readFixture(t, universalFixture)
	x64 := readFixture(t, x64Fixture)
	arm := readFixture(t, arm64Fixture)
	wantUni := vsix.Expect{ID: fixtureID, Version: fixtureVersion, TargetPlatform: vsix.Universal, VSCode: "1.100.3"}
	wantX64 := vsix.Expect{ID: fixtureID, Version: fixtureVersion, TargetPlatform: "linux-x64", VSCode: "1.100.3"}
	with := func(e vsix.Expect, f func(*vsix.Expect)) vsix.Expect { f(&e); return e }
	// 2 MiB of zeros deflates to about 2 KiB: a ratio near 1000.
	zeros := make([]byte, 2<<20)
	// Entry counts and total sizes of the universal fixture (7 entries,
	// 3533 bytes uncompressed), for limits right at the edge.
	const uniEntries, uniBytes = 7, 3533

	tests := []struct {
		name    string
		vsix    []byte
		want    vsix.Expect
		lim     vsix.Limits
		errText []string
	}{
		// Identity.
		{name: "publisher mismatch", vsix: uni, want: with(wantUni, func(e *vsix.Expect) { e.ID = "evil.debugpy" }), errText: []string{"Identity is ms-python.debugpy@2025.10.0, want evil.debugpy@2025.10.0"}},
		{name: "name mismatch", vsix: uni, want: with(wantUni, func(e *vsix.Expect) { e.ID = "ms-python.python" }), errText: []string{"Identity is ms-python.debugpy@2025.10.0, want ms-python.python@2025.10.0"}},
		{name: "version mismatch", vsix: uni, want: with(wantUni, func(e *vsix.Expect) { e.Version = "2025.10.1" }), errText: []string{"want ms-python.debugpy@2025.10.1"}},
		{name: "version prefix is not equal", vsix: uni, want: with(wantUni, func(e *vsix.Expect) { e.Version = "2025.10" }), errText: []string{"want ms-python.debugpy@2025.10"}},
		// Target platform.
		{name: "arm64 given, x64 asked", vsix: arm, want: wantX64, errText: []string{`TargetPlatform is "linux-arm64", want "linux-x64"`}},
		{name: "x64 given, arm64 asked", vsix: x64, want: with(wantX64, func(e *vsix.Expect) { e.TargetPlatform = "linux-arm64" }), errText: []string{`TargetPlatform is "linux-x64", want "linux-arm64"`}},
		{name: "universal given, platform asked", vsix: uni, want: wantX64, errText: []string{`TargetPlatform is "universal", want "linux-x64"`}},
		{name: "platform given, universal asked", vsix: x64, want: wantUni, errText: []string{`TargetPlatform is "linux-x64", want "universal"`}},
		{name: "platform given, nothing asked", vsix: x64, want: with(wantUni, func(e *vsix.Expect) { e.TargetPlatform = "" }), errText: []string{`want "universal"`}},
		{name: "manifest says a platform the file name does not", vsix: rewrite(t, uni, replaceIn(t, uni, vsix.ManifestPath, `Publisher="ms-python" />`, `Publisher="ms-python" TargetPlatform="linux-arm64" />`), nil), want: wantUni, errText: []string{`TargetPlatform is "linux-arm64"`}},
		// package.json against the manifest.
		{name: "package.json publisher differs", vsix: rewrite(t, uni, replaceIn(t, uni, vsix.PackageJSONPath, `"publisher": "ms-python"`, `"publisher": "evil"`), nil), want: wantUni, errText: []string{"extension/package.json says evil.debugpy@2025.10.0, but extension.vsixmanifest says ms-python.debugpy@2025.10.0"}},
		{name: "package.json name differs", vsix: rewrite(t, uni, replaceIn(t, uni, vsix.PackageJSONPath, `"name": "debugpy"`, `"name": "python"`), nil), want: wantUni, errText: []string{"says ms-python.python@2025.10.0, but"}},
		{name: "package.json version differs", vsix: rewrite(t, uni, replaceIn(t, uni, vsix.PackageJSONPath, `"version": "2025.10.0"`, `"version": "2025.9.0"`), nil), want: wantUni, errText: []string{"says ms-python.debugpy@2025.9.0, but"}},
		{name: "package.json missing", vsix: rewrite(t, uni, nil, []string{vsix.PackageJSONPath}), want: wantUni, errText: []string{"no extension/package.json"}},
		{name: "package.json not JSON", vsix: rewrite(t, uni, map[string][]byte{vsix.PackageJSONPath: []byte("<html>")}, nil), want: wantUni, errText: []string{"extension/package.json: invalid character"}},
		{name: "manifest missing", vsix: rewrite(t, uni, nil, []string{vsix.ManifestPath}), want: wantUni, errText: []string{"no extension.vsixmanifest"}},
		{name: "manifest not XML", vsix: rewrite(t, uni, map[string][]byte{vsix.ManifestPath: []byte("{}")}, nil), want: wantUni, errText: []string{"extension.vsixmanifest: not a VSIX manifest: EOF"}},
		// Engine.
		{name: "engine does not accept VS Code", vsix: uni, want: with(wantUni, func(e *vsix.Expect) { e.VSCode = "1.91.1" }), errText: []string{"not compatible with Code 1.91.1", fixtureEngine}},
		{name: "engine missing", vsix: rewrite(t, uni, replaceIn(t, uni, vsix.PackageJSONPath, `"engines": {"vscode": "^1.92.0"},`, ``), nil), want: wantUni, errText: []string{"no engines.vscode"}},
		{name: "engine unparseable", vsix: rewrite(t, uni, replaceIn(t, uni, vsix.PackageJSONPath, `"^1.92.0"`, `"soon"`), nil), want: wantUni, errText: []string{`engines.vscode "soon"`}},
		// Not a zip.
		{name: "not a zip", vsix: []byte("<html>hello</html>"), want: wantUni, errText: []string{"not a valid zip"}},
		{name: "empty", vsix: nil, want: wantUni, errText: []string{"not a valid zip"}},
		{name: "truncated zip", vsix: uni[:len(uni)-100], want: wantUni, errText: []string{"not a valid zip"}},
		// Entry names.
		{name: "dot-dot entry", vsix: rewrite(t, uni, nil, nil, entry{name: "../evil", body: []byte("x")}), want: wantUni, errText: []string{`entry "../evil"`}},
		{name: "dot-dot under extension", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/../../evil", body: []byte("x")}), want: wantUni, errText: []string{`entry "extension/../../evil"`}},
		{name: "a/../../b", vsix: rewrite(t, uni, nil, nil, entry{name: "a/../../b", body: []byte("x")}), want: wantUni, errText: []string{`entry "a/../../b"`}},
		{name: "absolute entry", vsix: rewrite(t, uni, nil, nil, entry{name: "/abs", body: []byte("x")}), want: wantUni, errText: []string{`entry "/abs": absolute path`}},
		{name: "backslash dot-dot", vsix: rewrite(t, uni, nil, nil, entry{name: `..\x`, body: []byte("x")}), want: wantUni, errText: []string{`backslash`}},
		{name: "backslash inside extension", vsix: rewrite(t, uni, nil, nil, entry{name: `extension\..\..\x`, body: []byte("x")}), want: wantUni, errText: []string{`backslash`}},
		{name: "drive letter", vsix: rewrite(t, uni, nil, nil, entry{name: "C:/x", body: []byte("x")}), want: wantUni, errText: []string{`drive letter`}},
		{name: "dot element", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/./x", body: []byte("x")}), want: wantUni, errText: []string{`not clean`}},
		{name: "double slash", vsix: rewrite(t, uni, nil, nil, entry{name: "extension//x", body: []byte("x")}), want: wantUni, errText: []string{`not clean`}},
		{name: "NUL in name", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/x\x00.js", body: []byte("x")}), want: wantUni, errText: []string{`NUL`}},
		{name: "duplicate entry differing in case", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/Package.json", body: []byte("{}")}), want: wantUni, errText: []string{`duplicate`}},
		// Links and special files.
		{name: "symlink entry (Unix creator)", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/out/link", body: []byte("/etc/passwd"), mode: fs.ModeSymlink | 0o777}), want: wantUni, errText: []string{`entry "extension/out/link": symbolic link`}},
		{name: "symlink entry (S_IFLNK in external attrs, MS-DOS creator)", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/out/link", body: []byte("../../../../etc/passwd"), rawAttrs: 0o120777 << 16}), want: wantUni, errText: []string{`entry "extension/out/link": symbolic link`}},
		{name: "named pipe entry", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/fifo", mode: fs.ModeNamedPipe | 0o644}), want: wantUni, errText: []string{`entry "extension/fifo": not a regular file`}},
		{name: "device entry", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/dev", mode: fs.ModeDevice | 0o644}), want: wantUni, errText: []string{`entry "extension/dev": not a regular file`}},
		// Limits.
		{name: "too many entries", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/extra.txt", body: []byte("x")}), want: wantUni, lim: vsix.Limits{MaxEntries: uniEntries}, errText: []string{"8 entries, more than the limit of 7"}},
		{name: "total size one byte over", vsix: uni, want: wantUni, lim: vsix.Limits{MaxTotalBytes: uniBytes - 1}, errText: []string{"uncompressed size exceeds the limit of 3532 bytes"}},
		{name: "compression ratio over the default", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/zeros.bin", body: zeros}), want: wantUni, errText: []string{`entry "extension/zeros.bin": compression ratio`, "exceeds the limit of 200"}},
		{name: "compression ratio over a custom limit", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/zeros.bin", body: make([]byte, 64<<10)}), want: wantUni, lim: vsix.Limits{MaxRatio: 10, RatioFloor: 32 << 10}, errText: []string{`entry "extension/zeros.bin": compression ratio`, "exceeds the limit of 10"}},
		{name: "stored entry over the total size", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/zeros.bin", body: zeros, store: true}), want: wantUni, lim: vsix.Limits{MaxTotalBytes: uniBytes + 1<<20}, errText: []string{"uncompressed size exceeds"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info, err := validate(tc.vsix, tc.want, tc.lim)
			if err == nil {
				t.Fatalf("accepted: %+v", *info)
			}
			for _, s := range tc.errText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %v\nwant it to contain %q", err, s)
				}
			}
		})
	}
}

// The limits above are exact edges: the same archives pass one step below.
func TestValidateLimitEdges(t *testing.T) {
	uni := readFixture(t, universalFixture)
	want := vsix.Expect{ID: fixtureID, Version: fixtureVersion}
	tests := []struct {
		name string
		vsix []byte
		lim  vsix.Limits
	}{
		{name: "entries at the limit", vsix: uni, lim: vsix.Limits{MaxEntries: 7}},
		{name: "total size at the limit", vsix: uni, lim: vsix.Limits{MaxTotalBytes: 3533}},
		// Below the ratio floor, a highly compressible file is harmless.
		{name: "compressible file below the ratio floor", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/zeros.bin", body: make([]byte, 64<<10)})},
		// A stored (ratio 1) file above the floor.
		{name: "stored file above the ratio floor", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/zeros.bin", body: make([]byte, 2<<20), store: true})},
		// Executable files and directories are fine.
		{name: "executable and directory entries", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/bin/", mode: fs.ModeDir | 0o755}, entry{name: "extension/bin/run", body: []byte("#!/bin/sh\n"), mode: 0o755})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := validate(tc.vsix, want, tc.lim); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCheckEntryName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"extension/package.json", true},
		{"extension/out/", true},
		{"[Content_Types].xml", true},
		{"extension/a..b/c", true},
		{"extension/.hidden", true},
		{"", false},
		{"/abs", false},
		{"../evil", false},
		{"..", false},
		{"a/..", false},
		{"a/../../b", false},
		{`..\x`, false},
		{`a\b`, false},
		{"c:evil", false},
		{"a//b", false},
		{"./a", false},
		{"a/./b", false},
		{"a/b//", false},
		{"a\x00b", false},
	}
	for _, tc := range tests {
		err := vsix.CheckEntryName(tc.name)
		if got := err == nil; got != tc.ok {
			t.Errorf("CheckEntryName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
