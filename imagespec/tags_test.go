package imagespec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTags(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		tags                       Tags
		names, immutable, floating []string
		versioned                  string
	}{
		{
			name:      "versioned and floating",
			tags:      Tags{{Name: "4.101.2-ray2.46.0-py3.12"}, {Name: "ray2.46.0", Floating: true}, {Name: "latest", Floating: true}},
			names:     []string{"4.101.2-ray2.46.0-py3.12", "ray2.46.0", "latest"},
			immutable: []string{"4.101.2-ray2.46.0-py3.12"},
			floating:  []string{"ray2.46.0", "latest"},
			versioned: "4.101.2-ray2.46.0-py3.12",
		},
		{
			name:      "two immutable",
			tags:      Tags{{Name: "a-0123"}, {Name: "ray2.46", Floating: true}, {Name: "b-0123"}},
			names:     []string{"a-0123", "ray2.46", "b-0123"},
			immutable: []string{"a-0123", "b-0123"},
			floating:  []string{"ray2.46"},
			versioned: "a-0123",
		},
		{
			name:     "floating only",
			tags:     Tags{{Name: "latest", Floating: true}},
			names:    []string{"latest"},
			floating: []string{"latest"},
		},
		{name: "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []struct {
				what      string
				want, got []string
			}{
				{"Names", tc.names, tc.tags.Names()},
				{"Immutable", tc.immutable, tc.tags.Immutable()},
				{"Floating", tc.floating, tc.tags.Floating()},
			} {
				if diff := cmp.Diff(c.want, c.got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", c.what, diff)
				}
			}
			if got := tc.tags.Versioned(); got != tc.versioned {
				t.Errorf("Versioned = %q, want %q", got, tc.versioned)
			}
		})
	}
}
