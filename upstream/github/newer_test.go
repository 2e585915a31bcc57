package github

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/upstream/github/githubtest"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// NewerReleases pages through the releases (newest first) and lists the
// published date tags after the pinned one, newest first.
func TestNewerReleases(t *testing.T) {
	var rels []githubtest.Release
	// 120 releases after the pinned one (two pages of 100), newest first,
	// then the pinned one and older ones.
	for i := 120; i >= 1; i-- {
		rels = append(rels, githubtest.Release{Repository: st.Repository, TagName: fmt.Sprintf("2026%04d", i), PublishedAt: "2026-01-01T00:00:00Z"})
	}
	rels[3].Draft = true
	rels[4].Prerelease = true
	rels = append(rels,
		githubtest.Release{Repository: st.Repository, TagName: "latest-build", PublishedAt: "2026-01-01T00:00:00Z"},
		githubtest.Release{Repository: st.Repository, TagName: "20250808", PublishedAt: "2025-08-08T00:00:00Z"},
		githubtest.Release{Repository: st.Repository, TagName: "20250723", PublishedAt: "2025-07-23T00:00:00Z"},
	)
	for i := 1; i <= 150; i++ { // a third page that must not be asked for
		rels = append(rels, githubtest.Release{Repository: st.Repository, TagName: fmt.Sprintf("2024%04d", 200-i)})
	}
	f := githubtest.New(rels)
	srv := httptest.NewServer(f)
	defer srv.Close()
	got, err := New(WithBaseURL(srv.URL)).NewerReleases(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 120; i >= 1; i-- {
		if i != 117 && i != 116 { // the draft and the pre-release
			want = append(want, fmt.Sprintf("2026%04d", i))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewerReleases (-want +got):\n%s", diff)
	}
	var uris []string
	for _, r := range f.Requests() {
		uris = append(uris, r.URI)
	}
	wantURIs := []string{
		"/repos/astral-sh/python-build-standalone/releases?per_page=100&page=1",
		"/repos/astral-sh/python-build-standalone/releases?per_page=100&page=2",
	}
	if diff := cmp.Diff(wantURIs, uris); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	// Nothing newer: empty, no error.
	latest := st
	latest.Release = "20260120"
	if got, err := New(WithBaseURL(srv.URL)).NewerReleases(context.Background(), latest); err != nil || len(got) != 0 {
		t.Errorf("after the newest: %v, %v; want none", got, err)
	}
}

// CheckedPythonRuntimes takes every sum from SHA256SUMS: what
// PythonRuntimes accepts from an asset digest alone is refused with
// catalog.ErrUnchecked.
func TestCheckedPythonRuntimes(t *testing.T) {
	x, a := pbs("3.12.11", "x86_64", "install_only"), pbs("3.12.11", "aarch64", "install_only")
	for _, tc := range []struct {
		name    string
		assets  []githubtest.Asset
		sums    string
		wantErr []string // empty: accepted
	}{
		{name: "SHA256SUMS lists both, digests agree",
			assets: []githubtest.Asset{{Name: x, SHA256: sum('1'), Digest: true}, {Name: a, SHA256: sum('2'), Digest: true}},
			sums:   githubtest.Sums([]githubtest.Asset{{Name: x, SHA256: sum('1')}, {Name: a, SHA256: sum('2')}})},
		{name: "SHA256SUMS lacks a file that has a digest",
			assets:  []githubtest.Asset{{Name: x, SHA256: sum('1'), Digest: true}, {Name: a, SHA256: sum('2'), Digest: true}},
			sums:    githubtest.Sums([]githubtest.Asset{{Name: x, SHA256: sum('1')}}),
			wantErr: []string{"asset " + a, "/releases/download/20250808/SHA256SUMS does not list it", "not checked against SHA256SUMS"}},
		{name: "no SHA256SUMS, digests only",
			assets:  []githubtest.Asset{{Name: x, SHA256: sum('1'), Digest: true}, {Name: a, SHA256: sum('2'), Digest: true}},
			wantErr: []string{"the release has no SHA256SUMS asset", "not checked against SHA256SUMS"}},
		{name: "SHA256SUMS and digest disagree",
			assets:  []githubtest.Asset{{Name: x, SHA256: sum('1')}, {Name: a, SHA256: sum('2'), Digest: true}},
			sums:    githubtest.Sums([]githubtest.Asset{{Name: x, SHA256: sum('1')}, {Name: a, SHA256: sum('3')}}),
			wantErr: []string{"SHA256SUMS says sha256 " + sum('3'), "not checked against SHA256SUMS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc.assets, tc.sums)
			got, err := New(WithBaseURL(srv.URL), WithHTTPClient(httpx.New(httpx.WithRetries(0)))).CheckedPythonRuntimes(context.Background(), st, keep312)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || got[0].Files["linux/arm64"].SHA256 != sum('2') {
					t.Errorf("got %+v, want 3.12.11 with the SHA256SUMS sums", got)
				}
				return
			}
			if !errors.Is(err, catalog.ErrUnchecked) {
				t.Fatalf("got %+v, %v; want an error wrapping catalog.ErrUnchecked", got, err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
