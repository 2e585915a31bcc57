package release

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/imagespec"
)

func pyDist(name, version string, c byte) imagespec.PythonDist {
	f := name + "-" + version + "-py3-none-any.whl"
	return imagespec.PythonDist{Name: name, Version: version, Filename: f, URL: "https://files.example/" + f, SHA256: strings.Repeat(string(c), 64)}
}

// withLocks gives s the same closure on both platforms, plus extra per
// platform.
func withLocks(s imagespec.Set, common []imagespec.PythonDist, extra map[string][]imagespec.PythonDist) imagespec.Set {
	s.PythonLocks = map[string][]imagespec.PythonDist{}
	for _, p := range s.Platforms {
		ds := append([]imagespec.PythonDist{pyDist("ray", s.Ray, 'r'), pyDist("debugpy", s.Debugpy, 'd')}, common...)
		s.PythonLocks[p] = append(ds, extra[p]...)
	}
	return s
}

func TestDiffPythonLocks(t *testing.T) {
	a, _, _ := baseSets()
	base := []imagespec.PythonDist{pyDist("aiosignal", "1.3.1", 'a'), pyDist("click", "8.1.8", 'c')}
	frozen := func(v string, c byte) map[string][]imagespec.PythonDist {
		return map[string][]imagespec.PythonDist{
			"linux/amd64": {pyDist("frozenlist", v, c)},
			"linux/arm64": {pyDist("frozenlist", v, c+1)},
		}
	}
	old := withLocks(a, base, frozen("1.4.1", '1'))
	for _, tc := range []struct {
		name string
		old  imagespec.Set
		cur  imagespec.Set
		want []Reason
	}{
		{"same closure", old, withLocks(a, base, frozen("1.4.1", '1')), nil},
		{"a transitive bump on every platform", old,
			withLocks(a, []imagespec.PythonDist{pyDist("AioSignal", "1.3.2", 'b'), base[1]}, frozen("1.4.1", '1')),
			[]Reason{{KindPythonDep, "aiosignal 1.3.1 -> 1.3.2"}}},
		{"a platform wheel bump", old, withLocks(a, base, frozen("1.5.0", '5')),
			[]Reason{{KindPythonDep, "frozenlist 1.4.1 -> 1.5.0"}}},
		{"one platform only", old, withLocks(a, base, map[string][]imagespec.PythonDist{
			"linux/amd64": {pyDist("frozenlist", "1.4.1", '1')}, "linux/arm64": {pyDist("frozenlist", "1.5.0", '9')}}),
			[]Reason{{KindPythonDep, "frozenlist 1.4.1 -> 1.5.0 on linux/arm64"}}},
		{"added and removed", old, withLocks(a, []imagespec.PythonDist{base[0], pyDist("colorful", "0.5.6", 'e')}, frozen("1.4.1", '1')),
			[]Reason{{KindPythonDep, "click 8.1.8 removed"}, {KindPythonDep, "colorful 0.5.6 added"}}},
		{"same version, other wheel", old, withLocks(a, []imagespec.PythonDist{base[0], pyDist("click", "8.1.8", 'f')}, frozen("1.4.1", '1')),
			[]Reason{{KindPythonDep, "click 8.1.8 wheel changed (cccccccccccc -> ffffffffffff)"}}},
		{"ray and debugpy have their own reasons", old, func() imagespec.Set {
			s := a
			s.Debugpy = "1.8.15"
			return withLocks(s, base, frozen("1.4.1", '1'))
		}(), nil},
		{"published unlocked", a, old, []Reason{{KindPythonDep, "closure now locked (5 distributions on linux/amd64, 5 distributions on linux/arm64); the published image was built unlocked"}}},
		{"no locks at all", a, a, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, diffPythonLocks(tc.old, tc.cur)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A transitive bump in the index reaches exactly the entries whose locked
// closure has it, with that reason only.
func TestPlanPythonDependencyBump(t *testing.T) {
	a, b, c := baseSets()
	base := []imagespec.PythonDist{pyDist("aiosignal", "1.3.1", 'a')}
	a, b, c = withLocks(a, base, nil), withLocks(b, base, nil), withLocks(c, []imagespec.PythonDist{pyDist("click", "8.1.8", 'c')}, nil)
	w := newWorld(t, a, b, c)
	w.publishAll()
	bumped := []imagespec.PythonDist{pyDist("aiosignal", "1.3.2", 'b')}
	w.setTargets(withLocks(a, bumped, nil), withLocks(b, bumped, nil), c)
	r := []Reason{{KindPythonDep, "aiosignal 1.3.1 -> 1.3.2"}}
	want := []summary{{w.targets[0].Name(), ActionBuild, r}, {w.targets[1].Name(), ActionBuild, r}}
	if diff := cmp.Diff(want, summarize(w.plan())); diff != "" {
		t.Errorf("plan entries (-want +got):\n%s", diff)
	}
}
