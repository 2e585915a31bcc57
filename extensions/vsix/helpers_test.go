package vsix_test

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The committed fixtures, built with the real @vscode/vsce by
// extensions/testdata/mkvsix.sh.
const (
	universalFixture = "ms-python.debugpy-2025.10.0.vsix"
	x64Fixture       = "ms-python.debugpy-2025.10.0@linux-x64.vsix"
	arm64Fixture     = "ms-python.debugpy-2025.10.0@linux-arm64.vsix"
	fixtureID        = "ms-python.debugpy"
	fixtureVersion   = "2025.10.0"
	// fixtureEngine is engines.vscode in the fixtures' package.json.
	fixtureEngine = "^1.92.0"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "vsix", name))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return b
}

// entry is one zip entry to add to a test archive.
type entry struct {
	name string
	body []byte
	// mode, when set, is applied with SetMode (Unix creator, mode in the
	// high 16 bits of the external attributes).
	mode fs.FileMode
	// rawAttrs, when set, replaces the external attributes as written by a
	// tool that does not mark itself as Unix (creator version 0, MS-DOS).
	rawAttrs uint32
	// store writes the entry uncompressed (default: deflate).
	store bool
}

// rewrite copies the zip src entry by entry, replacing the bodies of the
// entries named in replace, dropping those named in drop, and appending add.
// Used to make a malicious or inconsistent VSIX that differs from a real one
// in exactly one way.
func rewrite(t *testing.T, src []byte, replace map[string][]byte, drop []string, add ...entry) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	dropped := map[string]bool{}
	for _, d := range drop {
		dropped[d] = true
	}
	for _, f := range zr.File {
		if dropped[f.Name] {
			continue
		}
		if body, ok := replace[f.Name]; ok {
			fh := f.FileHeader
			w, err := zw.CreateHeader(&zip.FileHeader{Name: fh.Name, Method: zip.Deflate, Modified: fh.Modified})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(body); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := zw.Copy(f); err != nil {
			t.Fatal(err)
		}
	}
	addEntries(t, zw, add)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func addEntries(t *testing.T, zw *zip.Writer, add []entry) {
	t.Helper()
	for _, e := range add {
		fh := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if e.store {
			fh.Method = zip.Store
		}
		if e.mode != 0 {
			fh.SetMode(e.mode)
		}
		if e.rawAttrs != 0 {
			fh.CreatorVersion = 0
			fh.ExternalAttrs = e.rawAttrs
		}
		w, err := zw.CreateHeader(fh)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
}

// replaceIn returns the body of name in the zip src with old replaced by new
// (exactly once, or the test fails).
func replaceIn(t *testing.T, src []byte, name, old, new string) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name != name {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := b.ReadFrom(rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		if n := strings.Count(b.String(), old); n != 1 {
			t.Fatalf("%s: %q occurs %d times, want 1", name, old, n)
		}
		return map[string][]byte{name: []byte(strings.Replace(b.String(), old, new, 1))}
	}
	t.Fatalf("no %s in the zip", name)
	return nil
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tree lists every path under dir (directories with a trailing slash), with
// its permission bits, sorted.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			rel += "/"
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			rel += " -> link"
		}
		out = append(out, rel+" "+fi.Mode().Perm().String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}
