package vsix_test

import (
	"archive/zip"
	"bytes"
	"context"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/internal/testutil"
)

var fixedTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func extract(b []byte, dest string, lim vsix.Limits) error {
	return vsix.Extract(context.Background(), bytes.NewReader(b), int64(len(b)), dest, lim, fixedTime)
}

func TestExtractFixture(t *testing.T) {
	for _, tc := range []struct {
		fixture  string
		platform string
	}{
		{universalFixture, "universal\n"},
		{arm64Fixture, "linux-arm64\n"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			parent := t.TempDir()
			dest := filepath.Join(parent, "ms-python.debugpy-2025.10.0")
			if err := extract(readFixture(t, tc.fixture), dest, vsix.Limits{}); err != nil {
				t.Fatal(err)
			}
			// The extension/ folder at the top, the manifest as .vsixmanifest,
			// nothing else ([Content_Types].xml stays out).
			want := []string{
				".vsixmanifest -rw-r--r--",
				"LICENSE.txt -rw-r--r--",
				"out/ -rwxr-xr-x",
				"out/extension.js -rw-r--r--",
				"package.json -rw-r--r--",
				"platform.txt -rw-r--r--",
				"readme.md -rw-r--r--",
			}
			if diff := cmp.Diff(want, tree(t, dest)); diff != "" {
				t.Errorf("extracted tree differs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"ms-python.debugpy-2025.10.0/ -rwxr-xr-x"}, tree(t, parent)[:1]); diff != "" {
				t.Errorf("parent differs (-want +got):\n%s", diff)
			}
			got, err := os.ReadFile(filepath.Join(dest, "platform.txt"))
			if err != nil || string(got) != tc.platform {
				t.Errorf("platform.txt = %q, %v; want %q", got, err, tc.platform)
			}
			man, err := os.ReadFile(filepath.Join(dest, ".vsixmanifest"))
			if err != nil || !bytes.Contains(man, []byte(`Id="debugpy" Version="2025.10.0" Publisher="ms-python"`)) {
				t.Errorf(".vsixmanifest = %.200q, %v", man, err)
			}
			assertMtimes(t, dest, fixedTime)
		})
	}
}

// assertMtimes checks that dest and everything under it has mtime want.
func assertMtimes(t *testing.T, dest string, want time.Time) {
	t.Helper()
	var wrong []string
	filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.ModTime().Equal(want) {
			wrong = append(wrong, p+" "+fi.ModTime().UTC().String())
		}
		return nil
	})
	if len(wrong) > 0 {
		t.Errorf("mtimes not %v:\n%s", want, strings.Join(wrong, "\n"))
	}
}

func TestExtractModesAndDirectories(t *testing.T) {
	b := rewrite(t, readFixture(t, universalFixture), nil, nil,
		entry{name: "extension/bin/", mode: fs.ModeDir | 0o700},
		entry{name: "extension/bin/run", body: []byte("#!/bin/sh\n"), mode: 0o750},
		entry{name: "extension/deep/a/b/c.txt", body: []byte("c"), mode: 0o600},
		entry{name: "extension/world.txt", body: []byte("w"), mode: 0o666},
		entry{name: "other/ignored.txt", body: []byte("not in extension/")},
	)
	old := syscallUmask(0o077) // the modes must not depend on the umask
	defer syscallUmask(old)
	parent := t.TempDir()
	dest := filepath.Join(parent, "x")
	if err := extract(b, dest, vsix.Limits{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("x/ -rwxr-xr-x", tree(t, parent)[0]); diff != "" {
		t.Errorf("dest mode differs (-want +got):\n%s", diff)
	}
	want := []string{
		".vsixmanifest -rw-r--r--",
		"LICENSE.txt -rw-r--r--",
		"bin/ -rwxr-xr-x",
		"bin/run -rwxr-xr-x",
		"deep/ -rwxr-xr-x",
		"deep/a/ -rwxr-xr-x",
		"deep/a/b/ -rwxr-xr-x",
		"deep/a/b/c.txt -rw-r--r--",
		"out/ -rwxr-xr-x",
		"out/extension.js -rw-r--r--",
		"package.json -rw-r--r--",
		"platform.txt -rw-r--r--",
		"readme.md -rw-r--r--",
		"world.txt -rw-r--r--",
	}
	if diff := cmp.Diff(want, tree(t, dest)); diff != "" {
		t.Errorf("extracted tree differs (-want +got):\n%s", diff)
	}
	assertMtimes(t, dest, fixedTime)
}

// Extract is reproducible: two extractions give the same tree, bytes and times.
func TestExtractReproducible(t *testing.T) {
	b := readFixture(t, x64Fixture)
	snap := func() map[string]string {
		dest := filepath.Join(t.TempDir(), "x")
		if err := extract(b, dest, vsix.Limits{}); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
			fi, _ := os.Lstat(p)
			rel, _ := filepath.Rel(dest, p)
			c, _ := os.ReadFile(p)
			out[rel] = fi.Mode().String() + " " + fi.ModTime().UTC().Format(time.RFC3339Nano) + " " + string(c)
			return nil
		})
		return out
	}
	if diff := cmp.Diff(snap(), snap()); diff != "" {
		t.Errorf("two extractions differ:\n%s", diff)
	}
}

// Every archive Validate rejects for safety reasons, Extract refuses too
// (it re-checks), and it writes nothing: not in dest, not beside it.
func TestExtractRefusesUnsafe(t *testing.T) {
	uni := readFixture(t, universalFixture)
	tests := []struct {
		name    string
		vsix    []byte
		lim     vsix.Limits
		errText string
	}{
		{name: "dot-dot", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/../../evil", body: []byte("x")}), errText: `entry "extension/../../evil"`},
		{name: "dot-dot at the top", vsix: rewrite(t, uni, nil, nil, entry{name: "../evil", body: []byte("x")}), errText: `entry "../evil"`},
		{name: "absolute", vsix: rewrite(t, uni, nil, nil, entry{name: "/tmp/evil", body: []byte("x")}), errText: "absolute path"},
		{name: "absolute under extension", vsix: rewrite(t, uni, nil, nil, entry{name: "extension//evil", body: []byte("x")}), errText: "not clean"},
		{name: "backslash", vsix: rewrite(t, uni, nil, nil, entry{name: `extension/..\..\evil`, body: []byte("x")}), errText: "backslash"},
		{name: "symlink", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/link", body: []byte("/etc"), mode: fs.ModeSymlink | 0o777}), errText: "symbolic link"},
		{name: "symlink in raw attributes", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/link", body: []byte("/etc"), rawAttrs: 0o120777 << 16}), errText: "symbolic link"},
		{name: "too many entries", vsix: uni, lim: vsix.Limits{MaxEntries: 6}, errText: "more than the limit of 6"},
		{name: "total size", vsix: uni, lim: vsix.Limits{MaxTotalBytes: 3532}, errText: "uncompressed size exceeds"},
		{name: "ratio", vsix: rewrite(t, uni, nil, nil, entry{name: "extension/zeros.bin", body: make([]byte, 2<<20)}), errText: "compression ratio"},
		{name: "not a zip", vsix: []byte("<html>"), errText: "not a valid zip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dest := filepath.Join(parent, "sub", "dest")
			err := extract(tc.vsix, dest, tc.lim)
			if err == nil || !strings.Contains(err.Error(), tc.errText) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.errText)
			}
			if got := tree(t, parent); len(got) != 0 {
				t.Errorf("Extract left files behind: %q", got)
			}
		})
	}
}

// liarVSIX returns the universal fixture plus, as its last entry,
// extension/liar.bin whose data is longer than its header declares; Extract
// fails on it after writing every other file.
func liarVSIX(t *testing.T) []byte {
	t.Helper()
	data := bytes.Repeat([]byte("A"), 1<<16)
	return testutil.EditZip(t, readFixture(t, universalFixture), nil, func(zw *zip.Writer) {
		w, err := zw.CreateRaw(&zip.FileHeader{
			Name: "extension/liar.bin", Method: zip.Store,
			CRC32:              crc32.ChecksumIEEE(data),
			CompressedSize64:   uint64(len(data)),
			UncompressedSize64: 10, // a lie
		})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	})
}

// An entry whose data is longer than its header declares is cut off, not
// written in full (the archive/zip checksum reader and Extract's own limit
// both stop it).
func TestExtractEntryLongerThanDeclared(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "x")
	err := extract(liarVSIX(t), dest, vsix.Limits{})
	if err == nil || !strings.Contains(err.Error(), `entry "extension/liar.bin"`) {
		t.Fatalf("err = %v, want an error naming extension/liar.bin", err)
	}
	if fi, err := os.Stat(filepath.Join(dest, "liar.bin")); err == nil && fi.Size() > 10 {
		t.Errorf("liar.bin has %d bytes on disk, more than the 10 declared", fi.Size())
	}
}

// An Extract that fails midway (after writing files) removes dest and the
// parents it created, so a retry (or extensions.Layout, which refuses a
// non-empty directory) starts clean; a parent that existed before stays,
// with whatever it held.
func TestExtractFailureRemovesWhatItCreated(t *testing.T) {
	tests := []struct {
		name string
		// before is created under the temp dir before Extract (a "/"
		// suffix makes a directory, otherwise a file).
		before []string
		dest   string
		want   []string
	}{
		{name: "existing parent", dest: "x", want: nil},
		{name: "missing parents", dest: "a/b/x", want: nil},
		{
			name:   "some parents existed",
			before: []string{"a/"},
			dest:   "a/b/c/x",
			want:   []string{"a/ -rwxr-xr-x"},
		},
		{
			name:   "existing parent with other content",
			before: []string{"layout/", "layout/other.txt"},
			dest:   "layout/x",
			want:   []string{"layout/ -rwxr-xr-x", "layout/other.txt -rw-r--r--"},
		},
	}
	b := liarVSIX(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			top := t.TempDir()
			for _, p := range tc.before {
				full := filepath.Join(top, p)
				var err error
				if strings.HasSuffix(p, "/") {
					err = os.Mkdir(full, 0o755)
				} else {
					err = os.WriteFile(full, []byte("keep"), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			dest := filepath.Join(top, filepath.FromSlash(tc.dest))
			err := extract(b, dest, vsix.Limits{})
			if err == nil || !strings.Contains(err.Error(), `entry "extension/liar.bin"`) {
				t.Fatalf("err = %v, want an error naming extension/liar.bin", err)
			}
			if diff := cmp.Diff(tc.want, tree(t, top)); diff != "" {
				t.Errorf("left behind after a failed Extract (-want +got):\n%s", diff)
			}
			// The retry with a good archive succeeds into the same place.
			if err := extract(readFixture(t, universalFixture), dest, vsix.Limits{}); err != nil {
				t.Fatalf("retry: %v", err)
			}
		})
	}
}

func TestExtractDestExists(t *testing.T) {
	dest := t.TempDir()
	if err := os.WriteFile(filepath.Join(dest, "keep"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := extract(readFixture(t, universalFixture), dest, vsix.Limits{})
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("err = %v, want already exists", err)
	}
	if diff := cmp.Diff([]string{"keep -rw-r--r--"}, tree(t, dest)); diff != "" {
		t.Errorf("dest changed (-want +got):\n%s", diff)
	}
}

// A link already at dest is not followed.
func TestExtractDestIsLink(t *testing.T) {
	parent := t.TempDir()
	target := filepath.Join(parent, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(parent, "dest")
	if err := os.Symlink(target, dest); err != nil {
		t.Fatal(err)
	}
	if err := extract(readFixture(t, universalFixture), dest, vsix.Limits{}); err == nil {
		t.Fatal("extracted through a symbolic link")
	}
	if got := tree(t, target); len(got) != 0 {
		t.Errorf("wrote through the link: %q", got)
	}
}
