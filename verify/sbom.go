package verify

import (
	"fmt"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/imagectl/imagectl/attest"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/sbom/document"
)

// cosignStatement decodes the in-toto statement of a verified cosign
// attestation (a DSSE envelope). Its _type is not checked here: the caller
// reports a statement that is no in-toto Statement (CheckType).
func cosignStatement(a interface{ Payload() ([]byte, error) }) (*attest.Statement, error) {
	p, err := a.Payload()
	if err != nil {
		return nil, err
	}
	env, err := attest.ParseEnvelope(p)
	if err != nil {
		return nil, err
	}
	raw, err := env.DecodeB64Payload()
	if err != nil {
		return nil, fmt.Errorf("DSSE payload is not base64: %w", err)
	}
	return attest.DecodeStatement(raw)
}

// cosignLayer names the layer of a cosign attestation, "" when it has no
// digest.
func cosignLayer(a interface{ Digest() (v1.Hash, error) }) string {
	d, err := a.Digest()
	if err != nil {
		return ""
	}
	return "layer " + short(d.String())
}

// sbomDoc is one verified SBOM of a platform: where it was found (detail
// tells it from another found in the same place) and the predicate.
type sbomDoc struct {
	where, detail string
	doc           []byte
}

// acceptSBOM records doc as an SBOM of mi found at where: every SBOM
// verify accepts, cosign attestation or BuildKit attestation manifest,
// is checked (checkSBOMs), however many a platform has. A missing
// predicate is recorded as JSON null, which the check refuses.
func (v *verifier) acceptSBOM(mi manifestInfo, m *Manifest, where, detail string, doc []byte) {
	if doc == nil {
		doc = []byte("null")
	}
	if v.sbomDocs == nil {
		v.sbomDocs = map[string][]sbomDoc{}
	}
	k := mi.ref.DigestStr()
	v.sbomDocs[k] = append(v.sbomDocs[k], sbomDoc{where: where, detail: detail, doc: doc})
}

// checkSBOMs checks every SBOM accepted for mi (checkSBOMContents) and
// names them all in m.SBOM. Two found in the same place are told apart by
// their detail (the layer). m.SBOMLocked is the smallest count of any.
func (v *verifier) checkSBOMs(mi manifestInfo, m *Manifest, lock *imagespec.Set) {
	docs := v.sbomDocs[mi.ref.DigestStr()]
	seen := map[string]int{}
	for _, d := range docs {
		seen[d.where]++
	}
	var names []string
	for _, d := range docs {
		if seen[d.where] > 1 && d.detail != "" {
			d.where += " (" + d.detail + ")"
		}
		names = append(names, d.where)
	}
	m.SBOM = strings.Join(names, "; ")
	locked := -1
	for _, d := range docs {
		where := d.where
		if seen[d.where] > 1 && d.detail != "" {
			where += " (" + d.detail + ")"
		}
		n := v.checkSBOMContents(mi, m, lock, where, d.doc)
		if locked < 0 || n < locked {
			locked = n
		}
	}
	if locked > 0 {
		m.SBOMLocked = locked
	}
}

// checkSBOMContents checks that one verified SBOM of the platform, found
// at where, lists every distribution of the locked Python closure (or ray
// and debugpy when the image was built unlocked) and every extension, each
// with the locked version, extensions with the VSIX sha256 the lock
// records, and records the licence the SBOM gives each extension it lists
// (once, however many SBOMs list it). It returns how many locked packages
// it found.
func (v *verifier) checkSBOMContents(mi manifestInfo, m *Manifest, lock *imagespec.Set, where string, doc []byte) int {
	if lock == nil || doc == nil {
		return 0
	}
	fail := func(format string, args ...any) {
		v.fail(Failure{Check: CheckSBOM, Platform: mi.platform, Digest: mi.ref.DigestStr(), Where: where, Message: fmt.Sprintf(format, args...)})
	}
	pkgs, err := document.Packages(doc)
	if err != nil {
		fail("reading the SBOM: %v", err)
		return 0
	}
	for _, p := range pkgs {
		if strings.Contains(p.PURL, "type=vscode-extension") {
			l := ExtensionLicense{ID: p.Name, Version: p.Version, License: p.License, Source: p.LicenseComment}
			if !slices.Contains(m.ExtensionLicenses, l) {
				m.ExtensionLicenses = append(m.ExtensionLicenses, l)
			}
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
	return found
}
