package cache_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/extensions/cache"
)

// A reader that found a blob corrupt must not delete the good blob another
// process renamed onto the same name between the hash and the removal.
func TestCorruptBlobReplacedMeanwhileIsKept(t *testing.T) {
	body := []byte("PK\x03\x04 a good vsix")
	other := []byte("PK\x03\x04 another vsix")
	for _, via := range []string{"Get", "Get locked", "List"} {
		t.Run(via, func(t *testing.T) {
			c := open(t)
			e := mustPut(t, c, keyX64, body)
			good := mustPut(t, c, keyRay, other)
			writeOver(t, e.Path, []byte("PK\x03\x04 damaged"))
			// A second process with the same cache directory commits the
			// good bytes just after this one found the blob corrupt.
			c2, err := cache.Open(c.Dir(), cache.WithIdentify(nil))
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			cache.SetAfterCorruptHash(c, func(p string) {
				calls++
				if p != e.Path {
					t.Errorf("hook for %s, want %s", p, e.Path)
				}
				mustPut(t, c2, keyX64, body)
			})
			switch via {
			case "Get", "Get locked":
				locked := ""
				if via == "Get locked" {
					locked = e.SHA256
				}
				// A miss is fine (what this reader hashed was bad); losing
				// the good blob is not.
				if _, _, err := c.Get(ctx, keyX64, locked); err != nil {
					t.Fatal(err)
				}
			case "List":
				if _, err := c.List(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if calls != 1 {
				t.Fatalf("hook ran %d times, want 1 (the corruption was not seen)", calls)
			}
			got, n, err := cache.HashFile(e.Path)
			if err != nil || got != e.SHA256 || n != int64(len(body)) {
				t.Fatalf("blob after the race: %s, %d bytes, %v; want the good %s", got, n, err, e.SHA256)
			}
			if _, ok, err := c.Get(ctx, keyX64, e.SHA256); err != nil || !ok {
				t.Errorf("Get after the race = %v, %v; want a hit", ok, err)
			}
			// Nothing set aside is left behind.
			want := withEmpty(
				"blobs/sha256/"+e.SHA256,
				"blobs/sha256/"+good.SHA256,
				"index/ms-python.debugpy/",
				"index/ms-python.debugpy/2025.10.0/",
				"index/ms-python.debugpy/2025.10.0/linux-x64.json",
				"index/anyscalecompute.ray-distributed-debugger/",
				"index/anyscalecompute.ray-distributed-debugger/0.2.0/",
				"index/anyscalecompute.ray-distributed-debugger/0.2.0/universal.json",
			)
			if diff := cmp.Diff(want, files(t, c)); diff != "" {
				t.Errorf("cache files differ (-want +got):\n%s", diff)
			}
		})
	}
}

// A locked Get that finds the blob by digest, while the key's index entry
// names another file, must not keep that other file's URL.
func TestLockedGetDoesNotKeepAnotherFilesURL(t *testing.T) {
	c := open(t)
	putURL := func(k cache.Key, b []byte, url string) cache.Entry {
		t.Helper()
		w, err := c.NewWriter()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		e, err := w.Commit(cache.Entry{Key: k, URL: url}, "")
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	putURL(keyX64, []byte("PK\x03\x04 old build"), "http://127.0.0.1/old-build.vsix")
	newer := putURL(keyUni, []byte("PK\x03\x04 new build"), "http://127.0.0.1/new-build.vsix")

	want := cache.Entry{Key: keyX64, SHA256: newer.SHA256, Size: newer.Size, Path: newer.Path}
	got, ok, err := c.Get(ctx, keyX64, newer.SHA256)
	if err != nil || !ok {
		t.Fatalf("locked Get = %v, %v; want a hit", ok, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("locked Get differs (-want +got):\n%s", diff)
	}
	// And what was recorded under the key says the same.
	got, ok, err = c.Get(ctx, keyX64, "")
	if err != nil || !ok {
		t.Fatalf("unlocked Get = %v, %v; want a hit", ok, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("index entry differs (-want +got):\n%s", diff)
	}
}
