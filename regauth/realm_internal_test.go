package regauth

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChallengeRealms(t *testing.T) {
	for _, tc := range []struct {
		name string
		hs   []string
		want []string
	}{
		{"bearer", []string{`Bearer realm="https://auth.example/token",service="r"`}, []string{"https://auth.example/token"}},
		{"token form", []string{`Bearer service="r", realm=http://a.example/t`}, []string{"http://a.example/t"}},
		{"escaped quote", []string{`Bearer realm="http://a.example/t\"x"`}, []string{`http://a.example/t"x`}},
		{"basic label", []string{`Basic realm="Registry Realm"`}, []string{"Registry Realm"}},
		{"two headers", []string{`Basic realm="x"`, `Bearer realm="http://b.example/t"`}, []string{"x", "http://b.example/t"}},
		{"no realm", []string{`Bearer service="r"`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, challengeRealms(tc.hs)); diff != "" {
				t.Errorf("challengeRealms(%q) (-want +got):\n%s", tc.hs, diff)
			}
		})
	}
}

func TestCheckRealm(t *testing.T) {
	for _, tc := range []struct {
		reg, realm string
		ok         bool
	}{
		{"http://127.0.0.1:5000/v2/", "http://127.0.0.1:5000/token", true},
		{"http://localhost/v2/", "http://LOCALHOST:80/token", true},
		{"http://127.0.0.1:5000/v2/", "https://auth.example/token", true},
		{"http://127.0.0.1:5000/v2/", "Registry Realm", true},
		{"http://127.0.0.1:5000/v2/", "http://127.0.0.1:5001/token", false},
		{"http://127.0.0.1:5000/v2/", "http://auth.example.net/token", false},
		{"https://registry.example/v2/", "http://registry.example/token", false},
		{"https://registry.example/v2/", "https://registry.example/token", true},
	} {
		reg, err := url.Parse(tc.reg)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkRealm(reg, tc.realm); (err == nil) != tc.ok {
			t.Errorf("checkRealm(%s, %s) = %v, want ok=%t", tc.reg, tc.realm, err, tc.ok)
		}
	}
}
