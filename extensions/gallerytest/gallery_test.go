package gallerytest_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/extensions/gallerytest"
	"github.com/imagectl/imagectl/extensions/marketplace"
	"github.com/imagectl/imagectl/extensions/openvsx"
)

func load(t *testing.T) []gallerytest.Build {
	t.Helper()
	b, err := gallerytest.LoadDir(gallerytest.FixtureDir())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestClientsAgree checks that both clients read the same facts from the two
// fakes: versions newest first, platform builds merged, engines and deps.
func TestClientsAgree(t *testing.T) {
	f := gallerytest.New(load(t))
	defer f.Close()
	ctx := context.Background()
	mkt := marketplace.New(marketplace.WithBaseURL(f.MarketplaceURL()))
	ovsx := openvsx.New(openvsx.WithBaseURL(f.OpenVSXURL()))
	for _, id := range []string{"ms-python.python", "ms-python.debugpy", "anyscalecompute.ray-distributed-debugger"} {
		mv, err := mkt.Versions(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		ov, err := ovsx.Versions(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(mv) == 0 || len(mv) != len(ov) {
			t.Fatalf("%s: marketplace %d versions, open vsx %d", id, len(mv), len(ov))
		}
		for i := range mv {
			if mv[i].Version != ov[i].Version || mv[i].Engine != ov[i].Engine ||
				!cmp.Equal(mv[i].Dependencies, ov[i].Dependencies) || !cmp.Equal(mv[i].ExtensionPack, ov[i].ExtensionPack) {
				t.Errorf("%s[%d]: marketplace %+v, open vsx %+v", id, i, mv[i], ov[i])
			}
			var mt, ot []string
			for k := range mv[i].Files {
				mt = append(mt, k)
			}
			for k := range ov[i].Files {
				ot = append(ot, k)
			}
			if !cmp.Equal(mt, ot, cmpSort) {
				t.Errorf("%s@%s: platforms %v vs %v", id, mv[i].Version, mt, ot)
			}
		}
	}
	py, _ := mkt.Versions(ctx, "ms-python.python")
	if py[0].Version != "2025.8.0" || len(py[0].Files) != 2 || py[0].Files["universal"].URL != "" {
		t.Errorf("ms-python.python newest = %+v, want 2025.8.0 with linux-x64 and linux-arm64 only", py[0])
	}
	dbg, _ := mkt.Versions(ctx, "ms-python.debugpy")
	if diff := cmp.Diff([]string{"ms-python.python"}, dbg[0].Dependencies); diff != "" {
		t.Errorf("debugpy deps: %s", diff)
	}
}

var cmpSort = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

func TestDownloadsServeTheRightBuild(t *testing.T) {
	builds := load(t)
	f := gallerytest.New(builds)
	defer f.Close()
	ctx := context.Background()
	mkt := marketplace.New(marketplace.WithBaseURL(f.MarketplaceURL()))
	ovsx := openvsx.New(openvsx.WithBaseURL(f.OpenVSXURL()))
	for _, b := range builds {
		var m, o bytes.Buffer
		if _, err := mkt.Download(ctx, b.ID, b.Version, b.TargetPlatform, &m); err != nil {
			t.Fatal(err)
		}
		if _, err := ovsx.Download(ctx, b.ID, b.Version, b.TargetPlatform, &o); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Bytes(), b.Body) || !bytes.Equal(o.Bytes(), b.Body) {
			t.Errorf("%s@%s %s: wrong body", b.ID, b.Version, b.TargetPlatform)
		}
	}
	if s := f.Stats(); s.Downloads != int64(2*len(builds)) || s.Bytes == 0 {
		t.Errorf("stats %+v", s)
	}
}
