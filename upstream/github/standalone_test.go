package github

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// fakeRelease serves GET /repos/astral-sh/python-build-standalone/releases/tags/{tag}
// in the GitHub API's shape and the assets' browser_download_url.
type fakeRelease struct {
	tag    string
	assets []fakeAsset
	// sums is the SHA256SUMS body; "" serves no SHA256SUMS asset.
	sums        string
	sumsHTML    bool // SHA256SUMS answers an HTML page with 200
	releaseHTML bool // the release API answers an HTML page with 200
}

type fakeAsset struct {
	name, sum string
	digest    bool // the API gives "digest": "sha256:<sum>"
}

func (f *fakeRelease) server(t *testing.T) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dl := "/astral-sh/python-build-standalone/releases/download/" + f.tag + "/"
		switch {
		case r.URL.Path == "/repos/astral-sh/python-build-standalone/releases/tags/"+f.tag:
			if f.releaseHTML {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, "<!DOCTYPE html><html><body>Sign in</body></html>")
				return
			}
			// Like GitHub, the release embeds a list of assets; it is cut
			// short here, so a client must page through the assets endpoint.
			rel := struct {
				URL     string      `json:"url"`
				ID      int         `json:"id"`
				TagName string      `json:"tag_name"`
				Name    string      `json:"name"`
				Draft   bool        `json:"draft"`
				Assets  []fakeJSONA `json:"assets"`
			}{URL: srv.URL + "/repos/astral-sh/python-build-standalone/releases/1", ID: 1, TagName: f.tag, Name: f.tag}
			all := f.listing(srv.URL)
			rel.Assets = all[:min(3, len(all))]
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			json.NewEncoder(w).Encode(rel)
		case r.URL.Path == "/repos/astral-sh/python-build-standalone/releases/1/assets":
			if f.releaseHTML {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, "<!DOCTYPE html><html><body>Sign in</body></html>")
				return
			}
			perPage, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
			page, _ := strconv.Atoi(r.URL.Query().Get("page"))
			if perPage <= 0 || perPage > 100 {
				perPage = 30 // GitHub's default
			}
			if page <= 0 {
				page = 1
			}
			all := f.listing(srv.URL)
			lo, hi := min((page-1)*perPage, len(all)), min(page*perPage, len(all))
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			json.NewEncoder(w).Encode(all[lo:hi])
		case r.URL.Path == dl+"SHA256SUMS":
			if f.sumsHTML {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, "<html><body>rate limited</body></html>")
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			fmt.Fprint(w, f.sums)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// fakeJSONA is one asset in the GitHub API's shape.
type fakeJSONA struct {
	URL                string `json:"url"`
	ID                 int    `json:"id"`
	Name               string `json:"name"`
	ContentType        string `json:"content_type"`
	State              string `json:"state"`
	Size               int64  `json:"size"`
	Digest             any    `json:"digest"`
	BrowserDownloadURL string `json:"browser_download_url"`
}

// listing is every asset of the release in API order: 150 assets of other
// targets first (as in a real release, where the wanted ones are far down
// the list), then f.assets, then SHA256SUMS.
func (f *fakeRelease) listing(base string) []fakeJSONA {
	dl := "/astral-sh/python-build-standalone/releases/download/" + f.tag + "/"
	const padding = 150
	var out []fakeJSONA
	add := func(id int, a fakeAsset, size int64) {
		var d any // null on releases from before GitHub computed digests
		if a.digest {
			d = "sha256:" + a.sum
		}
		out = append(out, fakeJSONA{URL: fmt.Sprintf("%s/repos/astral-sh/python-build-standalone/releases/assets/%d", base, id), ID: id,
			Name: a.name, ContentType: "application/octet-stream", State: "uploaded", Size: size, Digest: d,
			BrowserDownloadURL: base + dl + strings.ReplaceAll(a.name, "+", "%2B")})
	}
	for i := range padding {
		add(10000+i, fakeAsset{name: fmt.Sprintf("cpython-3.9.%d+%s-x86_64-pc-windows-msvc-shared-install_only.tar.gz", i, f.tag)}, 1)
	}
	all := append([]fakeAsset(nil), f.assets...)
	if f.sums != "" || f.sumsHTML {
		all = append(all, fakeAsset{name: "SHA256SUMS"})
	}
	for i, a := range all {
		add(i, a, int64(1000+i))
	}
	return out
}

func sum(c byte) string { return strings.Repeat(string(c), 64) }

func pbs(version, arch, flavor string) string {
	return "cpython-" + version + "+20250808-" + arch + "-unknown-linux-gnu-" + flavor + ".tar.gz"
}

func sumsOf(as []fakeAsset, skip string) string {
	var b strings.Builder
	for _, a := range as {
		if a.name != skip {
			fmt.Fprintf(&b, "%s  %s\n", a.sum, a.name)
		}
	}
	return b.String()
}

// A release as python-build-standalone publishes it: several patches of a
// minor (only some with both architectures), other flavours and targets,
// a pre-release CPython.
func realisticAssets() []fakeAsset {
	return []fakeAsset{
		{name: pbs("3.12.11", "x86_64", "install_only"), sum: sum('1'), digest: true},
		{name: pbs("3.12.11", "aarch64", "install_only"), sum: sum('2'), digest: true},
		{name: pbs("3.12.11", "x86_64", "install_only_stripped"), sum: sum('3')},
		{name: pbs("3.12.11", "aarch64", "install_only_stripped"), sum: sum('4')},
		{name: pbs("3.12.12", "x86_64", "install_only"), sum: sum('5')}, // no aarch64: not a candidate
		{name: pbs("3.11.13", "x86_64", "install_only"), sum: sum('6')},
		{name: pbs("3.11.13", "aarch64", "install_only"), sum: sum('7')},
		{name: pbs("3.11.9", "x86_64", "install_only"), sum: sum('8')},
		{name: pbs("3.11.9", "aarch64", "install_only"), sum: sum('9')},
		{name: pbs("3.13.5", "x86_64", "install_only"), sum: sum('a')}, // above max
		{name: pbs("3.13.5", "aarch64", "install_only"), sum: sum('b')},
		{name: pbs("3.10.18", "x86_64", "install_only"), sum: sum('c')}, // only x86_64
		{name: pbs("3.14.0rc1", "x86_64", "install_only"), sum: sum('d')},
		{name: pbs("3.14.0rc1", "aarch64", "install_only"), sum: sum('e')},
		{name: "cpython-3.12.11+20250808-x86_64-unknown-linux-musl-install_only.tar.gz", sum: sum('f')},
		{name: "cpython-3.12.11+20250808-aarch64-apple-darwin-install_only.tar.gz", sum: sum('0')},
		{name: "cpython-3.12.11+20250808-x86_64-unknown-linux-gnu-pgo+lto-full.tar.zst", sum: sum('1')},
	}
}

var st = matrix.Standalone{Repository: "astral-sh/python-build-standalone", Release: "20250808", Flavor: "install_only"}

// keep312 accepts 3.10 to 3.12.
func keep312(v string) bool { return v == "3.10" || v == "3.11" || v == "3.12" }

func TestPythonRuntimes(t *testing.T) {
	as := realisticAssets()
	f := &fakeRelease{tag: "20250808", assets: as, sums: sumsOf(as, "")}
	srv := f.server(t)
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
		f       fakeRelease
		want    string // the aarch64 sum
		wantErr []string
	}{
		{name: "SHA256SUMS only (no asset digests)",
			f:    fakeRelease{assets: []fakeAsset{{name: x, sum: sum('1')}, {name: a, sum: sum('2')}}, sums: sumsOf([]fakeAsset{{name: x, sum: sum('1')}, {name: a, sum: sum('2')}}, "")},
			want: sum('2')},
		{name: "no SHA256SUMS: asset digests",
			f:    fakeRelease{assets: []fakeAsset{{name: x, sum: sum('1'), digest: true}, {name: a, sum: sum('2'), digest: true}}},
			want: sum('2')},
		{name: "SHA256SUMS lacks a file that has a digest",
			f:    fakeRelease{assets: []fakeAsset{{name: x, sum: sum('1')}, {name: a, sum: sum('2'), digest: true}}, sums: sumsOf([]fakeAsset{{name: x, sum: sum('1')}}, "")},
			want: sum('2')},
		{name: "SHA256SUMS lacks a file without digest",
			f:       fakeRelease{assets: []fakeAsset{{name: x, sum: sum('1')}, {name: a, sum: sum('2')}}, sums: sumsOf([]fakeAsset{{name: x, sum: sum('1')}}, "")},
			wantErr: []string{"asset " + a + ": no sha256", "SHA256SUMS does not list it"}},
		{name: "neither",
			f:       fakeRelease{assets: []fakeAsset{{name: x, sum: sum('1')}, {name: a, sum: sum('2')}}},
			wantErr: []string{"no sha256 (the release has no SHA256SUMS asset and the asset no digest)", "/repos/astral-sh/python-build-standalone/releases/tags/20250808"}},
		{name: "SHA256SUMS and digest disagree",
			f:       fakeRelease{assets: []fakeAsset{{name: x, sum: sum('1')}, {name: a, sum: sum('2'), digest: true}}, sums: sumsOf([]fakeAsset{{name: x, sum: sum('1')}, {name: a, sum: sum('3')}}, "")},
			wantErr: []string{"asset " + a, "SHA256SUMS says sha256 " + sum('3')}},
		{name: "SHA256SUMS is HTML with 200",
			f:       fakeRelease{assets: []fakeAsset{{name: x, sum: sum('1'), digest: true}, {name: a, sum: sum('2'), digest: true}}, sumsHTML: true},
			wantErr: []string{"/releases/download/20250808/SHA256SUMS line 1", "an HTML page"}},
		{name: "release API is HTML with 200",
			f:       fakeRelease{releaseHTML: true},
			wantErr: []string{"/repos/astral-sh/python-build-standalone/releases/tags/20250808"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.tag = "20250808"
			srv := tc.f.server(t)
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
	f := &fakeRelease{tag: "20250808", assets: []fakeAsset{{name: x, sum: sum('1'), digest: true}}}
	srv := f.server(t)
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
