package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/pylock"
)

func hex64(c byte) string { return strings.Repeat(string(c), 64) }

func dist(name, version string, c byte) imagespec.PythonDist {
	f := name + "-" + version + "-py3-none-any.whl"
	return imagespec.PythonDist{Name: name, Version: version, Filename: f, URL: "https://files.example/" + f, SHA256: hex64(c)}
}

func validLock(platform string) pylock.Lock {
	return pylock.Lock{Ray: "2.46.0", RayExtras: []string{"default"}, Debugpy: "1.8.14", Python: "3.12", Platform: platform,
		Index: "https://pypi.org/simple", Distributions: []imagespec.PythonDist{dist("aiosignal", "1.3.1", 'a'), dist("debugpy", "1.8.14", 'b'), dist("ray", "2.46.0", 'c')}}
}

// writeWithLocks writes a catalog with locks, encoded as is (no
// validation on the way), so that broken locks reach Load.
func writeWithLocks(t *testing.T, locks []pylock.Lock) string {
	t.Helper()
	b, err := json.MarshalIndent(&catalog.Catalog{SchemaVersion: catalog.SchemaVersion, Describes: "2025-07-15", PythonLocks: locks}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadPythonLocks(t *testing.T) {
	ok := []pylock.Lock{validLock("linux/arm64"), validLock("linux/amd64")}
	blocked := validLock("linux/arm64")
	blocked.Distributions, blocked.Blocked = nil, &pylock.Blocked{Distribution: "grpcio", Detail: "Could not find a version that satisfies the requirement grpcio (from versions: none)"}
	c, err := catalog.Load(writeWithLocks(t, append(ok, func() pylock.Lock { b := blocked; b.Python = "3.11"; return b }())))
	if err != nil {
		t.Fatalf("valid locks: %v", err)
	}
	if len(c.PythonLocks) != 3 || c.PythonLocks[0].Python != "3.11" || c.PythonLocks[1].Platform != "linux/amd64" {
		t.Errorf("locks not normalized (python, then platform): %+v", c.PythonLocks)
	}
	mod := func(f func(*pylock.Lock)) []pylock.Lock {
		l := validLock("linux/amd64")
		l.Distributions = append([]imagespec.PythonDist(nil), l.Distributions...)
		f(&l)
		return []pylock.Lock{l}
	}
	for _, tc := range []struct {
		name  string
		locks []pylock.Lock
		want  string
	}{
		{"bad python", mod(func(l *pylock.Lock) { l.Python = "3" }), `pythonLocks[0].python: "3": want a CPython minor version`},
		{"bad platform", mod(func(l *pylock.Lock) { l.Platform = "linux/s390x" }), `pythonLocks[0].platform: "linux/s390x": want linux/amd64 or linux/arm64`},
		{"bad index", mod(func(l *pylock.Lock) { l.Index = "pypi.org/simple" }), `pythonLocks[0].index: "pypi.org/simple": want an absolute http(s) URL`},
		{"no ray version", mod(func(l *pylock.Lock) { l.Ray = "" }), `pythonLocks[0].ray: "": want a version`},
		{"bad extra", mod(func(l *pylock.Lock) { l.RayExtras = []string{"a b"} }), `pythonLocks[0].rayExtras[0]: "a b": want an extra name`},
		{"empty closure", mod(func(l *pylock.Lock) { l.Distributions = nil }), "pythonLocks[0].distributions: empty and not blocked"},
		{"blocked with closure", mod(func(l *pylock.Lock) { l.Blocked = &pylock.Blocked{Detail: "x"} }), "pythonLocks[0].blocked: set together with distributions"},
		{"blocked without detail", mod(func(l *pylock.Lock) {
			l.Distributions, l.Blocked = nil, &pylock.Blocked{Distribution: "grpcio"}
		}), "pythonLocks[0].blocked.detail: empty"},
		{"short sha256", mod(func(l *pylock.Lock) { l.Distributions[0].SHA256 = "abc" }), `pythonLocks[0].distributions[0].sha256: "abc": want 64 lowercase hex digits`},
		{"upper-case sha256", mod(func(l *pylock.Lock) { l.Distributions[0].SHA256 = strings.ToUpper(hex64('a')) }), "pythonLocks[0].distributions[0].sha256: \"AAAA"},
		{"not a wheel", mod(func(l *pylock.Lock) { l.Distributions[0].Filename = "aiosignal-1.3.1.tar.gz" }), "pythonLocks[0].distributions[0].filename: \"aiosignal-1.3.1.tar.gz\": want a wheel file name"},
		{"wheel of another project", mod(func(l *pylock.Lock) { l.Distributions[0].Filename = "click-8.1.8-py3-none-any.whl" }), "pythonLocks[0].distributions[0].filename: \"click-8.1.8-py3-none-any.whl\": not a wheel of aiosignal 1.3.1"},
		{"bad url", mod(func(l *pylock.Lock) { l.Distributions[0].URL = "/files/x.whl" }), `pythonLocks[0].distributions[0].url: "/files/x.whl": want an absolute http(s) URL`},
		{"bad name", mod(func(l *pylock.Lock) { l.Distributions[0].Name = "-x" }), `pythonLocks[0].distributions[0].name: "-x": want a distribution name`},
		{"no version", mod(func(l *pylock.Lock) { l.Distributions[0].Version = "" }), `pythonLocks[0].distributions[0].version: "": want a version`},
		{"twice", mod(func(l *pylock.Lock) {
			l.Distributions = append(l.Distributions, dist("AioSignal", "1.3.2", 'd'))
		}), "pythonLocks[0].distributions[3].name: duplicate of pythonLocks[0].distributions[0]"},
		{"no debugpy", mod(func(l *pylock.Lock) {
			l.Distributions = l.Distributions[:1:1]
			l.Distributions = append(l.Distributions, dist("ray", "2.46.0", 'c'))
		}), "pythonLocks[0].distributions: has no debugpy"},
		{"other ray", mod(func(l *pylock.Lock) { l.Distributions[2] = dist("ray", "2.47.0", 'c') }), "pythonLocks[0].distributions[2].version: \"2.47.0\": the closure's ray, want the locked ray 2.46.0"},
		{"duplicate key", []pylock.Lock{validLock("linux/amd64"), validLock("linux/amd64")}, "pythonLocks[1]: duplicate of pythonLocks[0]"},
		{"index with password", mod(func(l *pylock.Lock) { l.Index = "https://ci:s3cret@pypi.example/simple" }), `pythonLocks[0].index: "https://redacted@pypi.example/simple": want a URL without user or password`},
		{"wheel url with user", mod(func(l *pylock.Lock) { l.Distributions[0].URL = "https://ci@files.example/x.whl" }), `pythonLocks[0].distributions[0].url: "https://redacted@files.example/x.whl": want a URL without user or password`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := catalog.Load(writeWithLocks(t, tc.locks))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// fakeLocker answers from a table keyed by "python platform"; it records
// the requests.
type fakeLocker struct {
	mu     sync.Mutex
	reqs   []pylock.Request
	answer func(pylock.Request) ([]imagespec.PythonDist, error)
}

func (f *fakeLocker) Lock(_ context.Context, r pylock.Request) ([]imagespec.PythonDist, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	f.mu.Unlock()
	return f.answer(r)
}

func TestLockPython(t *testing.T) {
	key := func(py, p string) pylock.Key {
		return pylock.Key{Ray: "2.46.0", RayExtras: []string{"default"}, Debugpy: "1.8.14", Python: py, Platform: p}
	}
	closure := []imagespec.PythonDist{dist("ray", "2.46.0", 'c'), dist("Debugpy", "1.8.14", 'b'), dist("aiosignal", "1.3.1", 'a')}
	l := &fakeLocker{answer: func(r pylock.Request) ([]imagespec.PythonDist, error) {
		if r.Platform == "linux/arm64" && r.Python == "3.12" {
			return nil, &pylock.BlockedError{Blocked: pylock.Blocked{Distribution: "grpcio", Detail: "no wheel"}}
		}
		return append([]imagespec.PythonDist(nil), closure...), nil
	}}
	old := validLock("linux/amd64")
	old.Distributions[0] = dist("aiosignal", "1.3.0", 'f')
	other := validLock("linux/amd64")
	other.Ray = "2.45.0"
	other.Distributions[2] = dist("ray", "2.45.0", 'c')
	c := &catalog.Catalog{PythonLocks: []pylock.Lock{old, other}}
	keys := []pylock.Key{key("3.12", "linux/amd64"), key("3.12", "linux/arm64"), key("3.12", "linux/amd64"), key("3.11", "linux/amd64")}
	if err := catalog.LockPython(context.Background(), c, keys, "https://pypi.org/simple", l, 2); err != nil {
		t.Fatal(err)
	}
	if len(l.reqs) != 3 {
		t.Errorf("%d pip runs, want 3 (the duplicate key locked once)", len(l.reqs))
	}
	for _, r := range l.reqs {
		if diff := cmp.Diff([]string{"ray[default]==2.46.0", "debugpy==1.8.14"}, r.Requirements); diff != "" || r.Index != "https://pypi.org/simple" {
			t.Errorf("request %+v: requirements (-want +got) %s, index %s", r, diff, r.Index)
		}
	}
	sorted := []imagespec.PythonDist{closure[2], closure[1], closure[0]}
	lock := func(py, p string) pylock.Lock {
		return pylock.Lock{Ray: "2.46.0", RayExtras: []string{"default"}, Debugpy: "1.8.14", Python: py, Platform: p, Index: "https://pypi.org/simple", Distributions: sorted}
	}
	blocked := lock("3.12", "linux/arm64")
	blocked.Distributions, blocked.Blocked = nil, &pylock.Blocked{Distribution: "grpcio", Detail: "no wheel"}
	want := []pylock.Lock{lock("3.11", "linux/amd64"), lock("3.12", "linux/amd64"), blocked, other}
	if diff := cmp.Diff(want, c.PythonLocks); diff != "" {
		t.Errorf("locks (-want +got); the old lock of the same key replaced, the other Ray kept:\n%s", diff)
	}

	// Any other error fails the call and leaves the catalog as it was.
	before := fmt.Sprint(c.PythonLocks)
	failing := &fakeLocker{answer: func(r pylock.Request) ([]imagespec.PythonDist, error) {
		if r.Python == "3.11" {
			return nil, errors.New("index unreachable")
		}
		return append([]imagespec.PythonDist(nil), closure...), nil
	}}
	err := catalog.LockPython(context.Background(), c, keys, "https://pypi.org/simple", failing, 1)
	if err == nil || !strings.Contains(err.Error(), "index unreachable") || !strings.Contains(err.Error(), "CPython 3.11 on linux/amd64") {
		t.Errorf("err = %v, want the locker's error naming the closure", err)
	}
	if fmt.Sprint(c.PythonLocks) != before {
		t.Error("a failed LockPython changed the catalog")
	}
	// A closure that is not a valid lock (ray missing) is an error too.
	bad := &fakeLocker{answer: func(pylock.Request) ([]imagespec.PythonDist, error) {
		return []imagespec.PythonDist{dist("debugpy", "1.8.14", 'b'), dist("aiosignal", "1.3.1", 'a')}, nil
	}}
	if err := catalog.LockPython(context.Background(), &catalog.Catalog{}, keys[:1], "https://pypi.org/simple", bad, 1); err == nil || !strings.Contains(err.Error(), "has no ray") {
		t.Errorf("closure without ray: err = %v", err)
	}
}

// An index given with user and password reaches pip as it is, but neither
// the catalog nor the file it is written to holds the credentials.
func TestLockPythonIndexWithCredentials(t *testing.T) {
	const index = "http://ci:s3cret-pw@127.0.0.1:1/simple"
	l := &fakeLocker{answer: func(pylock.Request) ([]imagespec.PythonDist, error) {
		ds := []imagespec.PythonDist{dist("ray", "2.46.0", 'c'), dist("debugpy", "1.8.14", 'b')}
		for i := range ds {
			ds[i].URL = "http://ci:s3cret-pw@127.0.0.1:1/files/" + ds[i].Filename
		}
		return ds, nil
	}}
	c := &catalog.Catalog{SchemaVersion: catalog.SchemaVersion, Describes: "2025-07-15"}
	keys := []pylock.Key{
		{Ray: "2.46.0", Debugpy: "1.8.14", Python: "3.12", Platform: "linux/amd64"},
		{Ray: "2.46.0", Debugpy: "1.8.14", Python: "3.12", Platform: "linux/arm64"},
	}
	if err := catalog.LockPython(context.Background(), c, keys, index, l, 1); err != nil {
		t.Fatal(err)
	}
	for _, r := range l.reqs {
		if r.Index != index {
			t.Errorf("pip was asked against %q, want the index with its credentials %q", r.Index, index)
		}
	}
	var got []string
	for _, lk := range c.PythonLocks {
		got = append(got, lk.Index)
		for _, d := range lk.Distributions {
			got = append(got, d.URL)
		}
	}
	want := []string{
		"http://127.0.0.1:1/simple", "http://127.0.0.1:1/files/debugpy-1.8.14-py3-none-any.whl", "http://127.0.0.1:1/files/ray-2.46.0-py3-none-any.whl",
		"http://127.0.0.1:1/simple", "http://127.0.0.1:1/files/debugpy-1.8.14-py3-none-any.whl", "http://127.0.0.1:1/files/ray-2.46.0-py3-none-any.whl",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded index and wheel URLs (-want +got):\n%s", diff)
	}
	p := filepath.Join(t.TempDir(), "catalog.json")
	if err := catalog.Write(p, c); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cret-pw") || strings.Contains(string(b), "ci@") {
		t.Errorf("%s holds the index credentials:\n%s", p, b)
	}
}
