package extensions_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/gallerytest"
	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/testutil"
)

// fetchedCache fetches the locked test set into a fresh cache.
func fetchedCache(t *testing.T) (*gallerytest.Fake, func(dir, platform string) ([]extensions.Installed, error)) {
	t.Helper()
	fx := fetchTestSet(t, true)
	ts := time.Unix(1700000000, 0)
	return fx.gallery, func(dir, platform string) ([]extensions.Installed, error) {
		return extensions.Layout(context.Background(), fx.cache, fx.set, extensions.LayoutOptions{Dir: dir, Platform: platform, VSCode: testVSCode, Time: &ts})
	}
}

type fileState struct {
	Mode  fs.FileMode
	MTime int64
	Body  string
}

func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fileState{Mode: fi.Mode(), MTime: fi.ModTime().Unix()}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			st.Body = string(b)
		}
		out[rel] = st
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLayoutPerPlatform(t *testing.T) {
	f, layout := fetchedCache(t)
	f.ResetStats()
	for _, tc := range []struct{ platform, pyTarget string }{
		{"linux/amd64", "linux-x64"},
		{"linux/arm64", "linux-arm64"},
	} {
		t.Run(tc.platform, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ext")
			inst, err := layout(dir, tc.platform)
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			for _, i := range inst {
				order = append(order, i.Dir)
			}
			// Install order is kept: dependencies first.
			wantOrder := []string{"ms-python.python-2025.6.1", "ms-python.debugpy-2025.10.0", "anyscalecompute.ray-distributed-debugger-0.1.4"}
			if diff := cmp.Diff(wantOrder, order); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			// The platform build that landed is this platform's, never the other's.
			for d, want := range map[string]string{
				"ms-python.python-2025.6.1":                      tc.pyTarget,
				"ms-python.debugpy-2025.10.0":                    "universal",
				"anyscalecompute.ray-distributed-debugger-0.1.4": "universal",
			} {
				b, err := os.ReadFile(filepath.Join(dir, d, "platform.txt"))
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.TrimSpace(string(b)); got != want {
					t.Errorf("%s/platform.txt = %q, want %q", d, got, want)
				}
				for _, must := range []string{"package.json", ".vsixmanifest", "out/extension.js"} {
					if _, err := os.Stat(filepath.Join(dir, d, must)); err != nil {
						t.Errorf("%s: %v", d, err)
					}
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, "extensions.json"))
			if err != nil {
				t.Fatal(err)
			}
			var ej []struct {
				Identifier struct{ ID string } `json:"identifier"`
				Version    string              `json:"version"`
				Location   map[string]any      `json:"location"`
				Rel        string              `json:"relativeLocation"`
				Metadata   map[string]any      `json:"metadata"`
			}
			if err := json.Unmarshal(b, &ej); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, e := range ej {
				ids = append(ids, e.Identifier.ID+"@"+e.Version)
				if e.Location["path"] != "/config/extensions/"+e.Rel || e.Location["scheme"] != "file" {
					t.Errorf("location %v for %s", e.Location, e.Rel)
				}
				if e.Metadata["installedTimestamp"] != float64(1700000000000) || e.Metadata["source"] != "vsix" {
					t.Errorf("metadata %v", e.Metadata)
				}
				if e.Identifier.ID == "ms-python.python" && e.Metadata["targetPlatform"] != tc.pyTarget {
					t.Errorf("python targetPlatform %v, want %s", e.Metadata["targetPlatform"], tc.pyTarget)
				}
			}
			if !sort.StringsAreSorted(ids) || len(ids) != 3 {
				t.Errorf("extensions.json ids %v: want 3, sorted", ids)
			}
			// Reproducible: a second layout is identical, byte for byte and time for time.
			dir2 := filepath.Join(t.TempDir(), "ext")
			if _, err := layout(dir2, tc.platform); err != nil {
				t.Fatal(err)
			}
			s1, s2 := snapshot(t, dir), snapshot(t, dir2)
			if diff := cmp.Diff(s1, s2); diff != "" {
				t.Errorf("second layout differs:\n%s", diff)
			}
			for p, st := range s1 {
				if st.MTime != 1700000000 {
					t.Errorf("%s mtime %d, want 1700000000", p, st.MTime)
				}
			}
		})
	}
	if s := f.Stats(); s.Requests != 0 {
		t.Errorf("layout made %d requests; it must read the cache only", s.Requests)
	}
}

func TestWriteSettings(t *testing.T) {
	p := filepath.Join(t.TempDir(), "User", "settings.json")
	settings := map[string]any{
		"ray-distributed-debugger.clusterDashboards": []any{map[string]any{"host": "127.0.0.1:8265", "localRoot": "/tmp/ray/session_latest/runtime_resources"}},
		"a.setting": true,
	}
	if err := extensions.WriteSettings(p, settings, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	want := `{
  "a.setting": true,
  "ray-distributed-debugger.clusterDashboards": [
    {
      "host": "127.0.0.1:8265",
      "localRoot": "/tmp/ray/session_latest/runtime_resources"
    }
  ]
}
`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("settings.json (-want +got):\n%s", diff)
	}
}

// codeServerEntry finds code-server's entry.js installed by
// hack/deps.d/20-node.sh, or env IMAGECTL_CODE_SERVER_ENTRY.
func codeServerEntry(t *testing.T) string {
	t.Helper()
	missing := func(what string) string {
		testutil.SkipOrFail(t, "%s (install it with: bash hack/deps.d/20-node.sh)", what)
		return ""
	}
	if _, err := exec.LookPath("node"); err != nil {
		return missing("node not found on PATH")
	}
	p := os.Getenv("IMAGECTL_CODE_SERVER_ENTRY")
	if p == "" {
		p = filepath.Join(testutil.CacheDir(), "node", "code-server-4.100.3", "node_modules", "code-server", "out", "node", "entry.js")
	}
	if _, err := os.Stat(p); err != nil {
		return missing("code-server not found at " + p)
	}
	return p
}

// TestRealCodeServerLoadsLayout runs the real code-server (npm) on each
// platform's layout and compares --list-extensions --show-versions with the
// expected set. extensions.json records /config/extensions paths, as in the
// image, so this also proves code-server resolves relativeLocation against
// --extensions-dir.
func TestRealCodeServerLoadsLayout(t *testing.T) {
	entry := codeServerEntry(t)
	_, layout := fetchedCache(t)
	want := "anyscalecompute.ray-distributed-debugger@0.1.4\nms-python.debugpy@2025.10.0\nms-python.python@2025.6.1\n"
	for _, p := range platforms {
		t.Run(p, func(t *testing.T) {
			tmp := t.TempDir()
			dir := filepath.Join(tmp, "ext")
			if _, err := layout(dir, p); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cfg := filepath.Join(tmp, "config.yaml")
			if err := os.WriteFile(cfg, []byte("bind-addr: 127.0.0.1:0\nauth: none\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(ctx, "node", entry, "--config", cfg, "--extensions-dir", dir, "--user-data-dir", filepath.Join(tmp, "data"),
				"--list-extensions", "--show-versions")
			cmd.Env = append(os.Environ(), "EXTENSIONS_GALLERY={}", "HOME="+filepath.Join(tmp, "home"), "XDG_CONFIG_HOME="+filepath.Join(tmp, "home", ".config"))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("code-server: %v\nstderr:\n%s", err, stderr.String())
			}
			if diff := cmp.Diff(want, string(out)); diff != "" {
				t.Errorf("code-server --list-extensions (-want +got):\n%s\nstderr:\n%s", diff, stderr.String())
			}
		})
	}
}

// ValidateFiles checks each distinct file once (four files for two
// platforms: the universal ones serve both), and Layout given them lays
// out from the validated files without validating again: with a VS Code
// version no extension accepts, Layout alone refuses, Layout with the
// files validated for the real version does not look again, and the two
// platforms' layouts equal those Layout makes by itself.
func TestLayoutFromValidatedFiles(t *testing.T) {
	builds := loadBuilds(t)
	f := gallerytest.New(builds)
	t.Cleanup(f.Close)
	fe, c := newFetcher(t, f, t.TempDir())
	set := testSet(t, builds, true)
	ctx := context.Background()
	if _, err := fe.FetchExtensions(ctx, set, platforms, testVSCode); err != nil {
		t.Fatal(err)
	}
	files, err := extensions.ValidateFiles(ctx, c, set, platforms, testVSCode, vsix.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k, vf := range files {
		keys = append(keys, k.String())
		if vf.Info.Version != k.Version || vf.Entry.SHA256 == "" {
			t.Errorf("%s: validated %+v", k, vf)
		}
	}
	sort.Strings(keys)
	want := []string{
		"anyscalecompute.ray-distributed-debugger@0.1.4 (universal)",
		"ms-python.debugpy@2025.10.0 (universal)",
		"ms-python.python@2025.6.1 (linux-arm64)",
		"ms-python.python@2025.6.1 (linux-x64)",
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("validated files (-want +got):\n%s", diff)
	}
	ts := time.Unix(1700000000, 0)
	for _, p := range platforms {
		opts := extensions.LayoutOptions{Dir: filepath.Join(t.TempDir(), "x"), Platform: p, VSCode: "1.0.0", Time: &ts}
		if _, err := extensions.Layout(ctx, c, set, opts); err == nil || !strings.Contains(err.Error(), "not compatible with Code 1.0.0") {
			t.Fatalf("Layout validating for Code 1.0.0: %v, want the engine refused", err)
		}
		opts.Files = files
		if _, err := extensions.Layout(ctx, c, set, opts); err != nil {
			t.Fatalf("Layout from validated files: %v", err)
		}
		self := extensions.LayoutOptions{Dir: filepath.Join(t.TempDir(), "y"), Platform: p, VSCode: testVSCode, Time: &ts}
		if _, err := extensions.Layout(ctx, c, set, self); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(snapshot(t, self.Dir), snapshot(t, opts.Dir)); diff != "" {
			t.Errorf("%s: layout from validated files differs (-self +files):\n%s", p, diff)
		}
	}
	// A file the validated set lacks, or pinned to another digest, is refused.
	other := testSet(t, builds, true)
	other[0].Files["linux/amd64"] = imagespec.File{TargetPlatform: "linux-x64", SHA256: strings.Repeat("0", 64)}
	opts := extensions.LayoutOptions{Dir: filepath.Join(t.TempDir(), "z"), Platform: "linux/amd64", Time: &ts, Files: files}
	if _, err := extensions.Layout(ctx, c, other, opts); err == nil || !strings.Contains(err.Error(), "the lock pins "+strings.Repeat("0", 64)) {
		t.Errorf("Layout of a file pinned to another digest: %v", err)
	}
}

// FetchFiles validates each distinct file once per call: a download as it
// arrives (not read again), a cached file when it is found; and Layout
// given its files validates nothing more. ValidateFiles after a Fetch, the
// pipeline's way before FetchFiles, validates every download a second
// time: the counter sees it.
func TestFetchFilesValidatesEachFileOnce(t *testing.T) {
	builds := loadBuilds(t)
	f := gallerytest.New(builds)
	t.Cleanup(f.Close)
	fe, c := newFetcher(t, f, t.TempDir())
	exts := testSet(t, builds, true)
	set := &imagespec.Set{Extensions: exts, Platforms: platforms, CodeServer: imagespec.CodeServer{VSCode: testVSCode}}
	ctx := context.Background()
	n := extensions.CountValidations(t)

	files, err := fe.FetchFiles(ctx, set)
	if err != nil {
		t.Fatal(err)
	}
	// Four distinct files for two platforms (the universal ones serve both).
	if len(files) != 4 || f.Stats().Downloads != 4 || n.Load() != 4 {
		t.Fatalf("fresh cache: %d files, %d downloads, %d validations; want 4 of each", len(files), f.Stats().Downloads, n.Load())
	}
	for k, vf := range files {
		if vf.Info.ID() != k.ID || vf.Info.Version != k.Version || vf.Info.TargetPlatform != k.TargetPlatform || vf.Entry.Key != k || vf.Entry.Path == "" {
			t.Errorf("%s: validated %+v", k, vf)
		}
	}

	// Every file cached now: none downloaded, each validated once.
	n.Store(0)
	again, err := fe.FetchFiles(ctx, set)
	if err != nil {
		t.Fatal(err)
	}
	if f.Stats().Downloads != 4 || n.Load() != 4 {
		t.Errorf("warm cache: %d downloads in all, %d validations; want no new download and 4 validations", f.Stats().Downloads, n.Load())
	}
	if diff := cmp.Diff(files, again); diff != "" {
		t.Errorf("the cached files differ from the downloaded ones (-first +again):\n%s", diff)
	}

	// Layout from the validated files validates nothing.
	n.Store(0)
	ts := time.Unix(1700000000, 0)
	for _, p := range platforms {
		opts := extensions.LayoutOptions{Dir: filepath.Join(t.TempDir(), "x"), Platform: p, VSCode: testVSCode, Time: &ts, Files: files}
		if _, err := extensions.Layout(ctx, c, exts, opts); err != nil {
			t.Fatalf("Layout %s: %v", p, err)
		}
	}
	if n.Load() != 0 {
		t.Errorf("Layout from validated files validated %d times, want 0", n.Load())
	}

	// The old way: Fetch into a fresh cache, then ValidateFiles.
	fe2, c2 := newFetcher(t, f, t.TempDir())
	n.Store(0)
	if _, err := fe2.Fetch(ctx, set); err != nil {
		t.Fatal(err)
	}
	if _, err := extensions.ValidateFiles(ctx, c2, exts, platforms, testVSCode, vsix.Limits{}); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 8 {
		t.Errorf("Fetch then ValidateFiles: %d validations, want 8 (each download twice)", n.Load())
	}
}
