package sourcedate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/imagectl/imagectl/internal/sourcedate"
)

func TestResolve(t *testing.T) {
	git := func() (string, string) { return "git commit time", "1600000000" }
	noGit := func() (string, string) { return "git commit time", "" }
	tests := []struct {
		name     string
		env      string
		flag     string
		fallback func() (string, string)
		want     int64
		wantErr  string
	}{
		{name: "nothing set", want: 0},
		{name: "env", env: "1752537600", want: 1752537600},
		{name: "zero", env: "0", want: 0},
		{name: "flag over env", env: "1752537600", flag: "1700000000", want: 1700000000},
		{name: "env over fallback", env: "1752537600", fallback: git, want: 1752537600},
		{name: "fallback", fallback: git, want: 1600000000},
		{name: "empty fallback", fallback: noGit, want: 0},
		{name: "max", env: "8589934591", want: sourcedate.Max},
		{name: "past max", env: "8589934592", wantErr: `SOURCE_DATE_EPOCH="8589934592": want a Unix time in seconds from 0 to 8589934591 (2242-03-16T12:56:31Z)`},
		{name: "overflows milliseconds", env: "99999999999999999", wantErr: `SOURCE_DATE_EPOCH="99999999999999999": want a Unix time in seconds from 0 to 8589934591`},
		{name: "overflows int64", env: "99999999999999999999", wantErr: `SOURCE_DATE_EPOCH="99999999999999999999"`},
		{name: "very long", env: strings.Repeat("9", 5000), wantErr: `SOURCE_DATE_EPOCH="999999999999999999999999...": want`},
		{name: "negative", env: "-5", wantErr: `SOURCE_DATE_EPOCH="-5": want`},
		{name: "plus sign", env: "+5", wantErr: `SOURCE_DATE_EPOCH="+5": want`},
		{name: "fraction", env: "1.5", wantErr: `SOURCE_DATE_EPOCH="1.5": want`},
		{name: "words", env: "yesterday", wantErr: `SOURCE_DATE_EPOCH="yesterday": want`},
		{name: "bad flag", flag: "1e9", wantErr: `--source-date-epoch="1e9": want`},
		{name: "bad fallback", fallback: func() (string, string) { return "git commit time", "soon" }, wantErr: `git commit time="soon": want`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(sourcedate.Env, tc.env)
			got, err := sourcedate.Resolve("--source-date-epoch", tc.flag, tc.fallback)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("Resolve = %v, %v; want error starting %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := time.Unix(tc.want, 0).UTC(); !got.Equal(want) || got.Location() != time.UTC {
				t.Errorf("Resolve = %v, want %v (UTC)", got, want)
			}
		})
	}
}

// Every accepted time is representable where it is used: milliseconds in
// an int64 without overflow and an RFC 3339 (four-digit year) JSON time.
func TestMaxRepresentable(t *testing.T) {
	m := time.Unix(sourcedate.Max, 0).UTC()
	if ms := m.UnixMilli(); ms/1000 != sourcedate.Max {
		t.Errorf("Max in milliseconds overflows: %d", ms)
	}
	if _, err := m.MarshalJSON(); err != nil {
		t.Errorf("Max is not a JSON time: %v", err)
	}
	if got := strings.Repeat("7", 11); sourcedate.Max != 0o77777777777 {
		t.Errorf("Max = %o, want the largest 11-digit octal (ustar mtime) %s", sourcedate.Max, got)
	}
}
