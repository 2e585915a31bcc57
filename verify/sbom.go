package verify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/attest"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/sbom/document"
)

// statementPredicate reads the in-toto predicate type and predicate of a
// verified cosign attestation (a DSSE envelope).
func statementPredicate(a interface{ Payload() ([]byte, error) }) (string, []byte, error) {
	p, err := a.Payload()
	if err != nil {
		return "", nil, err
	}
	st, err := attest.EnvelopeStatement(p)
	if err != nil {
		return "", nil, err
	}
	return st.PredicateType, st.Predicate, nil
}

// acceptSBOM records doc as the SBOM of mi, whose contents checkSBOMContents
// checks: every SBOM verify accepts, cosign attestation or BuildKit
// attestation manifest, is read. A missing predicate is recorded as JSON
// null, which the check refuses.
func (v *verifier) acceptSBOM(mi manifestInfo, doc []byte) {
	if doc == nil {
		doc = []byte("null")
	}
	if v.sbomDocs == nil {
		v.sbomDocs = map[string][]byte{}
	}
	v.sbomDocs[mi.ref.DigestStr()] = doc
}

// checkSBOMContents checks that the platform's verified SBOM lists every
// distribution of the locked Python closure (or ray and debugpy when the
// image was built unlocked) and every extension, each with the locked
// version, extensions with the VSIX sha256 the lock records, and records
// the licence the SBOM gives each extension it lists.
func (v *verifier) checkSBOMContents(mi manifestInfo, m *Manifest, lock *imagespec.Set, doc []byte) {
	if lock == nil || doc == nil {
		return
	}
	fail := func(format string, args ...any) {
		v.fail(Failure{Check: CheckSBOM, Platform: mi.platform, Digest: mi.ref.DigestStr(), Where: m.SBOM, Message: fmt.Sprintf(format, args...)})
	}
	pkgs, err := document.Packages(doc)
	if err != nil {
		fail("reading the SBOM: %v", err)
		return
	}
	for _, p := range pkgs {
		if strings.Contains(p.PURL, "type=vscode-extension") {
			m.ExtensionLicenses = append(m.ExtensionLicenses, ExtensionLicense{ID: p.Name, Version: p.Version, License: p.License, Source: p.LicenseComment})
		}
	}
	// Python distributions by normalized name: their versions in the SBOM.
	py := map[string][]string{}
	byName := map[string][]document.Package{}
	for _, p := range pkgs {
		if n, ver, ok := document.PyPIName(p.PURL); ok {
			py[n] = append(py[n], ver)
		}
		byName[strings.ToLower(p.Name)] = append(byName[strings.ToLower(p.Name)], p)
	}
	type want struct{ name, version string }
	var dists []want
	if ds, ok := lock.PythonLocks[mi.platform]; ok {
		for _, d := range ds {
			dists = append(dists, want{d.Name, d.Version})
		}
	} else {
		dists = []want{{"ray", lock.Ray}, {"debugpy", lock.Debugpy}}
	}
	found := 0
	for _, d := range dists {
		vs := py[imagespec.NormalizeName(d.name)]
		switch {
		case slices.Contains(vs, d.version):
			found++
		case len(vs) > 0:
			fail("Python distribution %s: the SBOM lists %s, the lock says %s", d.name, strings.Join(vs, ", "), d.version)
		default:
			fail("Python distribution %s %s of the lock is not in the SBOM", d.name, d.version)
		}
	}
	for _, e := range lock.Extensions {
		f := e.Files[mi.platform]
		var versions []string
		ok := false
		for _, p := range byName[strings.ToLower(e.ID)] {
			versions = append(versions, p.Version)
			if p.Version != e.Version {
				continue
			}
			if f.SHA256 != "" && !slices.Contains(p.SHA256, f.SHA256) {
				fail("extension %s %s: the SBOM gives sha256 %v, the lock's VSIX is %s", e.ID, e.Version, p.SHA256, f.SHA256)
				ok = true
				break
			}
			ok = true
			found++
			break
		}
		switch {
		case ok:
		case len(versions) > 0:
			fail("extension %s: the SBOM lists %s, the lock says %s", e.ID, strings.Join(versions, ", "), e.Version)
		default:
			fail("extension %s %s of the lock is not in the SBOM", e.ID, e.Version)
		}
	}
	m.SBOMLocked = found
}
