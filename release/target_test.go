package release

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/imagespec"
)

// TestNewer orders sets by Ray as PEP 440 (the semver comparator this
// replaced fell back to comparing strings for 2.10.0rc1 and 2.46.0.post1),
// then code-server as semver, then Python by minor.
func TestNewer(t *testing.T) {
	set := func(ray, cs, py string) imagespec.Set {
		return imagespec.Set{Ray: ray, CodeServer: imagespec.CodeServer{Version: cs}, Python: py}
	}
	tests := []struct {
		name string
		a, b imagespec.Set
		want bool
	}{
		{"ray minor by number", set("2.10.0", "4.101.2", "3.12"), set("2.9.3", "4.101.2", "3.12"), true},
		{"ray pre-release of a later minor", set("2.10.0rc1", "4.101.2", "3.12"), set("2.9.0", "4.101.2", "3.12"), true}, // old: false
		{"ray post-release", set("2.46.0.post1", "4.101.2", "3.12"), set("2.46.0", "4.101.2", "3.12"), true},
		{"ray post-releases by number", set("2.46.0.post10", "4.101.2", "3.12"), set("2.46.0.post9", "4.101.2", "3.12"), true}, // old: false
		{"ray dev before pre-release", set("2.47.0a1", "4.101.2", "3.12"), set("2.47.0.dev0", "4.101.2", "3.12"), true},
		{"code-server breaks a tie", set("2.46.0", "4.101.2", "3.11"), set("2.46.0", "4.99.4", "3.12"), true},
		{"python breaks a tie", set("2.46.0", "4.101.2", "3.12"), set("2.46.0", "4.101.2", "3.9"), true},
		{"equal", set("2.46.0", "4.101.2", "3.12"), set("2.46.0", "4.101.2", "3.12"), false},
	}
	got := map[string]bool{}
	want := map[string]bool{}
	for _, tc := range tests {
		got[tc.name], want[tc.name] = newer(tc.a, tc.b), tc.want
		if tc.want && newer(tc.b, tc.a) {
			t.Errorf("%s: newer holds both ways", tc.name)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("newer (-want +got):\n%s", d)
	}
}
