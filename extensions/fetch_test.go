package extensions_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/gallerytest"
	"github.com/imagectl/imagectl/extensions/marketplace"
	"github.com/imagectl/imagectl/extensions/openvsx"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/upstream/httpx"
)

const testVSCode = "1.100.3"

var platforms = []string{"linux/amd64", "linux/arm64"}

func loadBuilds(t testing.TB) []gallerytest.Build {
	t.Helper()
	b, err := gallerytest.LoadDir(gallerytest.FixtureDir())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func buildOf(t testing.TB, builds []gallerytest.Build, id, ver, tp string) gallerytest.Build {
	t.Helper()
	for _, b := range builds {
		if b.ID == id && b.Version == ver && b.TargetPlatform == tp {
			return b
		}
	}
	t.Fatalf("no fixture %s@%s %s", id, ver, tp)
	return gallerytest.Build{}
}

// testSet is the resolved extension list the tests fetch: python (platform
// builds only), debugpy (universal, depends on python) from the Marketplace,
// the Ray debugger (universal) from Open VSX. lock pins the digests.
func testSet(t testing.TB, builds []gallerytest.Build, lock bool) []imagespec.Extension {
	file := func(id, ver, tp string) imagespec.File {
		f := imagespec.File{TargetPlatform: tp}
		if lock {
			f.SHA256 = buildOf(t, builds, id, ver, tp).SHA256()
		}
		return f
	}
	return []imagespec.Extension{
		{ID: "ms-python.python", Version: "2025.6.1", Source: "marketplace", Engine: "^1.95.0", Files: map[string]imagespec.File{
			"linux/amd64": file("ms-python.python", "2025.6.1", "linux-x64"),
			"linux/arm64": file("ms-python.python", "2025.6.1", "linux-arm64"),
		}},
		{ID: "ms-python.debugpy", Version: "2025.10.0", Source: "marketplace", Engine: "^1.92.0", Files: map[string]imagespec.File{
			"linux/amd64": file("ms-python.debugpy", "2025.10.0", "universal"),
			"linux/arm64": file("ms-python.debugpy", "2025.10.0", "universal"),
		}},
		{ID: "anyscalecompute.ray-distributed-debugger", Version: "0.1.4", Source: "openvsx", Engine: "^1.66.0", Files: map[string]imagespec.File{
			"linux/amd64": file("anyscalecompute.ray-distributed-debugger", "0.1.4", "universal"),
			"linux/arm64": file("anyscalecompute.ray-distributed-debugger", "0.1.4", "universal"),
		}},
	}
}

// fetchFixture is the test set (locked or not) fetched once into a fresh
// cache from a fresh fake gallery.
type fetchFixture struct {
	gallery *gallerytest.Fake
	fetcher *extensions.Fetcher
	cache   *cache.Cache
	set     []imagespec.Extension
	got     []extensions.Fetched
}

func fetchTestSet(t *testing.T, lock bool) fetchFixture {
	t.Helper()
	builds := loadBuilds(t)
	f := gallerytest.New(builds)
	t.Cleanup(f.Close)
	fe, c := newFetcher(t, f, t.TempDir())
	set := testSet(t, builds, lock)
	got, err := fe.FetchExtensions(context.Background(), set, platforms, testVSCode)
	if err != nil {
		t.Fatal(err)
	}
	return fetchFixture{gallery: f, fetcher: fe, cache: c, set: set, got: got}
}

func newFetcher(t testing.TB, f *gallerytest.Fake, dir string) (*extensions.Fetcher, *cache.Cache) {
	t.Helper()
	c, err := cache.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	hc := httpx.New(httpx.WithBackoff(10*time.Millisecond, 50*time.Millisecond), httpx.WithTimeout(10*time.Second), httpx.WithRetries(4))
	return extensions.NewFetcher(c,
		extensions.WithSource("marketplace", marketplace.New(marketplace.WithBaseURL(f.MarketplaceURL()), marketplace.WithHTTPClient(hc))),
		extensions.WithSource("openvsx", openvsx.New(openvsx.WithBaseURL(f.OpenVSXURL()), openvsx.WithHTTPClient(hc))),
	), c
}

// assertCacheClean checks that every blob in the cache hashes to its name and
// that the index lists exactly want (id@version/target).
func assertCacheClean(t *testing.T, c *cache.Cache, want []string) {
	t.Helper()
	blobs, err := c.Blobs()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		if d, _, err := cache.HashFile(c.BlobPath(b)); err != nil || d != b {
			t.Errorf("bad blob %s in the cache (hash %s, %v)", b, d, err)
		}
	}
	ents, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.ID+"@"+e.Version+"/"+e.TargetPlatform)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cache listing (-want +got):\n%s", diff)
	}
	if len(blobs) != len(ents) {
		t.Errorf("%d blobs but %d index entries: %v", len(blobs), len(ents), blobs)
	}
	tmps, _ := filepath.Glob(filepath.Join(c.Dir(), "blobs", "sha256", ".tmp-*"))
	if len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

var fullListing = []string{
	"anyscalecompute.ray-distributed-debugger@0.1.4/universal",
	"ms-python.debugpy@2025.10.0/universal",
	"ms-python.python@2025.6.1/linux-arm64",
	"ms-python.python@2025.6.1/linux-x64",
}

func TestFetchColdThenWarm(t *testing.T) {
	builds := loadBuilds(t)
	f := gallerytest.New(builds)
	defer f.Close()
	for _, lock := range []bool{true, false} {
		t.Run(fmt.Sprintf("lock=%v", lock), func(t *testing.T) {
			f.ResetStats()
			fe, c := newFetcher(t, f, t.TempDir())
			set := testSet(t, builds, lock)
			got, err := fe.FetchExtensions(context.Background(), set, platforms, testVSCode)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 4 {
				t.Fatalf("fetched %d files, want 4 (debugpy and the Ray debugger are universal: once each)", len(got))
			}
			for _, g := range got {
				want := buildOf(t, builds, g.ID, g.Version, g.TargetPlatform)
				if g.SHA256 != want.SHA256() || g.Cached {
					t.Errorf("%+v: want sha256 %s, not cached", g, want.SHA256())
				}
			}
			// Marketplace downloads always name the target platform of a platform build.
			for _, r := range f.Requests() {
				if strings.Contains(r, "/ms-python/vsextensions/python/") && !strings.Contains(r, "targetPlatform=linux-") {
					t.Errorf("python download without targetPlatform: %s", r)
				}
			}
			assertCacheClean(t, c, fullListing)

			f.ResetStats()
			got2, err := fe.FetchExtensions(context.Background(), set, platforms, testVSCode)
			if err != nil {
				t.Fatal(err)
			}
			if s := f.Stats(); s.Requests != 0 {
				t.Errorf("warm fetch made %d requests (%v), want 0", s.Requests, f.Requests())
			}
			for i := range got2 {
				if !got2[i].Cached || got2[i].SHA256 != got[i].SHA256 {
					t.Errorf("warm %+v, want cached with %s", got2[i], got[i].SHA256)
				}
			}
		})
	}
}

func TestFetchCorruptBlobIsRefetched(t *testing.T) {
	fx := fetchTestSet(t, true)
	f, fe, c, set, got := fx.gallery, fx.fetcher, fx.cache, fx.set, fx.got
	p := got[0].Path
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, []byte("PK\x03\x04 corrupted"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.ResetStats()
	got2, err := fe.FetchExtensions(context.Background(), set, platforms, testVSCode)
	if err != nil {
		t.Fatal(err)
	}
	if got2[0].Cached || got2[0].SHA256 != got[0].SHA256 || f.Stats().Downloads != 1 {
		t.Errorf("after corruption: %+v, %d downloads; want one fresh download", got2[0], f.Stats().Downloads)
	}
	assertCacheClean(t, c, fullListing)
}

func TestFetchFaults(t *testing.T) {
	builds := loadBuilds(t)
	py := buildOf(t, builds, "ms-python.python", "2025.6.1", "linux-x64")
	pyArm := buildOf(t, builds, "ms-python.python", "2025.6.1", "linux-arm64")
	dbg := buildOf(t, builds, "ms-python.debugpy", "2025.10.0", "universal")
	mustAdd := func(extra ...gallerytest.Entry) []byte {
		b, err := gallerytest.AddEntries(py.Body, extra...)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	slip := mustAdd(gallerytest.Entry{Name: "extension/../../../evil.sh", Body: []byte("#!/bin/sh\n")})
	link := mustAdd(gallerytest.Entry{Name: "extension/link", Body: []byte("/etc/passwd"), Mode: fs.ModeSymlink | 0o777})
	bomb := mustAdd(gallerytest.Entry{Name: "extension/bomb.bin", Body: make([]byte, 64<<20)})

	for _, tc := range []struct {
		name    string
		fault   gallerytest.Fault
		lockBad bool
		wantErr string // empty: must recover
		minTime time.Duration
	}{
		{name: "429 with Retry-After", fault: gallerytest.Fault{Kind: gallerytest.RateLimit, Count: 1, RetryAfter: 1}, minTime: 900 * time.Millisecond},
		{name: "503 burst", fault: gallerytest.Fault{Kind: gallerytest.Unavailable, Count: 3, RetryAfter: 0}},
		{name: "connection reset mid-body", fault: gallerytest.Fault{Kind: gallerytest.ResetMidBody, Count: 2}},
		{name: "truncated body", fault: gallerytest.Fault{Kind: gallerytest.Truncate, Count: 2}},
		{name: "gzip Content-Encoding", fault: gallerytest.Fault{Kind: gallerytest.GzipEncoded}},
		{name: "gzip without Content-Encoding", fault: gallerytest.Fault{Kind: gallerytest.GzipSilent}},
		{name: "wrong file identity", fault: gallerytest.Fault{Kind: gallerytest.Replace, Body: dbg.Body}, wantErr: "Identity is ms-python.debugpy@2025.10.0"},
		{name: "wrong platform", fault: gallerytest.Fault{Kind: gallerytest.Replace, Body: pyArm.Body}, wantErr: `TargetPlatform is "linux-arm64", want "linux-x64"`},
		{name: "sha256 disagrees with the lock", lockBad: true, wantErr: "but the lock says"},
		{name: "zip slip", fault: gallerytest.Fault{Kind: gallerytest.Replace, Body: slip}, wantErr: "escapes"},
		{name: "symlink entry", fault: gallerytest.Fault{Kind: gallerytest.Replace, Body: link}, wantErr: "symbolic link"},
		{name: "zip bomb", fault: gallerytest.Fault{Kind: gallerytest.Replace, Body: bomb}, wantErr: "compression ratio"},
		{name: "HTML with status 200", fault: gallerytest.Fault{Kind: gallerytest.HTML200}, wantErr: "HTML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := gallerytest.New(builds)
			defer f.Close()
			if tc.fault.Kind != 0 {
				tc.fault.ID, tc.fault.TargetPlatform = "ms-python.python", "linux-x64"
				f.AddFault(tc.fault)
			}
			fe, c := newFetcher(t, f, t.TempDir())
			set := testSet(t, builds, true)
			if tc.lockBad {
				fl := set[0].Files["linux/amd64"]
				fl.SHA256 = strings.Repeat("ab", 32)
				set[0].Files["linux/amd64"] = fl
			}
			start := time.Now()
			_, err := fe.FetchExtensions(context.Background(), set, platforms, testVSCode)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("did not recover: %v", err)
				}
				if el := time.Since(start); el < tc.minTime {
					t.Errorf("finished in %v; Retry-After asked for %v", el, tc.minTime)
				}
				assertCacheClean(t, c, fullListing)
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, want := range []string{tc.wantErr, "ms-python.python@2025.6.1", "linux-x64", "linux/amd64", f.MarketplaceURL() + "/_apis/public/gallery/publishers/ms-python/vsextensions/python/2025.6.1/vspackage?targetPlatform=linux-x64"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
			// The bad file never reaches the cache; whatever else finished is intact.
			ents, _ := c.List(context.Background())
			for _, e := range ents {
				if e.ID == "ms-python.python" && e.TargetPlatform == "linux-x64" {
					t.Errorf("bad file cached: %+v", e)
				}
			}
			assertCacheCleanSubset(t, c)
		})
	}
}

func assertCacheCleanSubset(t *testing.T, c *cache.Cache) {
	t.Helper()
	blobs, _ := c.Blobs()
	for _, b := range blobs {
		if d, _, err := cache.HashFile(c.BlobPath(b)); err != nil || d != b {
			t.Errorf("bad blob %s (%s, %v)", b, d, err)
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(c.Dir(), "blobs", "sha256", ".tmp-*"))
	if len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
}

func TestFetchRejectsCrossPlatformFile(t *testing.T) {
	builds := loadBuilds(t)
	set := testSet(t, builds, false)
	set[0].Files["linux/amd64"] = imagespec.File{TargetPlatform: "linux-arm64"}
	fe, _ := newFetcher(t, gallerytest.New(builds), t.TempDir())
	_, err := fe.FetchExtensions(context.Background(), set, platforms, testVSCode)
	if err == nil || !strings.Contains(err.Error(), `built for "linux-arm64"`) {
		t.Fatalf("err = %v, want a refusal to install linux-arm64 on linux/amd64", err)
	}
}

func TestFetchEngineMismatch(t *testing.T) {
	builds := loadBuilds(t)
	f := gallerytest.New(builds)
	defer f.Close()
	fe, c := newFetcher(t, f, t.TempDir())
	set := []imagespec.Extension{{ID: "anyscalecompute.ray-distributed-debugger", Version: "0.2.0", Source: "openvsx", Files: map[string]imagespec.File{"linux/amd64": {TargetPlatform: "universal"}}}}
	_, err := fe.FetchExtensions(context.Background(), set, []string{"linux/amd64"}, testVSCode)
	if err == nil || !strings.Contains(err.Error(), "not compatible with Code 1.100.3") || !strings.Contains(err.Error(), f.OpenVSXURL()) {
		t.Fatalf("err = %v", err)
	}
	assertCacheClean(t, c, nil)
}

// Two OS processes fetch the same set into one cache at once.
func TestFetchTwoProcesses(t *testing.T) {
	builds := loadBuilds(t)
	f := gallerytest.New(builds)
	defer f.Close()
	// Slow the downloads a little so the processes overlap.
	dir := t.TempDir()
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessFetch$", "-test.v")
			cmd.Env = append(os.Environ(), "IMAGECTL_HELPER_FETCH=1", "HELPER_CACHE="+dir,
				"HELPER_MKT="+f.MarketplaceURL(), "HELPER_OVSX="+f.OpenVSXURL())
			cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
			errs[i] = cmd.Run()
		}()
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil || !strings.Contains(outs[i].String(), "HELPER OK") {
			t.Errorf("process %d: %v\n%s", i, errs[i], outs[i].String())
		}
	}
	c, _ := cache.Open(dir)
	assertCacheClean(t, c, fullListing)
}

func TestHelperProcessFetch(t *testing.T) {
	if os.Getenv("IMAGECTL_HELPER_FETCH") != "1" {
		t.Skip("helper process for TestFetchTwoProcesses (runs only when re-executed by it)")
	}
	builds := loadBuilds(t)
	c, err := cache.Open(os.Getenv("HELPER_CACHE"))
	if err != nil {
		t.Fatal(err)
	}
	hc := httpx.New(httpx.WithBackoff(10*time.Millisecond, 50*time.Millisecond))
	fe := extensions.NewFetcher(c,
		extensions.WithSource("marketplace", marketplace.New(marketplace.WithBaseURL(os.Getenv("HELPER_MKT")), marketplace.WithHTTPClient(hc))),
		extensions.WithSource("openvsx", openvsx.New(openvsx.WithBaseURL(os.Getenv("HELPER_OVSX")), openvsx.WithHTTPClient(hc))))
	for range 5 { // repeat so the two processes really race on the same files
		got, err := fe.FetchExtensions(context.Background(), testSet(t, builds, true), platforms, testVSCode)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			if g.SHA256 != buildOf(t, builds, g.ID, g.Version, g.TargetPlatform).SHA256() {
				t.Fatalf("wrong digest %+v", g)
			}
		}
		// Drop the blobs so the next round downloads and renames again.
		for _, b := range mustBlobs(t, c) {
			os.Remove(c.BlobPath(b))
		}
	}
	if _, err := fe.FetchExtensions(context.Background(), testSet(t, builds, true), platforms, testVSCode); err != nil {
		t.Fatal(err)
	}
	fmt.Println("HELPER OK")
}

func mustBlobs(t *testing.T, c *cache.Cache) []string {
	b, err := c.Blobs()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var _ = http.StatusOK

// dnsFailure answers every request as a resolver that knows no such host.
type dnsFailure struct{ n atomic.Int32 }

func (d *dnsFailure) RoundTrip(r *http.Request) (*http.Response, error) {
	d.n.Add(1)
	return nil, &net.DNSError{Err: "no such host", Name: r.URL.Hostname(), IsNotFound: true}
}

// An unresolvable upstream fails at once: one request per file, no retry
// under either policy, and each error names its URL once.
func TestFetchNoSuchHostIsFinalAndNamesTheURLOnce(t *testing.T) {
	builds := loadBuilds(t)
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := &dnsFailure{}
	hc := httpx.New(httpx.WithTransport(tr), httpx.WithBackoff(time.Millisecond, time.Millisecond))
	fe := extensions.NewFetcher(c,
		extensions.WithSource("marketplace", marketplace.New(marketplace.WithBaseURL("http://marketplace.invalid"), marketplace.WithHTTPClient(hc))),
		extensions.WithSource("openvsx", openvsx.New(openvsx.WithBaseURL("http://openvsx.invalid"), openvsx.WithHTTPClient(hc))),
		extensions.WithParallelism(1),
	)
	set := imagespec.Set{Platforms: []string{"linux/amd64"}, CodeServer: imagespec.CodeServer{VSCode: testVSCode}, Extensions: testSet(t, builds, true)[:1]}
	_, err = fe.Fetch(context.Background(), &set)
	if err == nil {
		t.Fatal("fetch from an unresolvable host succeeded")
	}
	if got := tr.n.Load(); got != 1 {
		t.Errorf("%d requests for one file, want 1 (no such host is final): %v", got, err)
	}
	if n := strings.Count(err.Error(), "marketplace.invalid/"); n != 1 {
		t.Errorf("the error names the URL %d times, want once: %v", n, err)
	}
}
