package extensions_test

import (
	"context"
	"testing"

	"github.com/imagectl/imagectl/extensions/gallerytest"
)

// BenchmarkFetch compares a cold fetch of the test set (empty cache) with a
// warm one (everything cached and locked), reporting the requests and bytes
// the fake galleries served per fetch. Warm must be 0 requests (also asserted
// by TestFetchColdThenWarm).
func BenchmarkFetch(b *testing.B) {
	builds := loadBuilds(b)
	f := gallerytest.New(builds)
	defer f.Close()
	set := testSet(b, builds, true)
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		f.ResetStats()
		for b.Loop() {
			b.StopTimer()
			fe, _ := newFetcher(b, f, b.TempDir())
			b.StartTimer()
			if _, err := fe.FetchExtensions(ctx, set, platforms, testVSCode); err != nil {
				b.Fatal(err)
			}
		}
		s := f.Stats()
		b.ReportMetric(float64(s.Requests)/float64(b.N), "requests/op")
		b.ReportMetric(float64(s.Bytes)/float64(b.N), "served-bytes/op")
	})
	b.Run("warm", func(b *testing.B) {
		fe, _ := newFetcher(b, f, b.TempDir())
		if _, err := fe.FetchExtensions(ctx, set, platforms, testVSCode); err != nil {
			b.Fatal(err)
		}
		f.ResetStats()
		for b.Loop() {
			if _, err := fe.FetchExtensions(ctx, set, platforms, testVSCode); err != nil {
				b.Fatal(err)
			}
		}
		s := f.Stats()
		if s.Requests != 0 {
			b.Errorf("warm fetch made %d requests", s.Requests)
		}
		b.ReportMetric(float64(s.Requests)/float64(b.N), "requests/op")
		b.ReportMetric(float64(s.Bytes)/float64(b.N), "served-bytes/op")
	})
}
