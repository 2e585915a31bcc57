package document

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

func TestPyPIName(t *testing.T) {
	n, v, ok := PyPIName("pkg:pypi/Aio_Signal@1.3.1?x=y")
	if !ok || n != "aio-signal" || v != "1.3.1" {
		t.Errorf("PyPIName = %q %q %v", n, v, ok)
	}
	if _, _, ok := PyPIName("pkg:npm/x@1"); ok {
		t.Error("npm purl read as pypi")
	}
}
