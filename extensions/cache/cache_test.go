package cache_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/imagectl/imagectl/extensions/cache"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func open(t *testing.T) *cache.Cache {
	t.Helper()
	c, err := cache.Open(t.TempDir(), cache.WithIdentify(nil))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// put writes b under k, with the lock digest want. It does not call Abort:
// a failed Commit must clean up after itself.
func put(t *testing.T, c *cache.Cache, k cache.Key, b []byte, want string) (cache.Entry, error) {
	t.Helper()
	w, err := c.NewWriter()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	return w.Commit(cache.Entry{Key: k, URL: "http://127.0.0.1/" + k.ID}, want)
}

func mustPut(t *testing.T, c *cache.Cache, k cache.Key, b []byte) cache.Entry {
	t.Helper()
	e, err := put(t, c, k, b, digest(b))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// files lists every path under the cache root (directories with a trailing
// slash), sorted: the whole truth about what is on disk, temp files included.
func files(t *testing.T, c *cache.Cache) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(c.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.Dir(), p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

var emptyCache = []string{"blobs/", "blobs/sha256/", "index/"}

// withEmpty returns the listing of an empty cache plus paths, sorted.
func withEmpty(paths ...string) []string {
	out := append(append([]string{}, emptyCache...), paths...)
	sort.Strings(out)
	return out
}

// ctx is the context of every cache call in these tests.
var ctx = context.Background()

var (
	keyX64  = cache.Key{ID: "ms-python.debugpy", Version: "2025.10.0", TargetPlatform: "linux-x64"}
	keyArm  = cache.Key{ID: "ms-python.debugpy", Version: "2025.10.0", TargetPlatform: "linux-arm64"}
	keyUni  = cache.Key{ID: "ms-python.debugpy", Version: "2025.10.0", TargetPlatform: "universal"}
	keyRay  = cache.Key{ID: "anyscalecompute.ray-distributed-debugger", Version: "0.2.0", TargetPlatform: "universal"}
	ignPath = cmpopts.IgnoreFields(cache.Entry{}, "Path")
)

func TestPutGetRoundTrip(t *testing.T) {
	c := open(t)
	body := []byte("PK\x03\x04 a vsix for linux-x64")
	d := digest(body)
	e := mustPut(t, c, keyX64, body)
	want := cache.Entry{Key: keyX64, SHA256: d, Size: int64(len(body)), URL: "http://127.0.0.1/ms-python.debugpy", Path: c.BlobPath(d)}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("Commit entry differs (-want +got):\n%s", diff)
	}
	if e2, err := put(t, c, keyX64, body, strings.ToUpper(d)); err != nil || e2.SHA256 != d {
		t.Errorf("Commit with the lock in upper case = %+v, %v", e2, err)
	}
	if got, err := os.ReadFile(e.Path); err != nil || !bytes.Equal(got, body) {
		t.Errorf("blob = %q, %v; want %q", got, err, body)
	}
	if fi, err := os.Stat(e.Path); err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("blob mode = %v, %v; want read-only", fi.Mode(), err)
	}
	if diff := cmp.Diff(withEmpty("blobs/sha256/"+d, "index/ms-python.debugpy/", "index/ms-python.debugpy/2025.10.0/", "index/ms-python.debugpy/2025.10.0/linux-x64.json"), files(t, c)); diff != "" {
		t.Errorf("files differ (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		name   string
		key    cache.Key
		locked string
		hit    bool
	}{
		{name: "no lock", key: keyX64, hit: true},
		{name: "locked digest", key: keyX64, locked: d, hit: true},
		{name: "locked digest in upper case", key: keyX64, locked: strings.ToUpper(d), hit: true},
		{name: "id in another case", key: cache.Key{ID: "MS-Python.Debugpy", Version: "2025.10.0", TargetPlatform: "linux-x64"}, hit: true},
		{name: "another locked digest", key: keyX64, locked: digest([]byte("other")), hit: false},
		{name: "another platform", key: keyArm, hit: false},
		{name: "another version", key: cache.Key{ID: "ms-python.debugpy", Version: "2025.10.1", TargetPlatform: "linux-x64"}, hit: false},
		{name: "another extension", key: keyRay, hit: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := c.Get(ctx, tc.key, tc.locked)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.hit {
				t.Fatalf("hit = %v, want %v (%+v)", ok, tc.hit, got)
			}
			if !ok {
				if diff := cmp.Diff(cache.Entry{}, got); diff != "" {
					t.Errorf("a miss returned an entry:\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Get differs (-want +got):\n%s", diff)
			}
		})
	}
	// A second Open of the same directory sees the same content.
	c2, err := cache.Open(c.Dir(), cache.WithIdentify(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := c2.Get(ctx, keyX64, d); err != nil || !ok || got.SHA256 != d {
		t.Errorf("reopened Get = %+v, %v, %v", got, ok, err)
	}
}

// A blob with the locked digest is that file, whichever key cached it: Get
// finds it in the blob store and records it under the asked key.
func TestGetByLockedDigestAcrossKeys(t *testing.T) {
	c := open(t)
	body := []byte("PK\x03\x04 universal debugpy")
	d := digest(body)
	mustPut(t, c, keyUni, body)
	other := cache.Key{ID: "ms-python.debugpy", Version: "2025.10.0", TargetPlatform: "linux-x64"}
	if _, ok, err := c.Get(ctx, other, ""); err != nil || ok {
		t.Fatalf("unlocked Get of an unindexed key = %v, %v; want a miss", ok, err)
	}
	got, ok, err := c.Get(ctx, other, d)
	if err != nil || !ok {
		t.Fatalf("locked Get = %v, %v; want a hit", ok, err)
	}
	if diff := cmp.Diff(cache.Entry{Key: other, SHA256: d, Size: int64(len(body)), Path: c.BlobPath(d)}, got); diff != "" {
		t.Errorf("Get differs (-want +got):\n%s", diff)
	}
	// Now indexed: found without the lock too, and listed.
	if _, ok, err := c.Get(ctx, other, ""); err != nil || !ok {
		t.Errorf("unlocked Get after the locked one = %v, %v; want a hit", ok, err)
	}
	list, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]cache.Key{other, keyUni}, keysOf(list)); diff != "" {
		t.Errorf("List keys differ (-want +got):\n%s", diff)
	}
}

func keysOf(es []cache.Entry) []cache.Key {
	out := []cache.Key{}
	for _, e := range es {
		out = append(out, e.Key)
	}
	return out
}

func TestCommitRejectsWrongDigest(t *testing.T) {
	body := []byte("PK\x03\x04 the bytes that arrived")
	tests := []struct {
		name    string
		key     cache.Key
		locked  string
		errText []string
	}{
		{name: "digest of other bytes", key: keyX64, locked: digest([]byte("what the lock says")),
			errText: []string{keyX64.String(), "sha256 " + digest(body), "the lock says " + digest([]byte("what the lock says"))}},
		{name: "truncated digest", key: keyX64, locked: digest(body)[:63], errText: []string{"the lock says"}},
		{name: "bad key: path in the id", key: cache.Key{ID: "../../etc.passwd", Version: "1.0.0", TargetPlatform: "universal"}, locked: digest(body), errText: []string{"bad extension id"}},
		{name: "bad key: path in the version", key: cache.Key{ID: "a.b", Version: "../1", TargetPlatform: "universal"}, locked: digest(body), errText: []string{"bad version"}},
		{name: "bad key: path in the platform", key: cache.Key{ID: "a.b", Version: "1", TargetPlatform: "linux/x64"}, locked: digest(body), errText: []string{"bad target platform"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := open(t)
			_, err := put(t, c, tc.key, body, tc.locked)
			if err == nil {
				t.Fatal("Commit accepted it")
			}
			for _, s := range tc.errText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %v\nwant it to contain %q", err, s)
				}
			}
			// Nothing left behind: no blob, no index entry, no temp file.
			if diff := cmp.Diff(emptyCache, files(t, c)); diff != "" {
				t.Errorf("cache not clean after a rejected write (-want +got):\n%s", diff)
			}
			if _, ok, err := c.Get(ctx, keyX64, ""); ok || err != nil {
				t.Errorf("Get after a rejected write = %v, %v; want a miss", ok, err)
			}
		})
	}
}

func TestWriterAbortAndReuse(t *testing.T) {
	c := open(t)
	w, err := c.NewWriter()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("half a download"))
	if len(files(t, c)) != len(emptyCache)+1 {
		t.Fatalf("no temp file while writing: %q", files(t, c))
	}
	w.Abort()
	w.Abort() // twice is fine
	if diff := cmp.Diff(emptyCache, files(t, c)); diff != "" {
		t.Errorf("cache not clean after Abort (-want +got):\n%s", diff)
	}
	if _, err := w.Commit(cache.Entry{Key: keyX64}, ""); err == nil {
		t.Error("Commit after Abort succeeded")
	}

	w, err = c.NewWriter()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("abc"))
	if w.Size() != 3 || w.SHA256() != digest([]byte("abc")) {
		t.Errorf("Size, SHA256 = %d, %s", w.Size(), w.SHA256())
	}
	if _, err := w.Commit(cache.Entry{Key: keyX64}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(cache.Entry{Key: keyArm}, ""); err == nil || !strings.Contains(err.Error(), "already finished") {
		t.Errorf("second Commit: err = %v, want already finished", err)
	}
	w.Abort() // after Commit: a no-op that must not remove the blob
	if _, ok, err := c.Get(ctx, keyX64, ""); !ok || err != nil {
		t.Errorf("Get after Commit+Abort = %v, %v; want a hit", ok, err)
	}
	if _, ok, _ := c.Get(ctx, keyArm, ""); ok {
		t.Error("the refused second Commit indexed keyArm")
	}
}

// The blob is hashed again from disk at Commit: bytes changed in the temp
// file behind the Writer's back are caught.
func TestCommitRehashesFromDisk(t *testing.T) {
	c := open(t)
	w, err := c.NewWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	body := []byte("PK\x03\x04 good")
	w.Write(body)
	if _, err := w.File().WriteAt([]byte("X"), 0); err != nil {
		t.Fatal(err)
	}
	_, err = w.Commit(cache.Entry{Key: keyX64}, digest(body))
	if err == nil || !strings.Contains(err.Error(), "changed on disk") {
		t.Fatalf("err = %v, want changed on disk", err)
	}
	if diff := cmp.Diff(emptyCache, files(t, c)); diff != "" {
		t.Errorf("cache not clean (-want +got):\n%s", diff)
	}
}

func TestCorruptBlobIsAMissAndRemoved(t *testing.T) {
	body := []byte("PK\x03\x04 a good vsix, long enough to truncate")
	tests := []struct {
		name    string
		corrupt func(t *testing.T, p string)
	}{
		{name: "bytes flipped", corrupt: func(t *testing.T, p string) { writeOver(t, p, append([]byte("XK"), body[2:]...)) }},
		{name: "truncated", corrupt: func(t *testing.T, p string) { writeOver(t, p, body[:10]) }},
		{name: "emptied", corrupt: func(t *testing.T, p string) { writeOver(t, p, nil) }},
		{name: "grown", corrupt: func(t *testing.T, p string) { writeOver(t, p, append(body, '!')) }},
	}
	for _, tc := range tests {
		for _, via := range []string{"Get", "Get locked", "List"} {
			t.Run(tc.name+" via "+via, func(t *testing.T) {
				c := open(t)
				e := mustPut(t, c, keyX64, body)
				good := mustPut(t, c, keyRay, []byte("PK\x03\x04 another vsix"))
				tc.corrupt(t, e.Path)
				switch via {
				case "Get", "Get locked":
					locked := ""
					if via == "Get locked" {
						locked = e.SHA256
					}
					got, ok, err := c.Get(ctx, keyX64, locked)
					if err != nil || ok {
						t.Fatalf("Get = %+v, %v, %v; want a miss", got, ok, err)
					}
				case "List":
					list, err := c.List(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff([]cache.Entry{good}, list); diff != "" {
						t.Errorf("List differs (-want +got):\n%s", diff)
					}
				}
				if _, err := os.Lstat(e.Path); !os.IsNotExist(err) {
					t.Errorf("corrupt blob still on disk: %v", err)
				}
				blobs, err := c.Blobs()
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]string{good.SHA256}, blobs); diff != "" {
					t.Errorf("Blobs differ (-want +got):\n%s", diff)
				}
				// The same bytes can be cached again.
				if again := mustPut(t, c, keyX64, body); again.SHA256 != e.SHA256 {
					t.Errorf("re-put digest %s, want %s", again.SHA256, e.SHA256)
				}
				if _, ok, err := c.Get(ctx, keyX64, e.SHA256); !ok || err != nil {
					t.Errorf("Get after re-put = %v, %v", ok, err)
				}
			})
		}
	}
}

func writeOver(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMissingBlobOrDamagedIndex(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, c *cache.Cache, e cache.Entry)
	}{
		{name: "blob deleted", damage: func(t *testing.T, c *cache.Cache, e cache.Entry) { os.Remove(e.Path) }},
		{name: "index not JSON", damage: func(t *testing.T, c *cache.Cache, e cache.Entry) {
			os.WriteFile(indexFile(c, e.Key), []byte("<html>"), 0o644)
		}},
		{name: "index digest not hex", damage: func(t *testing.T, c *cache.Cache, e cache.Entry) {
			os.WriteFile(indexFile(c, e.Key), []byte(`{"id":"ms-python.debugpy","sha256":"../../victim"}`), 0o644)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := open(t)
			e := mustPut(t, c, keyX64, []byte("PK\x03\x04 x64"))
			// A file outside the blob store that a damaged index could name.
			victim := filepath.Join(c.Dir(), "victim")
			if err := os.WriteFile(victim, []byte("not a blob"), 0o644); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, c, e)
			if got, ok, err := c.Get(ctx, keyX64, ""); ok || err != nil {
				t.Errorf("Get = %+v, %v, %v; want a miss", got, ok, err)
			}
			list, err := c.List(ctx)
			if err != nil || len(list) != 0 {
				t.Errorf("List = %+v, %v; want empty", list, err)
			}
			if _, err := os.Stat(victim); err != nil {
				t.Errorf("a file outside the blob store was touched: %v", err)
			}
		})
	}
}

func indexFile(c *cache.Cache, k cache.Key) string {
	return filepath.Join(c.Dir(), "index", strings.ToLower(k.ID), k.Version, k.TargetPlatform+".json")
}

func TestGetRejectsBadInput(t *testing.T) {
	c := open(t)
	for _, tc := range []struct {
		key     cache.Key
		locked  string
		errText string
	}{
		{key: keyX64, locked: "not-a-digest", errText: "is not a hex sha256"},
		{key: keyX64, locked: "../../../../etc/passwd", errText: "is not a hex sha256"},
		{key: cache.Key{ID: "../x.y", Version: "1", TargetPlatform: "universal"}, errText: "bad extension id"},
	} {
		_, ok, err := c.Get(ctx, tc.key, tc.locked)
		if ok || err == nil || !strings.Contains(err.Error(), tc.errText) {
			t.Errorf("Get(%v, %q) = %v, %v; want an error containing %q", tc.key, tc.locked, ok, err, tc.errText)
		}
	}
}

func TestKeyCheck(t *testing.T) {
	tests := []struct {
		key cache.Key
		ok  bool
	}{
		{cache.Key{"ms-python.python", "2025.8.0", "linux-x64"}, true},
		{cache.Key{"MS-Python.Python", "2025.8.0", "linux-arm64"}, true},
		{cache.Key{"anyscalecompute.ray-distributed-debugger", "0.2.0", "universal"}, true},
		{cache.Key{"a.b", "1.0.0-pre+build_1", "alpine-x64"}, true},
		{cache.Key{"nodot", "1", "universal"}, false},
		{cache.Key{"", "1", "universal"}, false},
		{cache.Key{"a..b", "1", "universal"}, false},
		{cache.Key{"a.b..c", "1", "universal"}, false},
		{cache.Key{"a/b.c", "1", "universal"}, false},
		{cache.Key{"a.b/c", "1", "universal"}, false},
		{cache.Key{".a.b", "1", "universal"}, false},
		{cache.Key{"a.b", "", "universal"}, false},
		{cache.Key{"a.b", "..", "universal"}, false},
		{cache.Key{"a.b", "1..2", "universal"}, false},
		{cache.Key{"a.b", "1/2", "universal"}, false},
		{cache.Key{"a.b", ".1", "universal"}, false},
		{cache.Key{"a.b", "1", ""}, false},
		{cache.Key{"a.b", "1", "linux/x64"}, false},
		{cache.Key{"a.b", "1", "../x"}, false},
		{cache.Key{"a.b", "1", "Linux-x64"}, false},
	}
	for _, tc := range tests {
		if err := tc.key.Check(); (err == nil) != tc.ok {
			t.Errorf("%+v.Check() = %v, want ok=%v", tc.key, err, tc.ok)
		}
	}
}

// Each (id, version, targetPlatform) has its own index entry: caching the
// arm64 build never changes what the x64 key resolves to.
func TestIndexPerPlatform(t *testing.T) {
	c := open(t)
	bodies := map[cache.Key][]byte{
		keyX64: []byte("PK\x03\x04 linux-x64"),
		keyArm: []byte("PK\x03\x04 linux-arm64"),
		keyUni: []byte("PK\x03\x04 universal"),
		keyRay: []byte("PK\x03\x04 ray"),
	}
	var want []cache.Entry
	for _, k := range []cache.Key{keyX64, keyArm, keyUni, keyRay} {
		want = append(want, mustPut(t, c, k, bodies[k]))
	}
	for k, b := range bodies {
		got, ok, err := c.Get(ctx, k, "")
		if err != nil || !ok {
			t.Fatalf("Get(%v) = %v, %v", k, ok, err)
		}
		if got.SHA256 != digest(b) || got.Key != k {
			t.Errorf("Get(%v) = %+v, want digest %s", k, got, digest(b))
		}
	}
	// Re-caching one platform with new bytes changes only that key.
	newArm := []byte("PK\x03\x04 linux-arm64, rebuilt")
	want[1] = mustPut(t, c, keyArm, newArm)
	list, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(want, func(i, j int) bool {
		a, b := want[i], want[j]
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.TargetPlatform < b.TargetPlatform
	})
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("List differs (-want +got):\n%s", diff)
	}
	if got, _, _ := c.Get(ctx, keyX64, ""); got.SHA256 != digest(bodies[keyX64]) {
		t.Errorf("x64 key changed to %s", got.SHA256)
	}
	// The old arm64 blob stays in the store (content-addressed) and is
	// served only to whoever locks its digest.
	blobs, err := c.Blobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs) != 5 {
		t.Errorf("Blobs = %q, want 5", blobs)
	}
	if got, ok, _ := c.Get(ctx, keyArm, digest(bodies[keyArm])); !ok || got.SHA256 != digest(bodies[keyArm]) {
		t.Errorf("locked Get of the old arm64 build = %+v, %v", got, ok)
	}
}

func TestListSortedAndSkipsTemps(t *testing.T) {
	c := open(t)
	// In file-name order linux-x64-musl.json comes before linux-x64.json
	// ('-' < '.'); List orders by key.
	keys := []cache.Key{
		{ID: "b.z", Version: "1.0.0", TargetPlatform: "universal"},
		{ID: "a.z", Version: "2.0.0", TargetPlatform: "linux-x64"},
		{ID: "a.z", Version: "1.0.0", TargetPlatform: "linux-x64-musl"},
		{ID: "a.z", Version: "1.0.0", TargetPlatform: "linux-x64"},
		{ID: "a.z", Version: "1.0.0", TargetPlatform: "linux-arm64"},
	}
	for i, k := range keys {
		mustPut(t, c, k, []byte("PK\x03\x04 "+strconv.Itoa(i)))
	}
	// A writer in progress leaves a temp blob; a crashed index write leaves
	// a temp index file. Neither is listed.
	w, err := c.NewWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	w.Write([]byte("partial"))
	if err := os.WriteFile(filepath.Join(c.Dir(), "index", "a.z", "1.0.0", ".tmp-123.json"), []byte(`{"id":"tmp.tmp","version":"0","targetPlatform":"universal","sha256":"`+digest([]byte("PK\x03\x04 0"))+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []cache.Key{keys[4], keys[3], keys[2], keys[1], keys[0]}
	if diff := cmp.Diff(want, keysOf(list)); diff != "" {
		t.Errorf("List order differs (-want +got):\n%s", diff)
	}
	for _, e := range list {
		if b, err := os.ReadFile(e.Path); err != nil || digest(b) != e.SHA256 || int64(len(b)) != e.Size {
			t.Errorf("%v: Path %s does not hold the listed blob (%v)", e.Key, e.Path, err)
		}
	}
	blobs, err := c.Blobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs) != len(keys) {
		t.Errorf("Blobs = %q, want %d digests and no temp file", blobs, len(keys))
	}
	for _, b := range blobs {
		if len(b) != 64 {
			t.Errorf("Blobs lists %q", b)
		}
	}
}

// Many goroutines write the same key with the same bytes at once, while
// others read it: every Commit succeeds, every hit is intact, and the cache
// ends with one blob, one index entry, and no temp file.
func TestConcurrentWritersSameKey(t *testing.T) {
	c := open(t)
	body := bytes.Repeat([]byte("PK\x03\x04 concurrent "), 4096)
	d := digest(body)
	const writers, readers = 16, 4
	var wg sync.WaitGroup
	errs := make(chan error, writers+readers)
	start := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			w, err := c.NewWriter()
			if err != nil {
				errs <- err
				return
			}
			defer w.Abort()
			// Write in pieces so the writers interleave.
			for off := 0; off < len(body); off += 8192 {
				if _, err := w.Write(body[off:min(off+8192, len(body))]); err != nil {
					errs <- err
					return
				}
			}
			e, err := w.Commit(cache.Entry{Key: keyX64, URL: fmt.Sprint("writer ", i)}, d)
			if err != nil {
				errs <- fmt.Errorf("writer %d: %w", i, err)
			} else if e.SHA256 != d {
				errs <- fmt.Errorf("writer %d: digest %s", i, e.SHA256)
			}
		}()
	}
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 50 {
				e, ok, err := c.Get(ctx, keyX64, d)
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", i, err)
					return
				}
				if !ok {
					continue
				}
				b, err := os.ReadFile(e.Path)
				if err != nil || digest(b) != d {
					errs <- fmt.Errorf("reader %d: a hit whose blob is not intact (%v)", i, err)
					return
				}
				list, err := c.List(ctx)
				if err != nil {
					errs <- fmt.Errorf("reader %d: List: %w", i, err)
					return
				}
				if len(list) > 1 || (len(list) == 1 && list[0].SHA256 != d) {
					errs <- fmt.Errorf("reader %d: List = %+v", i, list)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assertOneEntry(t, c, keyX64, body)
}

func assertOneEntry(t *testing.T, c *cache.Cache, k cache.Key, body []byte) {
	t.Helper()
	d := digest(body)
	list, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]cache.Entry{{Key: k, SHA256: d, Size: int64(len(body))}}, list, ignPath, cmpopts.IgnoreFields(cache.Entry{}, "URL")); diff != "" {
		t.Errorf("List differs (-want +got):\n%s", diff)
	}
	wantFiles := withEmpty("blobs/sha256/"+d,
		"index/"+k.ID+"/", "index/"+k.ID+"/"+k.Version+"/", "index/"+k.ID+"/"+k.Version+"/"+k.TargetPlatform+".json")
	if diff := cmp.Diff(wantFiles, files(t, c)); diff != "" {
		t.Errorf("files differ (-want +got):\n%s", diff)
	}
}

// Several OS processes write the same key into one cache at once.
func TestConcurrentProcessesSameKey(t *testing.T) {
	dir := t.TempDir()
	const procs = 4
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, procs)
	errs := make([]error, procs)
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessCachePut$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "IMAGECTL_HELPER_CACHE_DIR="+dir)
			cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
			errs[i] = cmd.Run()
		}()
	}
	wg.Wait()
	for i := range procs {
		if errs[i] != nil || !strings.Contains(outs[i].String(), "HELPER OK") {
			t.Errorf("process %d: %v\n%s", i, errs[i], outs[i].String())
		}
	}
	c, err := cache.Open(dir, cache.WithIdentify(nil))
	if err != nil {
		t.Fatal(err)
	}
	assertOneEntry(t, c, keyArm, helperBody)
}

var helperBody = bytes.Repeat([]byte("PK\x03\x04 from a process "), 8192)

// helperCache opens the cache a helper process is given in env, or skips
// the helper when it runs as an ordinary test (not re-executed by parent).
func helperCache(t *testing.T, env, parent string) *cache.Cache {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Skipf("helper process for %s (runs only when re-executed by it)", parent)
	}
	c, err := cache.Open(dir, cache.WithIdentify(nil))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestHelperProcessCachePut(t *testing.T) {
	c := helperCache(t, "IMAGECTL_HELPER_CACHE_DIR", "TestConcurrentProcessesSameKey")
	for range 20 { // repeat so the processes really race on the same files
		if _, err := put(t, c, keyArm, helperBody, digest(helperBody)); err != nil {
			t.Fatal(err)
		}
		e, ok, err := c.Get(ctx, keyArm, digest(helperBody))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			b, err := os.ReadFile(e.Path)
			if err != nil || !bytes.Equal(b, helperBody) {
				t.Fatalf("a hit whose blob is not intact: %v", err)
			}
		}
	}
	fmt.Println("HELPER OK")
}

func TestHashFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	body := []byte("hello")
	os.WriteFile(p, body, 0o644)
	d, n, err := cache.HashFile(p)
	if err != nil || d != digest(body) || n != 5 {
		t.Errorf("HashFile = %s, %d, %v", d, n, err)
	}
	if _, _, err := cache.HashFile(p + "-missing"); err == nil {
		t.Error("HashFile of a missing file succeeded")
	}
}

func TestDefaultDirAndOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "from-env")
	t.Setenv(cache.EnvDir, dir)
	got, err := cache.DefaultDir()
	if err != nil || got != dir {
		t.Errorf("DefaultDir = %q, %v; want %q", got, err, dir)
	}
	if runtime.GOOS == "linux" {
		t.Setenv(cache.EnvDir, "")
		t.Setenv("XDG_CACHE_HOME", "/xdg-cache")
		if got, err := cache.DefaultDir(); err != nil || got != "/xdg-cache/imagectl/extensions" {
			t.Errorf("DefaultDir = %q, %v; want under XDG_CACHE_HOME", got, err)
		}
	}
	if _, err := cache.Open(""); err == nil {
		t.Error("Open(\"\") succeeded")
	}
	c, err := cache.Open(dir, cache.WithIdentify(nil))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(emptyCache, files(t, c)); diff != "" {
		t.Errorf("Open layout differs (-want +got):\n%s", diff)
	}
}

// TestGetReadsAnUnchangedBlobOnce: a build gets each file twice (fetch,
// then validation); the second Get of a blob this Cache already hashed and
// identified does not read it again while it is the same, unchanged file,
// and reads it again (finding it corrupt) once it was rewritten, even with
// its size and modification time kept.
func TestGetReadsAnUnchangedBlobOnce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("%s: the cache remembers no blob here (no inode change time read), so there is nothing to test", runtime.GOOS)
	}
	identified := 0
	c, err := cache.Open(t.TempDir(), cache.WithIdentify(func(ctx context.Context, r io.ReaderAt, size int64) (cache.Key, error) {
		identified++
		return keyX64, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("PK\x03\x04 a good vsix")
	e := mustPut(t, c, keyX64, body)
	for i := range 3 {
		if _, ok, err := c.Get(ctx, keyX64, e.SHA256); !ok || err != nil {
			t.Fatalf("Get %d = %v, %v", i, ok, err)
		}
	}
	if identified != 1 {
		t.Errorf("three Gets of an unchanged blob identified it %d times, want once", identified)
	}
	// Another file under the blob's name: read again.
	if err := os.Remove(e.Path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Path, body, 0o444); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Get(ctx, keyX64, e.SHA256); !ok || err != nil {
		t.Fatalf("Get of the blob written again = %v, %v", ok, err)
	}
	if identified != 2 {
		t.Errorf("a blob replaced by another file was identified %d times in all, want twice", identified)
	}
	// The same file rewritten in place (same size, new bytes) and its
	// modification time set back: hashed again (its inode change time
	// moved), found corrupt, removed.
	if _, ok, err := c.Get(ctx, keyX64, e.SHA256); !ok || err != nil {
		t.Fatalf("Get = %v, %v", ok, err)
	}
	before, err := os.Stat(e.Path)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a change time that differs on coarse clocks too
	writeOver(t, e.Path, append([]byte("XK"), body[2:]...))
	if err := os.Chtimes(e.Path, before.ModTime(), before.ModTime()); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Get(ctx, keyX64, e.SHA256); ok || err != nil {
		t.Fatalf("Get of the blob rewritten in place = %v, %v; want a miss", ok, err)
	}
	if _, err := os.Lstat(e.Path); !os.IsNotExist(err) {
		t.Errorf("rewritten (corrupt) blob still on disk: %v", err)
	}
}
