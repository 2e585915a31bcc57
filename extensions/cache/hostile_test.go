package cache_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/extensions/cache"
)

// within runs f and fails the test if it does not return within d (instead
// of hanging the test binary, as a read of /dev/zero or a FIFO would).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v (hangs on a hostile cache file)", what, d)
	}
}

// A blob or index entry replaced by a symbolic link to /dev/zero, a FIFO,
// a directory or a file larger than any download is never read: it is a
// miss (the blob is removed), at once.
func TestNonRegularCacheFilesAreNeverRead(t *testing.T) {
	body := []byte("PK\x03\x04 a good vsix")
	replace := map[string]func(t *testing.T, p string){
		"symlink to /dev/zero": func(t *testing.T, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		},
		"FIFO": func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"directory": func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		},
		"sparse file over the limit": func(t *testing.T, p string) {
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(64 << 20); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, fn := range replace {
		for _, what := range []string{"blob", "index entry"} {
			for _, via := range []string{"Get", "Get locked", "List"} {
				if what == "index entry" && via == "Get locked" {
					continue // a locked Get does not read the index entry
				}
				t.Run(name+"/"+what+"/"+via, func(t *testing.T) {
					c, err := cache.Open(t.TempDir(), cache.WithIdentify(nil), cache.WithMaxBlobBytes(1<<20))
					if err != nil {
						t.Fatal(err)
					}
					e := mustPut(t, c, keyX64, body)
					p := e.Path
					if what == "index entry" {
						p = indexFile(c, keyX64)
					}
					if err := os.Chmod(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
					fn(t, p)
					within(t, 5*time.Second, via, func() {
						switch via {
						case "Get", "Get locked":
							locked := ""
							if via == "Get locked" {
								locked = e.SHA256
							}
							got, ok, err := c.Get(ctx, keyX64, locked)
							if ok || err != nil {
								t.Errorf("Get = %+v, %v, %v; want a miss", got, ok, err)
							}
						case "List":
							list, err := c.List(ctx)
							if len(list) != 0 || err != nil {
								t.Errorf("List = %+v, %v; want nothing listed", list, err)
							}
						}
					})
					if what == "blob" {
						if _, err := os.Lstat(p); !os.IsNotExist(err) {
							t.Errorf("the %s is still in the blob store: %v", name, err)
						}
					}
					// The same bytes can be cached and found again.
					mustPut(t, c, keyX64, body)
					if _, ok, err := c.Get(ctx, keyX64, ""); !ok || err != nil {
						t.Errorf("Get after re-put = %v, %v", ok, err)
					}
				})
			}
		}
	}
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "vsix", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An unpinned index entry edited to name another valid blob (another
// extension, version or platform) is not a hit: the blob's manifest must
// say the key's id, version and target platform.
func TestHitChecksTheBlobIdentity(t *testing.T) {
	python := cache.Key{ID: "ms-python.python", Version: "2025.8.0", TargetPlatform: "linux-x64"}
	for _, tc := range []struct {
		name  string
		other cache.Key
		body  string
		is    string
	}{
		{"another extension", cache.Key{ID: "ms-python.debugpy", Version: "2025.10.0", TargetPlatform: "linux-x64"}, "ms-python.debugpy-2025.10.0@linux-x64.vsix", "ms-python.debugpy@2025.10.0 (linux-x64)"},
		{"an older version", cache.Key{ID: "ms-python.python", Version: "2025.6.1", TargetPlatform: "linux-x64"}, "ms-python.python-2025.6.1@linux-x64.vsix", "ms-python.python@2025.6.1 (linux-x64)"},
		{"another platform", cache.Key{ID: "ms-python.python", Version: "2025.8.0", TargetPlatform: "linux-arm64"}, "ms-python.python-2025.8.0@linux-arm64.vsix", "ms-python.python@2025.8.0 (linux-arm64)"},
	} {
		for _, via := range []string{"Get", "Get locked", "List"} {
			t.Run(tc.name+"/"+via, func(t *testing.T) {
				var warn bytes.Buffer
				c, err := cache.Open(t.TempDir(), cache.WithWarnings(&warn))
				if err != nil {
					t.Fatal(err)
				}
				good := mustPut(t, c, python, fixture(t, "ms-python.python-2025.8.0@linux-x64.vsix"))
				other := mustPut(t, c, tc.other, fixture(t, tc.body))
				// Edit python's index entry to name the other blob.
				b, err := os.ReadFile(indexFile(c, python))
				if err != nil {
					t.Fatal(err)
				}
				writeOver(t, indexFile(c, python), bytes.ReplaceAll(b, []byte(good.SHA256), []byte(other.SHA256)))
				switch via {
				case "Get":
					got, ok, err := c.Get(ctx, python, "")
					if ok || err != nil {
						t.Fatalf("Get = %+v, %v, %v; want a miss", got, ok, err)
					}
					if _, err := os.Stat(indexFile(c, python)); !os.IsNotExist(err) {
						t.Errorf("the lying index entry is still there: %v", err)
					}
				case "Get locked":
					// The lock names the other file for this key: an error
					// that says what the file is, not a hit.
					_, ok, err := c.Get(ctx, python, other.SHA256)
					if ok || err == nil || !strings.Contains(err.Error(), tc.is) {
						t.Fatalf("Get locked = %v, %v; want an error saying the file is %s", ok, err, tc.is)
					}
				case "List":
					list, err := c.List(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff([]cache.Key{tc.other}, keysOf(list)); diff != "" {
						t.Errorf("List (-want +got):\n%s", diff)
					}
				}
				if via != "Get locked" && !strings.Contains(warn.String(), "which is "+tc.is) {
					t.Errorf("warnings %q do not say what the blob is", warn.String())
				}
				// The other key's own entry is untouched.
				if e, ok, err := c.Get(ctx, tc.other, ""); !ok || err != nil || e.SHA256 != other.SHA256 {
					t.Errorf("Get(%v) = %+v, %v, %v", tc.other, e, ok, err)
				}
			})
		}
	}
}

// A password or token in a download URL never reaches the index (a 0644
// file) nor the returned entry.
func TestIndexNeverStoresUserinfo(t *testing.T) {
	c := open(t)
	w, err := c.NewWriter()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("PK\x03\x04 x"))
	e, err := w.Commit(cache.Entry{Key: keyX64, URL: "http://user:s3cret@127.0.0.1:1/vspackage"}, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(indexFile(c, keyX64))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("s3cret")) || bytes.Contains(b, []byte("user")) || strings.Contains(e.URL, "s3cret") {
		t.Errorf("userinfo persisted: index %s, entry URL %s", b, e.URL)
	}
	if got, _, _ := c.Get(ctx, keyX64, ""); got.URL != "http://redacted@127.0.0.1:1/vspackage" {
		t.Errorf("URL from the index = %q", got.URL)
	}
}

func age(t *testing.T, p string, d time.Duration) {
	t.Helper()
	old := time.Now().Add(-d)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

// Sweep removes only old temporary files nobody holds: a live writer's file
// stays whatever its age, a fresh one stays, a stale one goes.
func TestSweepStaleTemps(t *testing.T) {
	c := open(t)
	live, err := c.NewWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	live.Write([]byte("still downloading"))
	age(t, live.File().Name(), 48*time.Hour)
	blobs := filepath.Join(c.Dir(), "blobs", "sha256")
	stale := filepath.Join(blobs, ".tmp-stale")
	fresh := filepath.Join(blobs, ".tmp-fresh")
	staleIdx := filepath.Join(c.Dir(), "index", "a.b", "1", ".tmp-idx")
	notTemp := filepath.Join(blobs, strings.Repeat("0", 64))
	for _, p := range []string{stale, fresh, staleIdx, notTemp} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{stale, staleIdx, notTemp} {
		age(t, p, 48*time.Hour)
	}
	removed, err := c.Sweep(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(removed)
	if diff := cmp.Diff([]string{stale, staleIdx}, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	for _, p := range []string{live.File().Name(), fresh, notTemp} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	// The live writer still commits.
	if _, err := live.Commit(cache.Entry{Key: keyX64}, ""); err != nil {
		t.Fatal(err)
	}
}

// A process killed (SIGKILL) mid-download leaves its temp file; while it
// lives, Open (which sweeps) leaves it alone even when it is old; once it
// is dead, Open removes it.
func TestOpenSweepsWhatAKilledProcessLeft(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessLiveWriter$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "IMAGECTL_HELPER_LIVE_WRITER="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var tmp string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "WRITING "); ok {
			tmp = p
			break
		}
	}
	if tmp == "" {
		t.Fatal("helper did not start writing")
	}
	go io.Copy(io.Discard, stdout)
	age(t, tmp, 48*time.Hour)
	if _, err := cache.Open(dir, cache.WithIdentify(nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tmp); err != nil {
		t.Fatalf("Open removed a live process's temp file: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := os.Lstat(tmp); err != nil {
		t.Fatalf("the killed process's temp file is gone before any sweep: %v", err)
	}
	if _, err := cache.Open(dir, cache.WithIdentify(nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
		t.Errorf("Open kept %s, left by a killed process: %v", tmp, err)
	}
}

func TestHelperProcessLiveWriter(t *testing.T) {
	c := helperCache(t, "IMAGECTL_HELPER_LIVE_WRITER", "TestOpenSweepsWhatAKilledProcessLeft")
	w, err := c.NewWriter()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("PK\x03\x04 half a download"))
	fmt.Println("WRITING " + w.File().Name())
	io.Copy(io.Discard, os.Stdin) // until killed
	_ = context.Background
}
