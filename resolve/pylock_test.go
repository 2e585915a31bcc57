package resolve

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/pylock"
)

func catLock(platform string, ds ...imagespec.PythonDist) pylock.Lock {
	return pylock.Lock{Ray: "2.46.0", RayExtras: []string{"default"}, Debugpy: "1.8.14", Python: "3.12", Platform: platform,
		Index: "https://pypi.org/simple", Distributions: ds}
}

func catDist(name, version, file string, c byte) imagespec.PythonDist {
	return imagespec.PythonDist{Name: name, Version: version, Filename: file, URL: "https://files.example/" + file, SHA256: strings.Repeat(string(c), 64)}
}

func TestResolvePythonLocks(t *testing.T) {
	cfg := mustMatrix(t, testMatrix)
	ray := func(arch string) imagespec.PythonDist {
		return catDist("ray", "2.46.0", "ray-2.46.0-cp312-cp312-manylinux2014_"+arch+".whl", 'r')
	}
	dbg := catDist("debugpy", "1.8.14", "debugpy-1.8.14-py2.py3-none-any.whl", 'd')
	frozen := func(arch string, c byte) imagespec.PythonDist {
		return catDist("frozenlist", "1.4.1", "frozenlist-1.4.1-cp312-cp312-manylinux2014_"+arch+".whl", c)
	}
	aiosignal := catDist("aiosignal", "1.3.1", "aiosignal-1.3.1-py3-none-any.whl", 'a')

	t.Run("locked on both platforms", func(t *testing.T) {
		cat := testCatalog()
		cat.PythonLocks = []pylock.Lock{
			catLock("linux/amd64", aiosignal, dbg, frozen("x86_64", '1'), ray("x86_64")),
			catLock("linux/arm64", aiosignal, dbg, frozen("aarch64", '2'), ray("aarch64")),
			// Another Python and another debugpy: not this set's.
			func() pylock.Lock {
				l := catLock("linux/amd64", dbg, ray("x86_64"))
				l.Python = "3.11"
				return l
			}(),
			func() pylock.Lock {
				l := catLock("linux/arm64", dbg, ray("aarch64"))
				l.Debugpy = "1.8.0"
				return l
			}(),
		}
		set, ex, err := Resolve(cfg, cat, ray46())
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]imagespec.PythonDist{
			"linux/amd64": {aiosignal, dbg, frozen("x86_64", '1'), ray("x86_64")},
			"linux/arm64": {aiosignal, dbg, frozen("aarch64", '2'), ray("aarch64")},
		}
		if diff := cmp.Diff(want, set.PythonLocks); diff != "" {
			t.Errorf("set.PythonLocks (-want +got):\n%s", diff)
		}
		if s := ex.String(); !strings.Contains(s, "python closure 4 distributions on linux/amd64, 4 on linux/arm64 chosen: locked by imagectl matrix refresh with pip against https://pypi.org/simple") ||
			!strings.Contains(s, "the same distributions and versions on every platform") {
			t.Errorf("explanation lacks the closure size:\n%s", s)
		}
	})

	t.Run("missing on one platform", func(t *testing.T) {
		cat := testCatalog()
		cat.PythonLocks = []pylock.Lock{catLock("linux/amd64", aiosignal, dbg, ray("x86_64"))}
		set, ex, err := Resolve(cfg, cat, ray46())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := set.PythonLocks["linux/arm64"]; ok || len(set.PythonLocks["linux/amd64"]) != 3 {
			t.Errorf("set.PythonLocks = %+v, want amd64 only", set.PythonLocks)
		}
		if s := ex.String(); !strings.Contains(s, "python closure: the catalog locks no closure of ray[default]==2.46.0 and debugpy==1.8.14 for CPython 3.12 on linux/arm64; the build lets pip resolve") {
			t.Errorf("explanation lacks the unlocked note:\n%s", s)
		}
	})

	t.Run("none", func(t *testing.T) {
		set, _, err := Resolve(cfg, testCatalog(), ray46())
		if err != nil || set.PythonLocks != nil {
			t.Errorf("no locks: err %v, PythonLocks %+v, want nil (the lock JSON of older sets is unchanged)", err, set.PythonLocks)
		}
	})

	t.Run("blocked", func(t *testing.T) {
		cat := testCatalog()
		blocked := catLock("linux/arm64")
		blocked.Blocked = &pylock.Blocked{Distribution: "grpcio", Detail: "Could not find a version that satisfies the requirement grpcio>=1.42.0 (from ray[default]) (from versions: none)"}
		cat.PythonLocks = []pylock.Lock{catLock("linux/amd64", aiosignal, dbg, ray("x86_64")), blocked}
		_, ex, err := Resolve(cfg, cat, ray46())
		var be *BlockedClosureError
		if !errors.As(err, &be) {
			t.Fatalf("err = %v, want a BlockedClosureError", err)
		}
		for _, want := range []string{"ray[default]==2.46.0 and debugpy==1.8.14 cannot be installed for CPython 3.12 on linux/arm64: blocked by grpcio (Could not find"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		if s := ex.String(); !strings.Contains(s, "python closure none on linux/arm64 chosen: blocked by grpcio") {
			t.Errorf("explanation does not name the blocking distribution:\n%s", s)
		}
		// All skips that Ray version with the same reason.
		_, skipped, err := All(cfg, cat, nil)
		if err != nil || len(skipped) != 1 || skipped[0].Ray != "2.46.0" || !strings.Contains(skipped[0].Reason, "blocked by grpcio") {
			t.Errorf("All: err %v, skipped %+v; want 2.46.0 skipped, blocked by grpcio", err, skipped)
		}
	})
}
