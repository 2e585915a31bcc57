package verify

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/imagespec/imagetest"
)

// scannedSBOM is an SPDX document shaped like imagectl-sbom's (cmd/imagectl-sbom/scan) for an image
// with two extensions: ms-python.python declaring MIT in package.json, the
// ray-distributed-debugger declaring no licence there and Anyscale's "AS
// License" in its LICENSE.txt (as the real 0.1.6 does).
const scannedSBOM = `{
  "spdxVersion": "SPDX-2.3",
  "packages": [
    {"name": "ms-python.python", "versionInfo": "2025.10.0", "licenseDeclared": "MIT",
     "licenseComments": "licence declared in package.json: MIT; licence file /config/extensions/ms-python.python-2025.10.0-linux-arm64/LICENSE.txt (\"MIT License\")",
     "externalRefs": [{"referenceType": "purl", "referenceLocator": "pkg:generic/ms-python.python@2025.10.0?type=vscode-extension"}]},
    {"name": "anyscalecompute.ray-distributed-debugger", "versionInfo": "0.1.4", "licenseDeclared": "LicenseRef-AS-License",
     "licenseComments": "licence file /config/extensions/anyscalecompute.ray-distributed-debugger-0.1.4/LICENSE.txt (\"AS License\"); package.json states no licence",
     "externalRefs": [{"referenceType": "purl", "referenceLocator": "pkg:generic/anyscalecompute.ray-distributed-debugger@0.1.4?type=vscode-extension"}]},
    {"name": "ray", "versionInfo": "2.46.0", "licenseDeclared": "Apache-2.0",
     "externalRefs": [{"referenceType": "purl", "referenceLocator": "pkg:pypi/ray@2.46.0"}]}
  ],
  "hasExtractedLicensingInfos": [
    {"licenseId": "LicenseRef-AS-License", "name": "AS License", "extractedText": "AS License\n\nCopyright (2023) Anyscale, Inc.\n"}
  ]
}`

func TestExtensionLicensesFromTheSBOM(t *testing.T) {
	spec := imagetest.Default()
	spec.Extensions = []imagetest.Extension{
		{ID: "ms-python.python", Version: "2025.10.0"},
		{ID: "anyscalecompute.ray-distributed-debugger", Version: "0.1.4", Universal: true},
	}
	lock := spec.Lock()
	for i := range lock.Extensions {
		for p, f := range lock.Extensions[i].Files {
			f.SHA256 = ""
			lock.Extensions[i].Files[p] = f
		}
	}
	v := &verifier{rep: &Report{}}
	d, err := name.NewDigest("r.example/x@sha256:" + strings.Repeat("1", 64))
	if err != nil {
		t.Fatal(err)
	}
	m := &Manifest{Platform: "linux/arm64", Digest: d.DigestStr(), SBOM: "cosign attestation https://spdx.dev/Document"}
	v.checkSBOMContents(manifestInfo{ref: d, platform: "linux/arm64"}, m, &lock, m.SBOM, []byte(scannedSBOM))
	want := []ExtensionLicense{
		{ID: "ms-python.python", Version: "2025.10.0", License: "MIT",
			Source: `licence declared in package.json: MIT; licence file /config/extensions/ms-python.python-2025.10.0-linux-arm64/LICENSE.txt ("MIT License")`},
		{ID: "anyscalecompute.ray-distributed-debugger", Version: "0.1.4", License: `"AS License" (LicenseRef-AS-License)`,
			Source: `licence file /config/extensions/anyscalecompute.ray-distributed-debugger-0.1.4/LICENSE.txt ("AS License"); package.json states no licence`},
	}
	if diff := cmp.Diff(want, m.ExtensionLicenses); diff != "" {
		t.Errorf("ExtensionLicenses (-want +got):\n%s", diff)
	}
	rep := &Report{Ref: "r.example/x", OK: true, Manifests: []Manifest{*m}}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`licence of ms-python.python@2025.10.0: MIT (licence declared in package.json: MIT;`,
		`licence of anyscalecompute.ray-distributed-debugger@0.1.4: "AS License" (LicenseRef-AS-License) (licence file /config/extensions/anyscalecompute.ray-distributed-debugger-0.1.4/LICENSE.txt ("AS License"); package.json states no licence)`,
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("imagectl verify's report lacks %q:\n%s", line, b.String())
		}
	}
}
