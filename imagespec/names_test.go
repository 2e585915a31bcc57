package imagespec

import "testing"

func TestNormalizeName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Ray", "ray"},
		{"typing_extensions", "typing-extensions"},
		{"zope.interface", "zope-interface"},
		{"a__b", "a-b"},
		{"a-_.b", "a-b"},
		{"-lead", "-lead"},
		{"trail.", "trail-"},
		{"Friendly-Bard", "friendly-bard"},
	} {
		if got := NormalizeName(tc.in); got != tc.want {
			t.Errorf("NormalizeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
