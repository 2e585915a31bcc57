package extensions_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/gallerytest"
	"github.com/imagectl/imagectl/extensions/openvsx"
	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// raisedLimits are what `--max-expanded-bytes 1073741824
// --max-expansion-ratio 10000` give (cmd/imagectl's extensionsFlags.limits).
var raisedLimits = vsix.Limits{MaxTotalBytes: 1 << 30, MaxTotalRatio: 10000}

// defaultFlagLimits are what the same flags give at their defaults.
var defaultFlagLimits = vsix.Limits{MaxTotalBytes: vsix.DefaultLimits.MaxTotalBytes, MaxTotalRatio: vsix.DefaultLimits.MaxTotalRatio}

// openLikeTheCLI opens the cache as every extensions verb does: a hit is
// identified under the command line's limits.
func openLikeTheCLI(t *testing.T, dir string, lim vsix.Limits) *cache.Cache {
	t.Helper()
	c, err := cache.Open(dir, cache.WithIdentify(cache.IdentifyVSIXWithin(lim)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A file the Fetcher accepts under raised archive limits is recorded with
// them (so a reader with the default limits, extensions ls, identifies it
// under them: the cache's TestBlobOverTheLimitsIsKept), and a layout under
// the same limits validates it (issue 35 item 7).
func TestFetchRecordsRaisedLimits(t *testing.T) {
	ctx := context.Background()
	const id, ver = "anyscalecompute.ray-distributed-debugger", "0.1.4"
	builds := loadBuilds(t)
	var padded []byte
	for i, b := range builds {
		if b.ID == id && b.Version == ver && b.TargetPlatform == vsix.Universal {
			builds[i].Body = testutil.PadZip(t, b.Body, 3)
			padded = builds[i].Body
		}
	}
	if padded == nil {
		t.Fatalf("no fixture %s@%s", id, ver)
	}
	// Else the test proves nothing.
	if _, err := vsix.IdentifyWithin(ctx, bytes.NewReader(padded), int64(len(padded)), defaultFlagLimits); !errors.Is(err, vsix.ErrLimit) {
		t.Fatalf("the padded VSIX must exceed the default limits, got %v", err)
	}
	if _, err := vsix.IdentifyWithin(ctx, bytes.NewReader(padded), int64(len(padded)), raisedLimits); err != nil {
		t.Fatalf("the padded VSIX must pass the raised limits: %v", err)
	}
	g := gallerytest.New(builds)
	t.Cleanup(g.Close)
	set := []imagespec.Extension{{ID: id, Version: ver, Source: "openvsx", Engine: "^1.66.0", Files: map[string]imagespec.File{
		"linux/amd64": {TargetPlatform: vsix.Universal},
		"linux/arm64": {TargetPlatform: vsix.Universal},
	}}}
	dir := t.TempDir()

	// extensions fetch --max-expanded-bytes ... --max-expansion-ratio ...
	hc := httpx.New(httpx.WithBackoff(10*time.Millisecond, 50*time.Millisecond), httpx.WithTimeout(10*time.Second), httpx.WithRetries(4))
	fetcher := extensions.NewFetcher(openLikeTheCLI(t, dir, raisedLimits),
		extensions.WithSource("openvsx", openvsx.New(openvsx.WithBaseURL(g.OpenVSXURL()), openvsx.WithHTTPClient(hc))),
		extensions.WithLimits(raisedLimits))
	got, err := fetcher.FetchExtensions(ctx, set, platforms, testVSCode)
	if err != nil {
		t.Fatalf("fetch under raised limits: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("fetched %d files, want 1", len(got))
	}

	// The entry records the limits it was accepted under.
	ents, err := openLikeTheCLI(t, dir, defaultFlagLimits).List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(ents) != 1 || ents[0].SHA256 != got[0].SHA256 || ents[0].Limits == nil || *ents[0].Limits != raisedLimits {
		t.Errorf("List = %+v, want the file fetched (%s) recorded with the raised limits %+v", ents, got[0].SHA256, raisedLimits)
	}

	// layout under the same limits.
	if _, err := extensions.ValidateFiles(ctx, openLikeTheCLI(t, dir, raisedLimits), set, platforms, testVSCode, raisedLimits); err != nil {
		t.Fatalf("layout under raised limits: %v", err)
	}
}
