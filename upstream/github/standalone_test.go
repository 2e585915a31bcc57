package github

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/upstream/github/githubtest"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// serve starts a fake GitHub serving python-build-standalone release
// 20250808: 150 assets of other targets first (as in a real release, where
// the wanted ones are far down the list, past the first page), then assets
// (sizes 1000, 1001, ... unless set), then SHA256SUMS with body sums unless
// sums is "".
func serve(t *testing.T, assets []githubtest.Asset, sums string, opts ...githubtest.Option) *httptest.Server {
	t.Helper()
	all := append([]githubtest.Asset(nil), assets...)
	if sums != "" {
		all = append(all, githubtest.SumsAsset(sums))
	}
	for i := range all {
		if all[i].Size == 0 {
			all[i].Size = int64(1000 + i)
		}
	}
	srv := httptest.NewServer(githubtest.New([]githubtest.Release{{Repository: st.Repository, TagName: "20250808", Padding: 150, Assets: all}}, opts...))
	t.Cleanup(srv.Close)
	return srv
}

func sum(c byte) string { return strings.Repeat(string(c), 64) }

func pbs(version, arch, flavor string) string {
	return "cpython-" + version + "+20250808-" + arch + "-unknown-linux-gnu-" + flavor + ".tar.gz"
}

// A release as python-build-standalone publishes it: several patches of a
// minor (only some with both architectures), other flavours and targets,
// a pre-release CPython.
func realisticAssets() []githubtest.Asset {
	return []githubtest.Asset{
		{Name: pbs("3.12.11", "x86_64", "install_only"), SHA256: sum('1'), Digest: true},
		{Name: pbs("3.12.11", "aarch64", "install_only"), SHA256: sum('2'), Digest: true},
		{Name: pbs("3.12.11", "x86_64", "install_only_stripped"), SHA256: sum('3')},
		{Name: pbs("3.12.11", "aarch64", "install_only_stripped"), SHA256: sum('4')},
		{Name: pbs("3.12.12", "x86_64", "install_only"), SHA256: sum('5')}, // no aarch64: not a candidate
		{Name: pbs("3.11.13", "x86_64", "install_only"), SHA256: sum('6')},
		{Name: pbs("3.11.13", "aarch64", "install_only"), SHA256: sum('7')},
		{Name: pbs("3.11.9", "x86_64", "install_only"), SHA256: sum('8')},
		{Name: pbs("3.11.9", "aarch64", "install_only"), SHA256: sum('9')},
		{Name: pbs("3.13.5", "x86_64", "install_only"), SHA256: sum('a')}, // above max
		{Name: pbs("3.13.5", "aarch64", "install_only"), SHA256: sum('b')},
		{Name: pbs("3.10.18", "x86_64", "install_only"), SHA256: sum('c')}, // only x86_64
		{Name: pbs("3.14.0rc1", "x86_64", "install_only"), SHA256: sum('d')},
		{Name: pbs("3.14.0rc1", "aarch64", "install_only"), SHA256: sum('e')},
		{Name: "cpython-3.12.11+20250808-x86_64-unknown-linux-musl-install_only.tar.gz", SHA256: sum('f')},
		{Name: "cpython-3.12.11+20250808-aarch64-apple-darwin-install_only.tar.gz", SHA256: sum('0')},
		{Name: "cpython-3.12.11+20250808-x86_64-unknown-linux-gnu-pgo+lto-full.tar.zst", SHA256: sum('1')},
	}
}

var st = matrix.Standalone{Repository: "astral-sh/python-build-standalone", Release: "20250808", Flavor: "install_only"}

// keep312 accepts 3.10 to 3.12.
func keep312(v string) bool { return v == "3.10" || v == "3.11" || v == "3.12" }

func TestPythonRuntimes(t *testing.T) {
	as := realisticAssets()
	srv := serve(t, as, githubtest.Sums(as))
	got, err := New(WithBaseURL(srv.URL)).PythonRuntimes(context.Background(), st, keep312)
	if err != nil {
		t.Fatal(err)
	}
	dl := srv.URL + "/astral-sh/python-build-standalone/releases/download/20250808/"
	file := func(name, s string, size int64) catalog.RuntimeFile {
		return catalog.RuntimeFile{URL: dl + strings.ReplaceAll(name, "+", "%2B"), SHA256: s, Size: size}
	}
	want := []catalog.PythonRuntime{
		{Python: "3.11", Version: "3.11.13", Repository: st.Repository, Release: "20250808", Flavor: "install_only", Files: map[string]catalog.RuntimeFile{
			"linux/amd64": file(pbs("3.11.13", "x86_64", "install_only"), sum('6'), 1005),
			"linux/arm64": file(pbs("3.11.13", "aarch64", "install_only"), sum('7'), 1006),
		}},
		{Python: "3.12", Version: "3.12.11", Repository: st.Repository, Release: "20250808", Flavor: "install_only", Files: map[string]catalog.RuntimeFile{
			"linux/amd64": file(pbs("3.12.11", "x86_64", "install_only"), sum('1'), 1000),
			"linux/arm64": file(pbs("3.12.11", "aarch64", "install_only"), sum('2'), 1001),
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// The stripped flavour picks other files.
	stripped := st
	stripped.Flavor = "install_only_stripped"
	got, err = New(WithBaseURL(srv.URL)).PythonRuntimes(context.Background(), stripped, keep312)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Version != "3.12.11" || got[0].Files["linux/arm64"].SHA256 != sum('4') {
		t.Errorf("install_only_stripped: %+v, want 3.12.11 with the stripped sums", got)
	}
}

func TestPythonRuntimesSums(t *testing.T) {
	x, a := pbs("3.12.11", "x86_64", "install_only"), pbs("3.12.11", "aarch64", "install_only")
	for _, tc := range []struct {
		name    string
		assets  []githubtest.Asset
		sums    string              // the SHA256SUMS body; "" for no SHA256SUMS asset
		opts    []githubtest.Option // faults
		want    string              // the aarch64 sum
		wantErr []string
	}{
		{name: "SHA256SUMS only (no asset digests)",
			assets: []githubtest.Asset{{Name: x, SHA256: sum('1')}, {Name: a, SHA256: sum('2')}}, sums: githubtest.Sums([]githubtest.Asset{{Name: x, SHA256: sum('1')}, {Name: a, SHA256: sum('2')}}),
			want: sum('2')},
		{name: "no SHA256SUMS: asset digests",
			assets: []githubtest.Asset{{Name: x, SHA256: sum('1'), Digest: true}, {Name: a, SHA256: sum('2'), Digest: true}},
			want:   sum('2')},
		{name: "SHA256SUMS lacks a file that has a digest",
			assets: []githubtest.Asset{{Name: x, SHA256: sum('1')}, {Name: a, SHA256: sum('2'), Digest: true}}, sums: githubtest.Sums([]githubtest.Asset{{Name: x, SHA256: sum('1')}}),
			want: sum('2')},
		{name: "SHA256SUMS lacks a file without digest",
			assets: []githubtest.Asset{{Name: x, SHA256: sum('1')}, {Name: a, SHA256: sum('2')}}, sums: githubtest.Sums([]githubtest.Asset{{Name: x, SHA256: sum('1')}}),
			wantErr: []string{"asset " + a + ": no sha256", "SHA256SUMS does not list it"}},
		{name: "neither",
			assets:  []githubtest.Asset{{Name: x, SHA256: sum('1')}, {Name: a, SHA256: sum('2')}},
			wantErr: []string{"no sha256 (the release has no SHA256SUMS asset and the asset no digest)", "/repos/astral-sh/python-build-standalone/releases/tags/20250808"}},
		{name: "SHA256SUMS and digest disagree",
			assets: []githubtest.Asset{{Name: x, SHA256: sum('1')}, {Name: a, SHA256: sum('2'), Digest: true}}, sums: githubtest.Sums([]githubtest.Asset{{Name: x, SHA256: sum('1')}, {Name: a, SHA256: sum('3')}}),
			wantErr: []string{"asset " + a, "SHA256SUMS says sha256 " + sum('3')}},
		{name: "SHA256SUMS is HTML with 200",
			assets: []githubtest.Asset{{Name: x, SHA256: sum('1'), Digest: true}, {Name: a, SHA256: sum('2'), Digest: true}}, sums: githubtest.Sums([]githubtest.Asset{{Name: x, SHA256: sum('1')}, {Name: a, SHA256: sum('2')}}),
			opts:    []githubtest.Option{githubtest.WithHTMLDownload("SHA256SUMS")},
			wantErr: []string{"/releases/download/20250808/SHA256SUMS line 1", "an HTML page"}},
		{name: "release API is HTML with 200",
			opts:    []githubtest.Option{githubtest.WithHTMLAPI()},
			wantErr: []string{"/repos/astral-sh/python-build-standalone/releases/tags/20250808"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc.assets, tc.sums, tc.opts...)
			got, err := New(WithBaseURL(srv.URL), WithHTTPClient(httpx.New(httpx.WithRetries(0)))).PythonRuntimes(context.Background(), st, keep312)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("got %+v, want an error containing %q", got, tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Files["linux/arm64"].SHA256 != tc.want || got[0].Files["linux/amd64"].SHA256 != sum('1') {
				t.Errorf("got %+v, want 3.12.11 with aarch64 sum %s", got, tc.want)
			}
		})
	}
}

func TestPythonRuntimesReleaseFaults(t *testing.T) {
	// A release lacking aarch64 tarballs gives no runtime (Refresh then
	// fails naming the release); an unknown tag fails naming the URL.
	x := pbs("3.12.11", "x86_64", "install_only")
	srv := serve(t, []githubtest.Asset{{Name: x, SHA256: sum('1'), Digest: true}}, "")
	c := New(WithBaseURL(srv.URL), WithHTTPClient(httpx.New(httpx.WithRetries(0))))
	got, err := c.PythonRuntimes(context.Background(), st, keep312)
	if err != nil || len(got) != 0 {
		t.Errorf("release without aarch64: %+v, %v; want no runtime and no error", got, err)
	}
	other := st
	other.Release = "20990101"
	_, err = c.PythonRuntimes(context.Background(), other, keep312)
	if err == nil || !strings.Contains(err.Error(), srv.URL+"/repos/astral-sh/python-build-standalone/releases/tags/20990101") || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown release: %v, want an error naming the URL and 404", err)
	}
}
