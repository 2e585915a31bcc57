package sbom

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSPDXLicense(t *testing.T) {
	names := map[string]string{"LicenseRef-AS-License": "AS License", "LicenseRef-AS": "AS"}
	for _, tc := range []struct{ expr, want string }{
		{"MIT", "MIT"},
		{"NOASSERTION", ""},
		{"NONE", ""},
		{"", ""},
		{"LicenseRef-AS-License", `"AS License" (LicenseRef-AS-License)`},
		{"(MIT OR LicenseRef-AS) AND LicenseRef-AS-License", `(MIT OR "AS" (LicenseRef-AS)) AND "AS License" (LicenseRef-AS-License)`},
		{"LicenseRef-unnamed", "LicenseRef-unnamed"},
	} {
		if diff := cmp.Diff(tc.want, spdxLicense(tc.expr, names)); diff != "" {
			t.Errorf("spdxLicense(%q) (-want +got):\n%s", tc.expr, diff)
		}
	}
}
