package engine

import (
	"strings"
	"testing"
	"time"
)

func TestAccepts(t *testing.T) {
	tests := []struct {
		rng, version string
		want         bool
	}{
		{"*", "1.101.2", true},
		{"*", "0.9.0", true},
		{"^1.95.0", "1.101.2", true},
		{"^1.95.0", "1.95.0", true},
		{"^1.95.0", "1.94.9", false},
		{"^1.95.0", "2.0.0", false},
		{"^1.104.0", "1.101.2", false},
		{"^1.92.0", "1.101.2", true},
		{"^1.66.0", "1.101.2", true},
		{" ^1.66.0 ", "1.101.2", true},
		{">=1.95.0", "1.95.0", true},
		{">=1.95.0", "2.3.0", true},
		{">=1.95.0", "1.94.3", false},
		{">=1.95.3", "1.95.2", false},
		{">=1.95.3", "1.95.3", true},
		{"1.95.0", "1.95.0", true},
		{"1.95.0", "1.95.1", false},
		{"1.95.x", "1.95.7", true},
		{"1.95.x", "1.96.0", false},
		{"1.x.x", "1.101.2", true},
		{"1.x.x", "2.0.0", false},
		{"^0.10.0", "0.10.5", true},
		{"^0.10.0", "0.11.0", false},
		{"^0.10.0", "1.101.2", true}, // anything < 1.0.0 is compatible with >= 1.0.0
		{"0.10.0", "1.0.0", false},   // ...except exact matches
		{"0.10.x", "1.50.0", true},
		{"^1.95.0-20241001", "1.95.0", true}, // date ignored: product date unknown
		{"^1.95.0-insider", "1.96.0", true},  // non-date suffix ignored
		{"^2.0.0", "1.101.2", false},
	}
	for _, tc := range tests {
		got, err := Accepts(tc.rng, tc.version)
		if err != nil {
			t.Errorf("Accepts(%q, %q): unexpected error %v", tc.rng, tc.version, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Accepts(%q, %q) = %v, want %v", tc.rng, tc.version, got, tc.want)
		}
	}
}

func TestAcceptsAtNotBefore(t *testing.T) {
	day := func(s string) time.Time {
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		rng, version string
		date         time.Time
		want         bool
	}{
		// Equal major.minor.patch: the date decides.
		{"^1.95.0-20240918", "1.95.0", day("2024-09-17"), false},
		{"^1.95.0-20240918", "1.95.0", day("2024-09-18"), true},
		{"^1.95.0-20240918", "1.95.0", day("2024-10-01"), true},
		// Newer patch/minor: the date does not matter.
		{"^1.95.0-20240918", "1.95.1", day("2024-01-01"), true},
		{"^1.95.0-20240918", "1.96.0", day("2024-01-01"), true},
		// >= checks the date once major.minor are equal (VS Code quirk).
		{">=1.95.0-20240918", "1.95.3", day("2024-01-01"), false},
		{">=1.95.0-20240918", "1.96.0", day("2024-01-01"), true},
		// Unknown date: ignored.
		{"^1.95.0-20240918", "1.95.0", time.Time{}, true},
	}
	for _, tc := range tests {
		got, err := AcceptsAt(tc.rng, tc.version, tc.date)
		if err != nil {
			t.Fatalf("AcceptsAt(%q, %q, %v): %v", tc.rng, tc.version, tc.date, err)
		}
		if got != tc.want {
			t.Errorf("AcceptsAt(%q, %q, %v) = %v, want %v", tc.rng, tc.version, tc.date.Format("2006-01-02"), got, tc.want)
		}
	}
}

func TestAcceptsErrors(t *testing.T) {
	tests := []struct {
		rng, version, wantErr string
	}{
		{"", "1.101.2", "cannot parse"},
		{"~1.95.0", "1.101.2", "cannot parse"},
		{"^1.95", "1.101.2", "cannot parse"},
		{"1.x", "1.101.2", "cannot parse"},
		{">1.95.0", "1.101.2", "cannot parse"},
		{"^1.95.0 || ^2.0.0", "1.101.2", "cannot parse"},
		{"x.x.x", "1.101.2", "not specific enough"},
		{"0.x.x", "1.101.2", "not specific enough"},
		{"x.1.0", "1.101.2", "not specific enough"},
		{"^1.95.0", "1.101", "VS Code version"},
		{"^1.95.0", "^1.101.2", "VS Code version"},
		{"^1.95.0", "1.x.2", "VS Code version"},
		{"^99999999999999999999.0.0", "1.101.2", "out of range"},
	}
	for _, tc := range tests {
		_, err := Accepts(tc.rng, tc.version)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Accepts(%q, %q) error = %v, want containing %q", tc.rng, tc.version, err, tc.wantErr)
		}
	}
}

func TestExplain(t *testing.T) {
	got := Explain("^1.104.0", "1.101.2")
	want := "Extension is not compatible with Code 1.101.2. Extension requires: ^1.104.0."
	if got != want {
		t.Errorf("Explain = %q, want %q", got, want)
	}
}

func FuzzAccepts(f *testing.F) {
	for _, s := range []string{"*", "^1.95.0", ">=1.0.0-20240101", "1.x.x", "0.10.x"} {
		f.Add(s, "1.101.2")
	}
	f.Fuzz(func(t *testing.T, rng, v string) {
		ok, err := Accepts(rng, v)
		if err != nil && ok {
			t.Fatalf("Accepts(%q, %q) returned true with error %v", rng, v, err)
		}
	})
}
