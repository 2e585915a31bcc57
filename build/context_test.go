package build

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tree lists every entry under root as "path mode-type [content]".
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		s := filepath.ToSlash(rel) + " " + d.Type().String()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s += " " + string(b)
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// copyTree is move's fallback across file systems: the same tree of
// directories and regular files, nothing else.
func TestCopyTree(t *testing.T) {
	src := filepath.Join(t.TempDir(), "ext")
	for p, body := range map[string]string{
		"package.json":           `{"name":"x"}`,
		"out/main.js":            "main",
		"bin/tool":               "#!/bin/sh\n",
		"node_modules/a/b/c.txt": "deep",
	} {
		p = filepath.Join(src, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(src, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(src, "bin/tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "a", "ext")
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tree(t, src), tree(t, dst)); diff != "" {
		t.Errorf("copy (-src +dst):\n%s", diff)
	}
	// An executable stays executable, as when os.Rename moves it, so
	// normalizeTree gives it 0755 whichever way it was moved.
	if fi, err := os.Stat(filepath.Join(dst, "bin/tool")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("bin/tool copied without its execute bit: %v %v", fi.Mode(), err)
	}

	for name, make := range map[string]func(p string) error{
		"symlink out of the tree": func(p string) error { return os.Symlink("/etc/passwd", p) },
		"symlink in the tree":     func(p string) error { return os.Symlink("package.json", p) },
		"fifo":                    func(p string) error { return syscall.Mkfifo(p, 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "ext")
			if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(src, "package.json"), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
			bad := filepath.Join(src, "sub", "bad")
			if err := make(bad); err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "ext")
			err := copyTree(src, dst)
			if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "not a regular file or directory") {
				t.Fatalf("copyTree = %v, want an error naming %s as not a regular file or directory", err, bad)
			}
			if _, err := os.Lstat(filepath.Join(dst, "sub", "bad")); err == nil {
				t.Error("the refused entry was copied")
			}
		})
	}
}
