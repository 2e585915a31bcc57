package catalog_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/upstream/github"
	"github.com/imagectl/imagectl/upstream/github/githubtest"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// pbsRelease is a python-build-standalone release on the fake GitHub: for
// each CPython version, install_only tarballs of the arches given (with
// API digests, as GitHub reports them since mid-2025), 150 assets of other
// targets first, and a SHA256SUMS listing every tarball except unlisted.
func pbsRelease(tag string, files map[string][]string, unlisted ...string) githubtest.Release {
	var assets []githubtest.Asset
	for _, v := range slices.Sorted(func(yield func(string) bool) {
		for v := range files {
			if !yield(v) {
				return
			}
		}
	}) {
		for _, arch := range files[v] {
			n := fmt.Sprintf("cpython-%s+%s-%s-unknown-linux-gnu-install_only.tar.gz", v, tag, arch)
			assets = append(assets, githubtest.Asset{Name: n, Size: 1, SHA256: githubtest.SHA256([]byte(n)), Digest: true})
		}
	}
	var listed []githubtest.Asset
	for _, a := range assets {
		if !slices.Contains(unlisted, a.Name) {
			listed = append(listed, a)
		}
	}
	assets = append(assets, githubtest.SumsAsset(githubtest.Sums(listed)))
	return githubtest.Release{Repository: "astral-sh/python-build-standalone", TagName: tag, PublishedAt: "2025-08-08T00:00:00Z", Padding: 150, Assets: assets}
}

var bothArches = []string{"x86_64", "aarch64"}

// Refresh locks the newest release after build.standalone.release that has
// every CPython minor the sets use for both architectures, checked against
// its SHA256SUMS, and says why each newer one was not proposed.
func TestRefreshProposesNewerPythonRuntimes(t *testing.T) {
	pypiSrv := httptest.NewServer(newFakePyPI())
	defer pypiSrv.Close()
	pinned := pbsRelease("20250808", map[string][]string{"3.11.13": bothArches, "3.12.11": bothArches})
	complete := pbsRelease("20251014", map[string][]string{"3.11.14": bothArches, "3.12.12": bothArches, "3.12.11": bothArches})
	noArm := pbsRelease("20251120", map[string][]string{"3.11.14": bothArches, "3.12.12": {"x86_64"}, "3.12.11": {"aarch64"}})
	noMinor := pbsRelease("20251031", map[string][]string{"3.11.14": bothArches, "3.13.9": bothArches})
	unlisted := pbsRelease("20251020", map[string][]string{"3.11.14": bothArches, "3.12.12": bothArches},
		"cpython-3.12.12+20251020-aarch64-unknown-linux-gnu-install_only.tar.gz")
	badSums := pbsRelease("20251101", map[string][]string{"3.11.14": bothArches, "3.12.12": bothArches})
	badSums.Assets[len(badSums.Assets)-1] = githubtest.SumsAsset("this is not a SHA256SUMS file\n")
	for _, tc := range []struct {
		name     string
		releases []githubtest.Release // newest first, as GitHub lists them
		minors   []string             // the sets' minors; nil: no PythonMinors
		want     string               // the release locked
		// wantVersions are the runtimes locked.
		wantVersions []string
		wantNotes    []string
	}{
		{name: "the newest complete release", minors: []string{"3.12"},
			releases:     []githubtest.Release{noArm, noMinor, unlisted, complete, pinned},
			want:         "20251014",
			wantVersions: []string{"3.11.14", "3.12.12"},
			wantNotes: []string{
				"release 20251120 not proposed: no install_only tarballs of CPython 3.12 for both linux/amd64 and linux/arm64",
				"release 20251031 not proposed: no install_only tarballs of CPython 3.12 for both",
				"release 20251020 not proposed:", "cpython-3.12.12+20251020-aarch64-unknown-linux-gnu-install_only.tar.gz", "SHA256SUMS does not list it",
			}},
		{name: "a newer release lacking a minor the sets use", minors: []string{"3.11", "3.12"},
			releases:     []githubtest.Release{noMinor, pinned},
			want:         "20250808",
			wantVersions: []string{"3.11.13", "3.12.11"},
			wantNotes:    []string{"release 20251031 not proposed: no install_only tarballs of CPython 3.12 for both"}},
		{name: "SHA256SUMS lacking an asset refuses the release", minors: []string{"3.12"},
			releases:     []githubtest.Release{unlisted, pinned},
			want:         "20250808",
			wantVersions: []string{"3.11.13", "3.12.11"},
			wantNotes:    []string{"release 20251020 not proposed:", "does not list it", "not checked against SHA256SUMS"}},
		{name: "without PythonMinors, every minor of the pinned release",
			releases:     []githubtest.Release{noMinor, complete, pinned},
			want:         "20251014",
			wantVersions: []string{"3.11.14", "3.12.12"},
			wantNotes:    []string{"release 20251031 not proposed: no install_only tarballs of CPython 3.12 for both"}},
		{name: "a newer release whose SHA256SUMS cannot be read is not proposed", minors: []string{"3.12"},
			releases:     []githubtest.Release{badSums, pinned},
			want:         "20250808",
			wantVersions: []string{"3.11.13", "3.12.11"},
			wantNotes:    []string{"release 20251101 not proposed:"}},
		{name: "nothing newer", minors: []string{"3.12"},
			releases:     []githubtest.Release{pinned},
			want:         "20250808",
			wantVersions: []string{"3.11.13", "3.12.11"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := httptest.NewServer(githubtest.New(tc.releases))
			defer gh.Close()
			cfg := mustMatrix(t)
			cfg.Components.Python.Min, cfg.Components.Python.Max = "3.11", "3.12"
			src := sources(pypiSrv.URL)
			src.PythonRuntimes = github.New(github.WithBaseURL(gh.URL), github.WithHTTPClient(httpx.New(httpx.WithRetries(0))))
			var notes bytes.Buffer
			src.Notes = &notes
			var gotCatalog *catalog.Catalog
			if tc.minors != nil {
				src.PythonMinors = func(c *catalog.Catalog) ([]string, error) {
					gotCatalog = c
					return tc.minors, nil
				}
			}
			c, err := catalog.Refresh(context.Background(), cfg, src)
			if err != nil {
				t.Fatal(err)
			}
			if tc.minors != nil && (gotCatalog == nil || len(gotCatalog.Ray) == 0) {
				t.Errorf("PythonMinors was not given the refreshed catalog (with its Ray releases)")
			}
			var got []string
			for _, r := range c.PythonRuntimes {
				if r.Release != tc.want {
					t.Errorf("runtime %s of release %s, want release %s", r.Version, r.Release, tc.want)
				}
				amd := r.Files["linux/amd64"]
				name := fmt.Sprintf("cpython-%s+%s-x86_64-unknown-linux-gnu-install_only.tar.gz", r.Version, tc.want)
				if want := githubtest.DownloadURL(gh.URL, "astral-sh/python-build-standalone", tc.want, name); amd.URL != want || amd.SHA256 != githubtest.SHA256([]byte(name)) {
					t.Errorf("runtime %s linux/amd64 = %+v, want %s with its SHA256SUMS sum", r.Version, amd, want)
				}
				got = append(got, r.Version)
			}
			if diff := cmp.Diff(tc.wantVersions, got); diff != "" {
				t.Errorf("runtimes (-want +got):\n%s", diff)
			}
			for _, w := range tc.wantNotes {
				if !strings.Contains(notes.String(), w) {
					t.Errorf("notes %q lack %q", notes.String(), w)
				}
			}
			if len(tc.wantNotes) == 0 && notes.Len() > 0 {
				t.Errorf("unexpected notes: %s", notes.String())
			}
		})
	}
}
