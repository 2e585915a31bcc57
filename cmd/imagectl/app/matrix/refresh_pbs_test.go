package matrix_test

import (
	"crypto/sha256"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/cmd/imagectl/app/apptest"
	"github.com/imagectl/imagectl/upstream/github/githubtest"
)

// pbsReleaseOf is python-build-standalone release tag on the fake GitHub:
// install_only tarballs of each version for the arches given, and a
// SHA256SUMS listing them all.
func pbsReleaseOf(tag string, files map[string][]string) githubtest.Release {
	var assets []githubtest.Asset
	for v, arches := range files {
		for _, arch := range arches {
			n := "cpython-" + v + "+" + tag + "-" + arch + "-unknown-linux-gnu-install_only.tar.gz"
			assets = append(assets, githubtest.Asset{Name: n, Size: 100, SHA256: fmt.Sprintf("%x", sha256.Sum256([]byte(n))), Digest: true})
		}
	}
	assets = append(assets, githubtest.SumsAsset(githubtest.Sums(assets)))
	return githubtest.Release{Repository: "astral-sh/python-build-standalone", TagName: tag, PublishedAt: "2025-10-14T00:00:00Z", Padding: 120, Assets: assets}
}

// A refresh after a newer complete python-build-standalone release
// records it in catalog.json and prints the change like any other input
// change; a newer release without the set's minor for aarch64 is not
// proposed, and stderr says why.
func TestMatrixRefreshProposesNewerPythonStandalone(t *testing.T) {
	mpath, cpath := newRefreshFakes(t).writeMatrix(t)

	pinned := pbsReleaseOf("20250808", map[string][]string{"3.11.13": {"x86_64", "aarch64"}, "3.12.11": {"x86_64", "aarch64"}})
	complete := pbsReleaseOf("20251014", map[string][]string{"3.11.14": {"x86_64", "aarch64"}, "3.12.12": {"x86_64", "aarch64"}})
	// The set's Python is 3.11 (the fake Ray has no arm64 3.12 wheel):
	// without an aarch64 3.11 this release cannot serve it.
	noArm311 := pbsReleaseOf("20251120", map[string][]string{"3.11.15": {"x86_64"}, "3.12.13": {"x86_64", "aarch64"}})
	refresh := func(releases ...githubtest.Release) (string, string, *catalog.Catalog) {
		t.Helper()
		gh := httptest.NewServer(githubtest.New(releases))
		t.Cleanup(gh.Close)
		code, stdout, stderr := apptest.Run(t, "--matrix", mpath, "matrix", "refresh", "--no-python-lock", "--retries", "0", "--http-timeout", "20s", "--github-url", gh.URL)
		if code != 0 {
			t.Fatalf("matrix refresh: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		cat, err := catalog.Load(cpath)
		if err != nil {
			t.Fatal(err)
		}
		return stdout, stderr, cat
	}
	releaseOf := func(cat *catalog.Catalog) string {
		var rs []string
		for _, r := range cat.PythonRuntimes {
			rs = append(rs, r.Python+"="+r.Version+"@"+r.Release)
		}
		return strings.Join(rs, " ")
	}

	_, _, cat := refresh(pinned)
	if got, want := releaseOf(cat), "3.11=3.11.13@20250808 3.12=3.12.11@20250808"; got != want {
		t.Fatalf("first refresh locked %s, want %s", got, want)
	}

	stdout, stderr, cat := refresh(noArm311, complete, pinned)
	if got, want := releaseOf(cat), "3.11=3.11.14@20251014 3.12=3.12.12@20251014"; got != want {
		t.Errorf("refresh with newer releases locked %s, want %s", got, want)
	}
	for _, want := range []string{"python runtime 3.11: 3.11.13 (20250808) -> 3.11.14 (20251014)", "python runtime 3.12: 3.12.11 (20250808) -> 3.12.12 (20251014)", "(python-build-standalone 20251014)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("refresh stdout lacks %q:\n%s", want, stdout)
		}
	}
	if want := "note: python-build-standalone astral-sh/python-build-standalone release 20251120 not proposed: no install_only tarballs of CPython 3.11 for both linux/amd64 and linux/arm64"; !strings.Contains(stderr, want) {
		t.Errorf("refresh stderr lacks %q:\n%s", want, stderr)
	}

	// resolve uses the newer release for the set (matrix.yaml still names
	// 20250808: the oldest release a set may use).
	code, rout, rerr := apptest.Run(t, "--matrix", mpath, "matrix", "resolve", "--ray", "2.46.0", "--explain")
	if code != 0 {
		t.Fatalf("matrix resolve: exit %d\n%s", code, rerr)
	}
	if want := "python runtime 3.11.14 chosen: python-build-standalone install_only of astral-sh/python-build-standalone release 20251014"; !strings.Contains(rout, want) {
		t.Errorf("resolve --explain lacks %q:\n%s", want, rout)
	}
}
