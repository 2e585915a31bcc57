package cache_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/internal/testutil"
)

// overDefaultLimits is a real VSIX fixture padded past
// vsix.DefaultLimits' MaxTotalRatio (testutil.PadZip), within their
// per-entry rules.
func overDefaultLimits(t *testing.T) []byte {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("..", "testdata", "vsix", "anyscalecompute.ray-distributed-debugger-0.1.4.vsix"))
	if err != nil {
		t.Fatal(err)
	}
	b := testutil.PadZip(t, body, 3)
	if _, err := vsix.Identify(context.Background(), bytes.NewReader(b), int64(len(b))); !errors.Is(err, vsix.ErrLimit) {
		t.Fatalf("the fixture must be over the default limits (else this test proves nothing): %v", err)
	}
	return b
}

// A blob over the reader's archive limits is never removed: without limits
// recorded in its index entry (an entry written before they were) it is a
// miss and left out of a listing, with a warning; with them it is
// identified under them and served (issue 35 item 7).
func TestBlobOverTheLimitsIsKept(t *testing.T) {
	ctx := context.Background()
	// What --max-expanded-bytes 1073741824 --max-expansion-ratio 10000 give.
	raised := vsix.Limits{MaxTotalBytes: 1 << 30, MaxTotalRatio: 10000}
	body := overDefaultLimits(t)
	info, err := vsix.IdentifyWithin(ctx, bytes.NewReader(body), int64(len(body)), raised)
	if err != nil {
		t.Fatal(err)
	}
	k := cache.Key{ID: info.ID(), Version: info.Version, TargetPlatform: info.TargetPlatform}
	dir := t.TempDir()
	wide, err := cache.Open(dir, cache.WithIdentify(cache.IdentifyVSIXWithin(raised)))
	if err != nil {
		t.Fatal(err)
	}
	e := mustPut(t, wide, k, body) // no limits recorded

	var warn strings.Builder
	narrow, err := cache.Open(dir, cache.WithWarnings(&warn))
	if err != nil {
		t.Fatal(err)
	}
	ents, err := narrow.List(ctx)
	if err != nil || len(ents) != 0 {
		t.Errorf("List under the default limits = %v, %v; want nothing listed", ents, err)
	}
	for _, want := range []string{"", e.SHA256} {
		if got, ok, err := narrow.Get(ctx, k, want); ok || err != nil {
			t.Errorf("Get(%q) under the default limits = %+v, %v, %v; want a miss", want, got, ok, err)
		}
	}
	if _, err := os.Stat(e.Path); err != nil {
		t.Fatalf("a blob over the default limits was removed: %v", err)
	}
	if !strings.Contains(warn.String(), "over the archive limits") || !strings.Contains(warn.String(), "kept") {
		t.Errorf("warnings %q do not say the blob is over the limits and kept", warn.String())
	}
	if _, ok, err := wide.Get(ctx, k, e.SHA256); !ok || err != nil {
		t.Fatalf("Get under the raised limits = %v, %v; want a hit", ok, err)
	}

	// Recorded with the entry: every reader identifies it under them.
	w, err := wide.NewWriter()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(body); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(cache.Entry{Key: k, Limits: &raised}, e.SHA256); err != nil {
		t.Fatal(err)
	}
	narrow, err = cache.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ents, err = narrow.List(ctx)
	if err != nil || len(ents) != 1 || ents[0].SHA256 != e.SHA256 || ents[0].Limits == nil || *ents[0].Limits != raised {
		t.Errorf("List with the limits recorded = %+v, %v; want the entry with its limits", ents, err)
	}
	if _, ok, err := narrow.Get(ctx, k, ""); !ok || err != nil {
		t.Errorf("Get with the limits recorded = %v, %v; want a hit", ok, err)
	}
}
