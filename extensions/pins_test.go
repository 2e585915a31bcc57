package extensions_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/gallerytest"
)

// galleryCatalog is a catalog of every fixture build, with no sha256.
func galleryCatalog(builds []gallerytest.Build) *catalog.Catalog {
	cat := &catalog.Catalog{}
	byID := map[string]int{}
	for _, b := range builds {
		i, ok := byID[b.ID]
		if !ok {
			i = len(cat.Extensions)
			byID[b.ID] = i
			cat.Extensions = append(cat.Extensions, catalog.ExtensionRecord{ID: b.ID, Source: "marketplace"})
		}
		r := &cat.Extensions[i]
		var v *catalog.ExtensionVersion
		for j := range r.Versions {
			if r.Versions[j].Version == b.Version {
				v = &r.Versions[j]
			}
		}
		if v == nil {
			r.Versions = append(r.Versions, catalog.ExtensionVersion{Version: b.Version, Engine: b.Engine, Files: map[string]catalog.File{}})
			v = &r.Versions[len(r.Versions)-1]
		}
		v.Files[b.TargetPlatform] = catalog.File{URL: "https://example.invalid/" + b.ID}
	}
	return cat
}

func TestRecordAndCarryPins(t *testing.T) {
	builds := loadBuilds(t)
	f := gallerytest.New(builds)
	defer f.Close()
	fe, _ := newFetcher(t, f, t.TempDir())
	got, err := fe.FetchExtensions(context.Background(), testSet(t, builds, false), platforms, testVSCode)
	if err != nil {
		t.Fatal(err)
	}
	cat := galleryCatalog(builds)
	pinned, err := extensions.RecordPins(cat, got)
	if err != nil {
		t.Fatal(err)
	}
	if len(pinned) != len(got) {
		t.Errorf("pinned %d of %d files", len(pinned), len(got))
	}
	for _, g := range got {
		var sum string
		for _, r := range cat.Extensions {
			for _, v := range r.Versions {
				if r.ID == g.ID && v.Version == g.Version {
					sum = v.Files[g.TargetPlatform].SHA256
				}
			}
		}
		if want := buildOf(t, builds, g.ID, g.Version, g.TargetPlatform).SHA256(); sum != want {
			t.Errorf("%s@%s (%s) pinned as %q, want %s", g.ID, g.Version, g.TargetPlatform, sum, want)
		}
	}
	// Recording again pins nothing new; a different digest is refused.
	if again, err := extensions.RecordPins(cat, got); err != nil || len(again) != 0 {
		t.Errorf("second RecordPins = %v, %v", again, err)
	}
	bad := append([]extensions.Fetched(nil), got...)
	bad[0].SHA256 = strings.Repeat("0", 64)
	if _, err := extensions.RecordPins(cat, bad); err == nil || !strings.Contains(err.Error(), "the catalog pins sha256") {
		t.Errorf("RecordPins of another digest: %v", err)
	}

	// A refresh (a catalog without digests) keeps every pin.
	fresh := galleryCatalog(builds)
	if n := extensions.CarryPins(cat, fresh); n != len(got) {
		t.Errorf("carried %d pins, want %d", n, len(got))
	}
	if diff := cmp.Diff(cat, fresh); diff != "" {
		t.Errorf("refreshed catalog after CarryPins differs (-pinned +fresh):\n%s", diff)
	}
}
