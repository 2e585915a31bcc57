package document

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/package-url/packageurl-go"

	"github.com/imagectl/imagectl/imagespec"
)

// Package is one package of an SBOM document.
type Package struct {
	Name    string
	Version string
	// PURL is the package URL, if the document gives one.
	PURL string
	// SHA256 are the package's sha256 checksums.
	SHA256 []string
	// License is the declared licence: an SPDX expression, a licence
	// that is not on the SPDX list given by its name and LicenseRef id
	// (`"AS License" (LicenseRef-AS-License)`), "" when the document
	// asserts none.
	License string
	// LicenseComment is SPDX's licenseComments: for an extension, where
	// its licence was read.
	LicenseComment string
}

// Packages reads the packages of an SPDX 2.x JSON or CycloneDX JSON
// document.
func Packages(doc []byte) ([]Package, error) {
	var probe struct {
		SPDXVersion string `json:"spdxVersion"`
		BOMFormat   string `json:"bomFormat"`
	}
	if err := json.Unmarshal(doc, &probe); err != nil {
		return nil, fmt.Errorf("SBOM is not JSON: %w", err)
	}
	switch {
	case probe.SPDXVersion != "":
		var d struct {
			Packages []struct {
				Name            string `json:"name"`
				LicenseDeclared string `json:"licenseDeclared"`
				LicenseComments string `json:"licenseComments"`
				VersionInfo     string `json:"versionInfo"`
				ExternalRefs    []struct {
					Type    string `json:"referenceType"`
					Locator string `json:"referenceLocator"`
				} `json:"externalRefs"`
				Checksums []struct {
					Algorithm string `json:"algorithm"`
					Value     string `json:"checksumValue"`
				} `json:"checksums"`
			} `json:"packages"`
			Extracted []struct {
				ID   string `json:"licenseId"`
				Name string `json:"name"`
			} `json:"hasExtractedLicensingInfos"`
		}
		if err := json.Unmarshal(doc, &d); err != nil {
			return nil, fmt.Errorf("SPDX document: %w", err)
		}
		names := map[string]string{}
		for _, e := range d.Extracted {
			if e.Name != "" && e.Name != "NOASSERTION" {
				names[e.ID] = e.Name
			}
		}
		out := make([]Package, 0, len(d.Packages))
		for _, p := range d.Packages {
			q := Package{Name: p.Name, Version: p.VersionInfo, License: spdxLicense(p.LicenseDeclared, names), LicenseComment: p.LicenseComments}
			for _, r := range p.ExternalRefs {
				if r.Type == "purl" && q.PURL == "" {
					q.PURL = r.Locator
				}
			}
			for _, c := range p.Checksums {
				if strings.EqualFold(c.Algorithm, "SHA256") {
					q.SHA256 = append(q.SHA256, strings.ToLower(c.Value))
				}
			}
			out = append(out, q)
		}
		return out, nil
	case probe.BOMFormat == "CycloneDX":
		var d struct {
			Components []struct {
				Name     string `json:"name"`
				Group    string `json:"group"`
				Licenses []struct {
					License struct {
						ID   string `json:"id"`
						Name string `json:"name"`
					} `json:"license"`
					Expression string `json:"expression"`
				} `json:"licenses"`
				Version string `json:"version"`
				PURL    string `json:"purl"`
				Hashes  []struct {
					Alg     string `json:"alg"`
					Content string `json:"content"`
				} `json:"hashes"`
			} `json:"components"`
		}
		if err := json.Unmarshal(doc, &d); err != nil {
			return nil, fmt.Errorf("CycloneDX document: %w", err)
		}
		out := make([]Package, 0, len(d.Components))
		for _, c := range d.Components {
			q := Package{Name: c.Name, Version: c.Version, PURL: c.PURL}
			var lics []string
			for _, l := range c.Licenses {
				switch {
				case l.Expression != "":
					lics = append(lics, l.Expression)
				case l.License.ID != "":
					lics = append(lics, l.License.ID)
				case l.License.Name != "":
					lics = append(lics, strconv.Quote(l.License.Name))
				}
			}
			q.License = strings.Join(lics, " AND ")
			for _, h := range c.Hashes {
				if strings.EqualFold(strings.ReplaceAll(h.Alg, "-", ""), "SHA256") {
					q.SHA256 = append(q.SHA256, strings.ToLower(h.Content))
				}
			}
			out = append(out, q)
		}
		return out, nil
	}
	return nil, errors.New("SBOM is neither SPDX JSON (spdxVersion) nor CycloneDX JSON (bomFormat)")
}

// spdxLicense is an SPDX licence expression with each LicenseRef id whose
// name the document gives written as `"name" (id)`; NOASSERTION and NONE
// are "".
func spdxLicense(expr string, names map[string]string) string {
	if expr == "" || expr == "NOASSERTION" || expr == "NONE" {
		return ""
	}
	var b strings.Builder
	word := func(w string) {
		if n, ok := names[w]; ok {
			w = strconv.Quote(n) + " (" + w + ")"
		}
		b.WriteString(w)
	}
	start := 0
	for i, r := range expr {
		if r == ' ' || r == '(' || r == ')' {
			word(expr[start:i])
			b.WriteRune(r)
			start = i + 1
		}
	}
	word(expr[start:])
	return b.String()
}

// PyPIName returns the normalized distribution name of a pkg:pypi purl.
func PyPIName(purl string) (name, version string, ok bool) {
	p, err := packageurl.FromString(purl)
	if err != nil || p.Type != packageurl.TypePyPi {
		return "", "", false
	}
	return imagespec.NormalizeName(p.Name), p.Version, true
}
