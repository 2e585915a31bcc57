package sign

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/imagectl/imagectl/imagespec"
)

// SBOMInput is what imagectl knows about an image's contents: enough for an
// SBOM without scanning the image.
type SBOMInput struct {
	// ImageName is the image repository, e.g. docker.io/example/code-server-ray.
	ImageName string
	// ImageVersion is the primary tag.
	ImageVersion string
	// Created is the build time (SOURCE_DATE_EPOCH), so the SBOM is reproducible.
	Created time.Time
	// BaseName is the base image reference (lscr.io/linuxserver/code-server:4.101.2).
	BaseName string
	// BaseDigests maps an OCI platform to the base manifest digest.
	BaseDigests map[string]string
	CodeServer  string
	VSCode      string
	Python      string
	Platforms   []string
	Extensions  []SBOMExtension
	// PythonPackages are pip-installed packages (ray, debugpy, their deps).
	PythonPackages []SBOMPackage
	// PythonByPlatform, when set, are the Python packages of each OCI
	// platform (the locked closure), used instead of PythonPackages.
	PythonByPlatform map[string][]SBOMPackage
}

// SBOMExtension is one VS Code extension and its file per platform.
type SBOMExtension struct {
	ID      string
	Version string
	// Files maps an OCI platform to the VSIX installed there.
	Files map[string]SBOMFile
}

// SBOMFile is one VSIX file.
type SBOMFile struct {
	TargetPlatform string
	URL            string
	SHA256         string
}

// SBOMPackage is one Python distribution.
type SBOMPackage struct {
	Name    string
	Version string
	// URL and SHA256 are the wheel's, when locked.
	URL    string
	SHA256 string
}

// SBOMInputFromLock fills an SBOMInput from the resolved set (the lock):
// the Python packages are each platform's locked closure, or ray and
// debugpy when the set has none.
func SBOMInputFromLock(set imagespec.Set, imageName string, created time.Time) SBOMInput {
	in := SBOMInput{
		ImageName:   imageName,
		Created:     created,
		BaseName:    set.CodeServer.Base,
		BaseDigests: set.CodeServer.Platforms,
		CodeServer:  set.CodeServer.Version,
		VSCode:      set.CodeServer.VSCode,
		Python:      set.Python,
		Platforms:   set.Platforms,
		PythonPackages: []SBOMPackage{
			{Name: "ray", Version: set.Ray},
			{Name: "debugpy", Version: set.Debugpy},
		},
	}
	if len(set.Tags) > 0 {
		in.ImageVersion = set.Tags[0]
	}
	if len(set.PythonLocks) > 0 {
		in.PythonPackages = nil
		in.PythonByPlatform = map[string][]SBOMPackage{}
		for p, ds := range set.PythonLocks {
			for _, d := range ds {
				in.PythonByPlatform[p] = append(in.PythonByPlatform[p], SBOMPackage{Name: d.Name, Version: d.Version, URL: d.URL, SHA256: d.SHA256})
			}
		}
	}
	for _, e := range set.Extensions {
		se := SBOMExtension{ID: e.ID, Version: e.Version, Files: map[string]SBOMFile{}}
		for p, f := range e.Files {
			se.Files[p] = SBOMFile{TargetPlatform: f.TargetPlatform, URL: f.URL, SHA256: f.SHA256}
		}
		in.Extensions = append(in.Extensions, se)
	}
	return in
}

type spdxDoc struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreation       `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreation struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	SPDXID           string         `json:"SPDXID"`
	Name             string         `json:"name"`
	VersionInfo      string         `json:"versionInfo,omitempty"`
	DownloadLocation string         `json:"downloadLocation"`
	FilesAnalyzed    bool           `json:"filesAnalyzed"`
	PrimaryPurpose   string         `json:"primaryPackagePurpose,omitempty"`
	Checksums        []spdxChecksum `json:"checksums,omitempty"`
	ExternalRefs     []spdxExtRef   `json:"externalRefs,omitempty"`
	Comment          string         `json:"comment,omitempty"`
	LicenseConcluded string         `json:"licenseConcluded"`
	LicenseDeclared  string         `json:"licenseDeclared"`
	CopyrightText    string         `json:"copyrightText"`
}

type spdxChecksum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

type spdxExtRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

var spdxIDRe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func spdxID(parts ...string) string {
	return "SPDXRef-" + spdxIDRe.ReplaceAllString(strings.Join(parts, "-"), "-")
}

func noassert(s string) string {
	if s == "" {
		return "NOASSERTION"
	}
	return s
}

// SPDX renders the SBOM for one platform ("" = the index: every platform) as
// SPDX 2.3 JSON. The same input gives the same bytes.
func SPDX(in SBOMInput, platform string) ([]byte, error) {
	if in.ImageName == "" {
		return nil, errors.New("SBOM input has no image name")
	}
	platforms := []string{platform}
	if platform == "" {
		platforms = append([]string(nil), in.Platforms...)
		sort.Strings(platforms)
	}
	docName := in.ImageName
	if in.ImageVersion != "" {
		docName += ":" + in.ImageVersion
	}
	if platform != "" {
		docName += " (" + platform + ")"
	}
	created := in.Created.UTC()
	if in.Created.IsZero() {
		created = time.Unix(0, 0).UTC()
	}
	doc := spdxDoc{
		SPDXVersion:  "SPDX-2.3",
		DataLicense:  "CC0-1.0",
		SPDXID:       "SPDXRef-DOCUMENT",
		Name:         docName,
		CreationInfo: spdxCreation{Created: created.Format(time.RFC3339), Creators: []string{"Tool: imagectl"}},
	}
	img := spdxPackage{
		SPDXID: "SPDXRef-Image", Name: in.ImageName, VersionInfo: in.ImageVersion,
		DownloadLocation: "NOASSERTION", PrimaryPurpose: "CONTAINER",
	}
	pkgs := []spdxPackage{img}
	rels := []spdxRelationship{{Element: "SPDXRef-DOCUMENT", Type: "DESCRIBES", Related: img.SPDXID}}
	add := func(p spdxPackage, rel string) {
		pkgs = append(pkgs, p)
		if rel == "DESCENDANT_OF" {
			rels = append(rels, spdxRelationship{Element: img.SPDXID, Type: rel, Related: p.SPDXID})
		} else {
			rels = append(rels, spdxRelationship{Element: img.SPDXID, Type: "CONTAINS", Related: p.SPDXID})
		}
	}
	for _, p := range platforms {
		if in.BaseName == "" {
			break
		}
		bp := spdxPackage{SPDXID: spdxID("Base", p), Name: in.BaseName, DownloadLocation: "NOASSERTION", PrimaryPurpose: "CONTAINER", Comment: "base image for " + p}
		if d := in.BaseDigests[p]; d != "" {
			bp.VersionInfo = d
			if alg, hexd, ok := strings.Cut(d, ":"); ok && alg == "sha256" {
				bp.Checksums = []spdxChecksum{{Algorithm: "SHA256", Value: hexd}}
			}
			repo := in.BaseName
			if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
				repo = repo[:i]
			}
			bp.ExternalRefs = []spdxExtRef{{Category: "PACKAGE-MANAGER", Type: "purl",
				Locator: fmt.Sprintf("pkg:oci/%s@%s?repository_url=%s&platform=%s", repo[strings.LastIndex(repo, "/")+1:], strings.ReplaceAll(d, ":", "%3A"), repo, strings.ReplaceAll(p, "/", "%2F"))}}
		}
		add(bp, "DESCENDANT_OF")
	}
	if in.CodeServer != "" {
		add(spdxPackage{SPDXID: spdxID("code-server", in.CodeServer), Name: "code-server", VersionInfo: in.CodeServer,
			DownloadLocation: "https://github.com/coder/code-server", Comment: "VS Code " + in.VSCode,
			ExternalRefs: []spdxExtRef{{Category: "PACKAGE-MANAGER", Type: "purl", Locator: "pkg:npm/code-server@" + in.CodeServer}}}, "CONTAINS")
	}
	for _, e := range in.Extensions {
		for _, p := range platforms {
			f, ok := e.Files[p]
			if !ok {
				return nil, fmt.Errorf("extension %s@%s has no file for %s", e.ID, e.Version, p)
			}
			ep := spdxPackage{SPDXID: spdxID("vsix", e.ID, e.Version, p), Name: e.ID, VersionInfo: e.Version,
				DownloadLocation: noassert(f.URL), Comment: "VS Code extension, target platform " + f.TargetPlatform + ", installed on " + p}
			if f.SHA256 != "" {
				ep.Checksums = []spdxChecksum{{Algorithm: "SHA256", Value: f.SHA256}}
			}
			add(ep, "CONTAINS")
		}
	}
	if in.Python != "" {
		add(spdxPackage{SPDXID: spdxID("python", in.Python), Name: "python", VersionInfo: in.Python, DownloadLocation: "NOASSERTION"}, "CONTAINS")
	}
	pys := in.PythonPackages
	if in.PythonByPlatform != nil {
		// The closure of every platform the document covers; a wheel of
		// another platform is another package (another sha256).
		pys = nil
		seen := map[string]bool{}
		for _, p := range platforms {
			for _, pp := range in.PythonByPlatform[p] {
				k := pp.Name + "@" + pp.Version + "@" + pp.SHA256
				if !seen[k] {
					seen[k] = true
					pys = append(pys, pp)
				}
			}
		}
	}
	for _, pp := range pys {
		id := spdxID("pypi", pp.Name, pp.Version)
		if pp.SHA256 != "" {
			id = spdxID("pypi", pp.Name, pp.Version, pp.SHA256[:12])
		}
		sp := spdxPackage{SPDXID: id, Name: pp.Name, VersionInfo: pp.Version, DownloadLocation: noassert(pp.URL),
			ExternalRefs: []spdxExtRef{{Category: "PACKAGE-MANAGER", Type: "purl", Locator: "pkg:pypi/" + strings.ToLower(pp.Name) + "@" + pp.Version}}}
		if pp.SHA256 != "" {
			sp.Checksums = []spdxChecksum{{Algorithm: "SHA256", Value: pp.SHA256}}
		}
		add(sp, "CONTAINS")
	}
	for i := range pkgs {
		pkgs[i].LicenseConcluded, pkgs[i].LicenseDeclared, pkgs[i].CopyrightText = "NOASSERTION", "NOASSERTION", "NOASSERTION"
	}
	doc.Packages, doc.Relationships = pkgs, rels
	// The namespace must be unique per document: derive it from the content.
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	doc.DocumentNamespace = "https://imagectl.dev/spdx/" + spdxIDRe.ReplaceAllString(in.ImageName, "-") + "-" + hex.EncodeToString(sum[:8])
	return json.MarshalIndent(doc, "", "  ")
}
