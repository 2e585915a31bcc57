package catalog_test

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/upstream/registry"
)

// pushToolsIndex pushes a random two-platform (amd64, arm64) index under ref
// and returns its digest.
func pushToolsIndex(t *testing.T, ref string) string {
	t.Helper()
	idx, err := imagetest.RandomIndex("amd64", "arm64")
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// Refresh locks build.toolsImage to the index digest its tag names, and a
// new image pushed under the same tag gives a new digest.
func TestRefreshToolsImage(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	pypiSrv := httptest.NewServer(newFakePyPI())
	defer pypiSrv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	tools := host + "/library/python:3.12-slim-bookworm"

	first := pushToolsIndex(t, tools)
	pinned := host + "/library/python:3.11@" + pushToolsIndex(t, host+"/library/python:3.11")

	refresh := func(ref string) (*catalog.ToolsImage, error) {
		t.Helper()
		cfg := mustMatrix(t)
		cfg.Build.ToolsImage = ref
		src := sources(pypiSrv.URL)
		src.Images = registry.NewImages()
		c, err := catalog.Refresh(context.Background(), cfg, src)
		if err != nil {
			return nil, err
		}
		return c.ToolsImage, nil
	}

	got, err := refresh(tools)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&catalog.ToolsImage{Ref: tools, Digest: first}, got); diff != "" {
		t.Errorf("toolsImage after the first push (-want +got):\n%s", diff)
	}

	second := pushToolsIndex(t, tools) // the tag moves
	if second == first {
		t.Fatal("two random indexes have the same digest")
	}
	for _, tc := range []struct {
		name, ref string
		want      *catalog.ToolsImage
	}{
		{"moved tag", tools, &catalog.ToolsImage{Ref: tools, Digest: second}},
		{"reference already pinned", pinned, &catalog.ToolsImage{Ref: pinned, Digest: pinned[strings.Index(pinned, "@")+1:]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := refresh(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("toolsImage (-want +got):\n%s", diff)
			}
		})
	}

	// A missing tag fails the refresh, naming the field and the reference.
	_, err = refresh(host + "/library/python:nope")
	if err == nil || !strings.Contains(err.Error(), "build.toolsImage "+host+"/library/python:nope") {
		t.Errorf("refresh of a missing tools image: error %v, want one naming build.toolsImage and the reference", err)
	}

	// Without an Images source nothing is recorded.
	cfg := mustMatrix(t)
	c, err := catalog.Refresh(context.Background(), cfg, sources(pypiSrv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if c.ToolsImage != nil {
		t.Errorf("toolsImage = %+v without an Images source, want none", c.ToolsImage)
	}
}

// The catalog encodes the tools image deterministically and Load rejects a
// malformed digest.
func TestToolsImageJSON(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	c := &catalog.Catalog{SchemaVersion: catalog.SchemaVersion, Describes: "2025-07-15",
		ToolsImage: &catalog.ToolsImage{Ref: "docker.io/library/python:3.12-slim-bookworm", Digest: d}}
	b, err := catalog.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `"toolsImage": {
    "ref": "docker.io/library/python:3.12-slim-bookworm",
    "digest": "` + d + `"
  },`
	if !strings.Contains(string(b), want) {
		t.Errorf("encoded catalog lacks\n%s\n:\n%s", want, b)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		tools   *catalog.ToolsImage
		wantErr string
	}{
		{"pinned", &catalog.ToolsImage{Ref: "python:3.12", Digest: d}, ""},
		{"digest unknown", &catalog.ToolsImage{Ref: "python:3.12"}, ""},
		{"bad digest", &catalog.ToolsImage{Ref: "python:3.12", Digest: "sha256:XYZ"}, `toolsImage.digest: "sha256:XYZ": want sha256:<64 lowercase hex digits>`},
		{"no ref", &catalog.ToolsImage{Digest: d}, "toolsImage.ref: empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := dir + "/" + strings.ReplaceAll(tc.name, " ", "-") + ".json"
			c := &catalog.Catalog{SchemaVersion: catalog.SchemaVersion, Describes: "2025-07-15", ToolsImage: tc.tools}
			werr := catalog.Write(p, c)
			if tc.wantErr != "" {
				// Write refuses what Load would refuse; write it by hand.
				if werr == nil || !strings.Contains(werr.Error(), tc.wantErr) {
					t.Fatalf("Write: %v, want an error containing %q", werr, tc.wantErr)
				}
				b, err := json.Marshal(c)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if werr != nil {
				t.Fatal(werr)
			}
			got, err := catalog.Load(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.tools, got.ToolsImage); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}
