package image

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type entry struct {
	name, link, body string
	typ              byte
	mode             int64
}

func layerOf(t *testing.T, es ...entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body))}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if e.typ == tar.TypeDir || e.typ == tar.TypeSymlink || e.typ == tar.TypeLink {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func imageOf(t *testing.T, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// tree lists root: path -> "dir", "link:target" or the file's content.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	got := map[string]string{}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			got[rel] = "link:" + l
		case fi.IsDir():
			got[rel] = "dir"
		default:
			b, _ := os.ReadFile(p)
			got[rel] = string(b)
		}
		return nil
	})
	return got
}

func TestUnpackStaysInsideAndAppliesWhiteouts(t *testing.T) {
	lower := layerOf(t,
		entry{name: "etc/", typ: tar.TypeDir, mode: 0o755},
		entry{name: "etc/passwd", typ: tar.TypeReg, body: "root:x:0:0::/root:/bin/sh\n"},
		entry{name: "etc/keep", typ: tar.TypeReg, body: "keep"},
		entry{name: "opt/", typ: tar.TypeDir, mode: 0o755},
		entry{name: "opt/old", typ: tar.TypeReg, body: "old"},
		entry{name: "root-link", typ: tar.TypeSymlink, link: "/"},
		entry{name: "up-link", typ: tar.TypeSymlink, link: "../../.."},
		// Below links of the same layer: mutate.Extract drops entries below a
		// link it emitted, and a link climbing out of the root.
		entry{name: "abs-link", typ: tar.TypeSymlink, link: "/"},
		entry{name: "abs-link/through-abs", typ: tar.TypeReg, body: "abs"},
		entry{name: "rel-link", typ: tar.TypeSymlink, link: "../../../../.."},
		entry{name: "rel-link/through-rel", typ: tar.TypeReg, body: "rel"},
	)
	upper := layerOf(t,
		entry{name: "etc/.wh.passwd", typ: tar.TypeReg},
		entry{name: "opt/.wh..wh..opq", typ: tar.TypeReg},
		entry{name: "opt/new", typ: tar.TypeReg, body: "new"},
		// Below names a lower layer made links: the upper layer's directory
		// wins (as an overlay shows it); nothing leaves the root.
		entry{name: "root-link/escaped-abs", typ: tar.TypeReg, body: "abs"},
		entry{name: "up-link/escaped-rel", typ: tar.TypeReg, body: "rel"},
		entry{name: "etc/hard", typ: tar.TypeLink, link: "etc/keep"},
	)
	root := t.TempDir()
	if err := unpack(context.Background(), imageOf(t, lower, upper), root, DefaultLimits); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"etc": "dir", "etc/keep": "keep", "etc/hard": "keep",
		"opt": "dir", "opt/new": "new",
		"root-link": "dir", "root-link/escaped-abs": "abs", "up-link": "dir", "up-link/escaped-rel": "rel",
		"abs-link": "link:/", "rel-link": "dir", "rel-link/through-rel": "rel",
	}
	if diff := cmp.Diff(want, tree(t, root)); diff != "" {
		t.Errorf("unpacked tree (-want +got):\n%s", diff)
	}
	for _, p := range []string{"/escaped-abs", "/through-abs", filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(root))), "escaped-rel"), filepath.Join(filepath.Dir(root), "through-rel")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written outside the root filesystem", p)
		}
	}
}

func TestUnpackRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		layer []entry
		lim   Limits
		want  string
	}{
		{"dot-dot", []entry{{name: "a/../../outside", typ: tar.TypeReg, body: "x"}}, DefaultLimits, "unsafe tar path"},
		{"too big", []entry{{name: "big", typ: tar.TypeReg, body: strings.Repeat("x", 100)}}, Limits{MaxBytes: 10}, "larger than 10 bytes"},
		{"too many", []entry{{name: "a", typ: tar.TypeReg}, {name: "b", typ: tar.TypeReg}, {name: "c", typ: tar.TypeReg}}, Limits{MaxEntries: 2}, "more than 2 entries"},
		{"hard link out", []entry{{name: "h", typ: tar.TypeLink, link: "../../etc/passwd"}}, DefaultLimits, ""},
		{"hard link missing", []entry{{name: "h", typ: tar.TypeLink, link: "nowhere"}}, DefaultLimits, "the target is not in the image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			err := unpack(context.Background(), imageOf(t, layerOf(t, tc.layer...)), root, tc.lim)
			if tc.want == "" {
				// mutate.Extract drops links climbing out; nothing may be written.
				if _, serr := os.Lstat(filepath.Join(root, "h")); serr == nil {
					t.Errorf("an escaping hard link was created (err %v)", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("unpack error = %v, want %q", err, tc.want)
			}
		})
	}
}
