package extensions_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/gallerytest"
	"github.com/imagectl/imagectl/imagespec"
)

// A Layout that fails after extracting some extensions removes what it
// wrote, so the next run (which refuses a non-empty directory) succeeds; a
// directory that existed before stays, and so does the rest of its parent.
func TestLayoutFailureLeavesNothingBehind(t *testing.T) {
	builds := loadBuilds(t)
	f := gallerytest.New(builds)
	t.Cleanup(f.Close)
	fe, c := newFetcher(t, f, t.TempDir())
	good := testSet(t, builds, true)
	if _, err := fe.FetchExtensions(context.Background(), good, platforms, testVSCode); err != nil {
		t.Fatal(err)
	}
	// The three cached extensions lay out, then the fourth is not cached.
	missing := good[1]
	missing.Version = "2099.1.0"
	bad := append(append([]imagespec.Extension(nil), good...), missing)
	ts := time.Unix(1700000000, 0)
	layout := func(set []imagespec.Extension, dir string) error {
		_, err := extensions.Layout(context.Background(), c, set, extensions.LayoutOptions{Dir: dir, Platform: "linux/amd64", VSCode: testVSCode, Time: &ts})
		return err
	}
	for _, tc := range []struct {
		name      string
		preExists bool
	}{
		{"dir did not exist", false},
		{"dir existed empty", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			if err := os.WriteFile(filepath.Join(parent, "sibling"), []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(parent, "ext")
			if tc.preExists {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			err := layout(bad, dir)
			if err == nil || !strings.Contains(err.Error(), "ms-python.debugpy@2099.1.0") {
				t.Fatalf("err = %v, want an error naming ms-python.debugpy@2099.1.0", err)
			}
			want := []string{"sibling"}
			if tc.preExists {
				want = []string{"ext", "sibling"}
			}
			if diff := cmp.Diff(want, listAll(t, parent)); diff != "" {
				t.Errorf("left behind after a failed Layout (-want +got):\n%s", diff)
			}
			if _, err := extensions.Layout(context.Background(), c, good, extensions.LayoutOptions{Dir: dir, Platform: "linux/amd64", VSCode: testVSCode, Time: &ts}); err != nil {
				t.Fatalf("second run: %v", err)
			}
		})
	}
}

// listAll lists every path under dir, relative and slash-separated, sorted.
func listAll(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(dir, p); rel != "." {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
