package imagectl_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"regexp"
	"testing"

	"gopkg.in/yaml.v3"
)

// apache2SHA256 is the sha256 of the standard Apache License 2.0 text,
// https://www.apache.org/licenses/LICENSE-2.0.txt, which Debian ships
// byte for byte as /usr/share/common-licenses/Apache-2.0.
const apache2SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

// TestLicence: imagectl is licensed under the Apache License 2.0 (as
// go-containerregistry, ko, kind, cosign and BuildKit are). LICENSE holds
// the standard text unchanged (so tools that detect licences recognise it),
// the image's org.opencontainers.image.licenses label (matrix.yaml
// image.license) names the same licence, and the README says so.
func TestLicence(t *testing.T) {
	b, err := os.ReadFile("LICENSE")
	if err != nil {
		t.Fatalf("the project has no licence file: %v (want the Apache License 2.0 text in LICENSE)", err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != apache2SHA256 {
		t.Errorf("LICENSE (%d bytes) has sha256 %s, want %s: the standard Apache License 2.0 text, unchanged (/usr/share/common-licenses/Apache-2.0 on Debian)", len(b), got, apache2SHA256)
	}

	mb, err := os.ReadFile("matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Image struct {
			License string `yaml:"license"`
		} `yaml:"image"`
	}
	if err := yaml.Unmarshal(mb, &m); err != nil {
		t.Fatal(err)
	}
	if m.Image.License != "Apache-2.0" {
		t.Errorf("matrix.yaml image.license (the image's org.opencontainers.image.licenses label) = %q, want Apache-2.0, the licence in LICENSE", m.Image.License)
	}

	rb, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^## Licence\n+.*Apache License 2\.0.*\(\[LICENSE\]\(LICENSE\)\)`).Match(rb) {
		t.Error(`README.md has no "## Licence" section saying imagectl is under the Apache License 2.0, with a link to [LICENSE](LICENSE)`)
	}
}
