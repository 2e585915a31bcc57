package registry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func TestImagesDigest(t *testing.T) {
	var heads, gets int
	refuseHead := false
	reg := ggcrregistry.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/manifests/") {
			switch r.Method {
			case http.MethodHead:
				heads++
				if refuseHead {
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
			case http.MethodGet:
				gets++
			}
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	amd, arm := platformImage(t, "amd64"), platformImage(t, "arm64")
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
	)
	write := func(ref string, f func(name.Reference) error) {
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		if err := f(r); err != nil {
			t.Fatalf("push %s: %v", ref, err)
		}
	}
	write(host+"/library/python:3.12", func(r name.Reference) error { return remote.WriteIndex(r, idx) })
	write(host+"/library/python:amd64", func(r name.Reference) error { return remote.Write(r, amd) })
	idxDigest, _ := idx.Digest()
	amdDigest, _ := amd.Digest()

	for _, tc := range []struct {
		name       string
		ref        string
		refuseHead bool
		want       string
		wantGets   int
	}{
		{name: "multi-platform tag gives the index digest", ref: host + "/library/python:3.12", want: idxDigest.String()},
		{name: "single-platform tag gives its manifest digest", ref: host + "/library/python:amd64", want: amdDigest.String()},
		{name: "tag and digest", ref: host + "/library/python:3.12@" + idxDigest.String(), want: idxDigest.String()},
		{name: "HEAD refused: GET", ref: host + "/library/python:3.12", refuseHead: true, want: idxDigest.String(), wantGets: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			heads, gets, refuseHead = 0, 0, tc.refuseHead
			got, err := NewImages().Digest(context.Background(), tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Digest(%s) (-want +got):\n%s", tc.ref, diff)
			}
			if heads != 1 || gets != tc.wantGets {
				t.Errorf("%d HEAD and %d GET of manifests, want 1 and %d (no layer or extra reads)", heads, gets, tc.wantGets)
			}
		})
	}

	refuseHead = false
	if _, err := NewImages().Digest(context.Background(), host+"/library/python:nope"); err == nil || !strings.Contains(err.Error(), "library/python:nope") {
		t.Errorf("missing tag: error %v, want one naming the reference", err)
	}
	if _, err := NewImages().Digest(context.Background(), "Not A Ref"); err == nil || !strings.Contains(err.Error(), `image "Not A Ref"`) {
		t.Errorf("bad reference: error %v, want one naming it", err)
	}
}
