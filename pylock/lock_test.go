package pylock

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/imagespec"
)

func TestKeys(t *testing.T) {
	sets := []imagespec.Set{
		{Ray: "2.46.0", RayExtras: []string{"default"}, Debugpy: "1.8.14", Python: "3.12", Platforms: []string{"linux/amd64", "linux/arm64"}},
		{Ray: "2.46.0", RayExtras: []string{"default"}, Debugpy: "1.8.14", Python: "3.12", Platforms: []string{"linux/arm64"}},
		{Ray: "2.45.0", Debugpy: "1.8.14", Python: "3.11", Platforms: []string{"linux/amd64"}},
	}
	var got []string
	for _, k := range Keys(sets) {
		got = append(got, k.String())
	}
	want := []string{
		"ray[default]==2.46.0 and debugpy==1.8.14 for CPython 3.12 on linux/amd64",
		"ray[default]==2.46.0 and debugpy==1.8.14 for CPython 3.12 on linux/arm64",
		"ray==2.45.0 and debugpy==1.8.14 for CPython 3.11 on linux/amd64",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A lock matches its key whatever the order of the extras; any other
// field differing is another key.
func TestMatches(t *testing.T) {
	l := Lock{Ray: "2.46.0", RayExtras: []string{"default", "client"}, Debugpy: "1.8.14", Python: "3.12", Platform: "linux/amd64"}
	k := Key{Ray: "2.46.0", RayExtras: []string{"client", "default"}, Debugpy: "1.8.14", Python: "3.12", Platform: "linux/amd64"}
	if !l.Matches(k) {
		t.Errorf("%+v does not match %v", l, k)
	}
	if got, want := k.Requirements(), []string{"ray[client,default]==2.46.0", "debugpy==1.8.14"}; !cmp.Equal(got, want) {
		t.Errorf("Requirements = %q, want %q", got, want)
	}
	for _, other := range []Key{
		{Ray: "2.45.0", RayExtras: k.RayExtras, Debugpy: k.Debugpy, Python: k.Python, Platform: k.Platform},
		{Ray: k.Ray, RayExtras: []string{"default"}, Debugpy: k.Debugpy, Python: k.Python, Platform: k.Platform},
		{Ray: k.Ray, RayExtras: k.RayExtras, Debugpy: "1.8.0", Python: k.Python, Platform: k.Platform},
		{Ray: k.Ray, RayExtras: k.RayExtras, Debugpy: k.Debugpy, Python: "3.11", Platform: k.Platform},
		{Ray: k.Ray, RayExtras: k.RayExtras, Debugpy: k.Debugpy, Python: k.Python, Platform: "linux/arm64"},
	} {
		if l.Matches(other) {
			t.Errorf("%+v matches %v", l, other)
		}
	}
}

func TestSortClosure(t *testing.T) {
	ds := []imagespec.PythonDist{{Name: "ray"}, {Name: "Zope.Interface"}, {Name: "aiosignal"}, {Name: "zope_event"}, {Name: "AioHTTP"}}
	SortClosure(ds)
	var got []string
	for _, d := range ds {
		got = append(got, d.Name)
	}
	if diff := cmp.Diff([]string{"AioHTTP", "aiosignal", "ray", "zope_event", "Zope.Interface"}, got); diff != "" {
		t.Errorf("by normalized name (-want +got):\n%s", diff)
	}
}
