package attest_test

import (
	"testing"

	"github.com/imagectl/imagectl/attest"
)

func TestParseStatementType(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		want string // "" accepts
	}{
		{attest.StatementTypeV01, ""},
		{attest.StatementTypeV1, ""},
		{"https://evil.example/Statement/v9", `in-toto statement _type "https://evil.example/Statement/v9" is not an in-toto Statement type (want https://in-toto.io/Statement/v0.1 or https://in-toto.io/Statement/v1)`},
		{"https://in-toto.io/Statement/v2", `in-toto statement _type "https://in-toto.io/Statement/v2" is not`},
		{"", `in-toto statement _type "" is not`},
	} {
		b := []byte(`{"_type":"` + tc.typ + `","predicateType":"https://spdx.dev/Document","subject":[],"predicate":{}}`)
		st, err := attest.ParseStatement(b)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("_type %q: %v", tc.typ, err)
		case tc.want == "" && st.Type != tc.typ:
			t.Errorf("_type %q: parsed %q", tc.typ, st.Type)
		case tc.want != "" && (err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want):
			t.Errorf("_type %q: error %v, want one starting %q", tc.typ, err, tc.want)
		}
		// DecodeStatement reads any _type; CheckType tells.
		d, err := attest.DecodeStatement(b)
		if err != nil {
			t.Fatalf("DecodeStatement: %v", err)
		}
		if (d.CheckType() == nil) != (tc.want == "") {
			t.Errorf("_type %q: CheckType = %v", tc.typ, d.CheckType())
		}
	}
}
