package pep440

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The cases marked "old:" are ones the hand-written code this package
// replaced (catalog.ParseVersion mapping PEP 440 onto semver, Masterminds
// constraints, a hand-written requires-python evaluator) got wrong.
func TestCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"2.46.0", "2.47.0", -1},
		{"2.47.0rc1", "2.47.0", -1},
		{"1.8.0.dev0", "1.8.0a1", -1},       // old: 1 (dev sorted after a)
		{"1.8.0rc1.dev1", "1.8.0rc1", -1},   // old: 1
		{"1.8.0.post9", "1.8.0.post10", -1}, // old: 1 (by string)
		{"1.8.0", "1.8.0.post1", -1},
		{"1!1.0", "2.0", 1},     // old: -1 (epoch unparseable)
		{"1.2.3.4", "1.2.3", 1}, // old: -1 (four numbers unparseable)
		{"1.10", "1.9.5", 1},
		{"1.0+local", "1.0", 1},
		{"1.8", "1.8.0", -1}, // equal versions: by string, for a total order
		{"not a version", "1.0", -1},
		{"1.0", "not a version", 1},
	}
	for _, tc := range tests {
		if got := Compare(tc.a, tc.b); got != tc.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	vs := []string{"1.8.0", "1.8.0.post10", "1.8.0rc1", "1.8.0.dev0", "1.8.0a1", "1.8.0.post9", "1.8.0rc1.dev1", "1!0.1"}
	slices.SortFunc(vs, Compare)
	want := []string{"1.8.0.dev0", "1.8.0a1", "1.8.0rc1.dev1", "1.8.0rc1", "1.8.0", "1.8.0.post9", "1.8.0.post10", "1!0.1"}
	if d := cmp.Diff(want, vs); d != "" {
		t.Errorf("sorted (-want +got):\n%s", d)
	}
}

func TestIsPreRelease(t *testing.T) {
	got := map[string]bool{}
	for _, v := range []string{"2.46.0", "2.47.0rc1", "1.8.0.dev0", "1.8.0.post1", "1.0b2.post3", "bogus"} {
		got[v] = IsPreRelease(v)
	}
	want := map[string]bool{"2.46.0": false, "2.47.0rc1": true, "1.8.0.dev0": true, "1.8.0.post1": false, "1.0b2.post3": true, "bogus": true}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("IsPreRelease (-want +got):\n%s", d)
	}
}

func TestSpecifierAllows(t *testing.T) {
	tests := []struct {
		spec, v string
		want    bool
	}{
		{">=1.8.0", "1.8.0", true},
		{">=1.8.0", "1.7.1", false},
		{">=1.8.0", "1.8.0.post1", true},
		{">=1.8.0", "1.9.0rc1", false}, // PEP 440: pre-releases only when named
		{">=1.9.0rc1", "1.9.0rc2", true},
		{"*", "2.46.0", true},
		{"*", "2.47.0rc1", false},
		{"==1.8.0", "1.8.0.post1", false}, // old: "==" rejected ("=" admitted it)
		{"<=1.8.0", "1.8.0.post1", false}, // old: true
		{"!=1.8.0", "1.8.0.post1", true},  // old: false
		{">1.8.0", "1.8.0.post1", false},
		{"==2.46.*", "2.46.3", true},
		{"!=2.46.*", "2.46.3", false},
		{"~=2.46.0", "2.46.9", true},
		{"~=2.46.0", "2.47.0", false},
		{"~=2.46", "2.99", true},
		{">=2.39.0, <3, !=2.45.0", "2.45.0", false},
		{">=2.39.0, <3, !=2.45.0", "2.46.0", true},
		{"<3", "3.0.dev0", false},
		{">=1!0", "2.46.0", false},
	}
	for _, tc := range tests {
		s, err := ParseSpecifier(tc.spec)
		if err != nil {
			t.Errorf("ParseSpecifier(%q): %v", tc.spec, err)
			continue
		}
		v, err := Parse(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Allows(v); got != tc.want {
			t.Errorf("%q allows %s = %v, want %v", tc.spec, tc.v, got, tc.want)
		}
	}
}

func TestParseSpecifierErrors(t *testing.T) {
	for _, bad := range []string{"", "3.8", ">=three", ">=3.8 || <2", ">=3.8 <4", "=3.8", "~=3", ">=3.8.*", "<=1.0+local", "==1.0.dev1.*", ">=3.8,", "^1.8"} {
		if s, err := ParseSpecifier(bad); err == nil {
			t.Errorf("ParseSpecifier(%q) = %v, want an error", bad, s)
		}
	}
}

func TestPythonSatisfies(t *testing.T) {
	tests := []struct {
		spec, py string
		want     bool
	}{
		{"", "3.12", true},
		{">=3.9", "3.12", true},
		{">=3.9.5", "3.9", true},
		{"<3.12.1", "3.12", true},
		{">3.12", "3.12", true},
		{"!=3.9", "3.9", false}, // the series, not only 3.9.0
		{"!=3.9.0", "3.9", true},
		{">=3.13.0b1", "3.13", true},         // old: error
		{">=3.12.5, <3.12.3", "3.12", false}, // old: true (clauses checked one by one)
		{"==3.12.1rc1", "3.12", false},       // old: error
		{"<3.12.0rc1", "3.12", false},        // old: error
		{"~=3.12.0rc1", "3.12", true},        // old: error
		{"<3.12.0rc1", "3.11", true},         // old: error
		{">=1!3.0", "3.12", false},           // old: error
		{"===3.12", "3.12", false},           // arbitrary equality: no 3.12.p is the string "3.12"
		{">=3.8, !=3.9.*, <3.14", "3.9", false},
		{">=3.8, !=3.9.*, <3.14", "3.13", true},
		{"~=3.8.1", "3.8", true},
	}
	for _, tc := range tests {
		got, err := PythonSatisfies(tc.spec, tc.py)
		if err != nil || got != tc.want {
			t.Errorf("PythonSatisfies(%q, %q) = %v, %v; want %v", tc.spec, tc.py, got, err, tc.want)
		}
	}
	for _, tc := range [][2]string{{">=3.8.*", "3.9"}, {"~=3", "3.12"}, {">=3.12 <3.13", "3.12"}, {">=3.8", "3"}, {">=3.8", "3.x"}, {">=3.8", "2.7"}, {">=3.8", "3.012"}} {
		if got, err := PythonSatisfies(tc[0], tc[1]); err == nil {
			t.Errorf("PythonSatisfies(%q, %q) = %v, want an error", tc[0], tc[1], got)
		}
	}
}

// FuzzSpecifier checks that no specifier or version makes the library panic
// (it calls MustParse on operands it validated itself).
func FuzzSpecifier(f *testing.F) {
	for _, s := range []string{">=3.9", "~=1.0.post1", "==1.0.*", "!=3.9,<4", "===foo", "~=1!1.0", "*"} {
		f.Add(s, "3.12")
	}
	f.Fuzz(func(t *testing.T, spec, v string) {
		s, err := ParseSpecifier(spec)
		if err != nil {
			return
		}
		if pv, err := Parse(v); err == nil {
			s.Allows(pv)
		}
		_, _ = PythonSatisfies(spec, "3.12")
	})
}

func TestMinor(t *testing.T) {
	got := map[string]string{}
	for _, v := range []string{"2.46.0", "2.46.0rc1", "2.46.0.post1", "2.46.0.1", "2", "1!2.46.3", "v2.46.0", "bogus"} {
		m, ok := Minor(v)
		if !ok {
			m = "(not PEP 440)"
		}
		got[v] = m
	}
	want := map[string]string{
		"2.46.0": "2.46", "2.46.0rc1": "2.46", "2.46.0.post1": "2.46", "2.46.0.1": "2.46",
		"2": "2.0", "1!2.46.3": "1!2.46", "v2.46.0": "2.46", "bogus": "(not PEP 440)",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Minor (-want +got):\n%s", d)
	}
}

// TestCompareIsTotalOrder checks that Compare is antisymmetric and
// transitive over versions mixing epochs, release lengths, trailing zeros,
// pre, post, dev and local segments, and unparseable strings: sorting with
// it (catalog.Normalize) must be deterministic.
func TestCompareIsTotalOrder(t *testing.T) {
	var vs []string
	for _, rel := range []string{"1", "1.0", "1.0.0", "1.0.1", "1.1", "2.0.0.0", "10"} {
		for _, suf := range []string{"", "a1", "rc1", ".post1", ".dev0", "rc1.dev1", ".post1.dev2", "+local.7", "+Local.a"} {
			vs = append(vs, rel+suf)
		}
	}
	vs = append(vs, "1!0.1", "1!1.0", "bogus", "~", "")
	// Sorted, every pair must be in order: the relation is then exactly
	// that linear order (antisymmetric and transitive).
	slices.SortFunc(vs, Compare)
	for i, a := range vs {
		for j, b := range vs {
			got := Compare(a, b)
			if (i < j && got >= 0) || (i > j && got <= 0) || (i == j && got != 0) {
				t.Fatalf("Compare(%q, %q) = %d, but sorting put them at %d and %d: not a total order", a, b, got, i, j)
			}
		}
	}
}
