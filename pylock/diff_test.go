package pylock

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

// closures gives ray 2.46.0 and debugpy 1.8.14 with common on both
// platforms, plus extra per platform.
func closures(common []imagespec.PythonDist, extra map[string][]imagespec.PythonDist) Closures {
	cs := Closures{}
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		ds := append([]imagespec.PythonDist{pyDist("ray", "2.46.0", 'r'), pyDist("debugpy", "1.8.14", 'd')}, common...)
		cs[p] = append(ds, extra[p]...)
	}
	return cs
}

func TestDiff(t *testing.T) {
	base := []imagespec.PythonDist{pyDist("aiosignal", "1.3.1", 'a'), pyDist("click", "8.1.8", 'c')}
	frozen := func(v string, c byte) map[string][]imagespec.PythonDist {
		return map[string][]imagespec.PythonDist{
			"linux/amd64": {pyDist("frozenlist", v, c)},
			"linux/arm64": {pyDist("frozenlist", v, c+1)},
		}
	}
	old := closures(base, frozen("1.4.1", '1'))
	for _, tc := range []struct {
		name string
		old  Closures
		cur  Closures
		want []string
	}{
		{"same closure", old, closures(base, frozen("1.4.1", '1')), nil},
		{"a transitive bump on every platform", old,
			closures([]imagespec.PythonDist{pyDist("AioSignal", "1.3.2", 'b'), base[1]}, frozen("1.4.1", '1')),
			[]string{"aiosignal 1.3.1 -> 1.3.2"}},
		{"a platform wheel bump", old, closures(base, frozen("1.5.0", '5')),
			[]string{"frozenlist 1.4.1 -> 1.5.0"}},
		{"one platform only", old, closures(base, map[string][]imagespec.PythonDist{
			"linux/amd64": {pyDist("frozenlist", "1.4.1", '1')}, "linux/arm64": {pyDist("frozenlist", "1.5.0", '9')}}),
			[]string{"frozenlist 1.4.1 -> 1.5.0 on linux/arm64"}},
		{"added and removed", old, closures([]imagespec.PythonDist{base[0], pyDist("colorful", "0.5.6", 'e')}, frozen("1.4.1", '1')),
			[]string{"click 8.1.8 removed", "colorful 0.5.6 added"}},
		{"same version, other wheel", old, closures([]imagespec.PythonDist{base[0], pyDist("click", "8.1.8", 'f')}, frozen("1.4.1", '1')),
			[]string{"click 8.1.8 wheel changed (cccccccccccc -> ffffffffffff)"}},
		{"ray and debugpy have their own reasons", old, func() Closures {
			cs := closures(base, frozen("1.4.1", '1'))
			for p := range cs {
				cs[p][1] = pyDist("debugpy", "1.8.15", 'e')
			}
			return cs
		}(), nil},
		{"a platform locked on one side only", Closures{"linux/amd64": old["linux/amd64"]}, old, nil},
		{"one side unlocked", nil, old, nil},
		{"no locks at all", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Diff(tc.old, tc.cur)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSizesAndSummary(t *testing.T) {
	same := closures([]imagespec.PythonDist{pyDist("aiosignal", "1.3.1", 'a')}, nil)
	if got, want := Sizes(same), "3 distributions on linux/amd64, 3 on linux/arm64"; got != want {
		t.Errorf("Sizes = %q, want %q", got, want)
	}
	if got, want := Summary(same), "the same distributions and versions on every platform"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	differs := closures(nil, map[string][]imagespec.PythonDist{
		"linux/amd64": {pyDist("frozenlist", "1.4.1", '1'), pyDist("Grpcio", "1.70.0", 'g')},
		"linux/arm64": {pyDist("frozenlist", "1.5.0", '2')},
	})
	if got, want := Summary(differs), "differs by platform: frozenlist: linux/amd64 1.4.1, linux/arm64 1.5.0; grpcio: linux/amd64 1.70.0, linux/arm64 -"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}
