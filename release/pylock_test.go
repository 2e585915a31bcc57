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

// Whether a closure is locked at all is release's to say; how two locked
// closures differ is pylock.Diff's (tested there), one reason each.
func TestDiffPythonLocks(t *testing.T) {
	a, _, _ := baseSets()
	old := withLocks(a, []imagespec.PythonDist{pyDist("aiosignal", "1.3.1", 'a'), pyDist("click", "8.1.8", 'c')}, nil)
	for _, tc := range []struct {
		name string
		old  imagespec.Set
		cur  imagespec.Set
		want []Reason
	}{
		{"same closure", old, old, nil},
		{"a bump and a removal", old, withLocks(a, []imagespec.PythonDist{pyDist("AioSignal", "1.3.2", 'b')}, nil),
			[]Reason{{KindPythonDep, "aiosignal 1.3.1 -> 1.3.2"}, {KindPythonDep, "click 8.1.8 removed"}}},
		{"published unlocked", a, old, []Reason{{KindPythonDep, "closure now locked (4 distributions on linux/amd64, 4 on linux/arm64); the published image was built unlocked"}}},
		{"no longer locked", old, a, []Reason{{KindPythonDep, "closure no longer locked (the catalog records none); the published image had 4 distributions on linux/amd64, 4 on linux/arm64"}}},
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
