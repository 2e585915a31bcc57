package document

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"

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

var spdxIDRe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// spdxID is an SPDX element id (without its "SPDXRef-" prefix, which the
// encoder adds) made of parts.
func spdxID(parts ...string) common.ElementID {
	return common.ElementID(spdxIDRe.ReplaceAllString(strings.Join(parts, "-"), "-"))
}

func noassert(s string) string {
	if s == "" {
		return "NOASSERTION"
	}
	return s
}

func purl(locator string) []*spdx.PackageExternalReference {
	return []*spdx.PackageExternalReference{{Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL, Locator: locator}}
}

func sha256Checksum(hexd string) []common.Checksum {
	return []common.Checksum{{Algorithm: common.SHA256, Value: hexd}}
}

// ociPURL is the purl of a base image's platform manifest: its repository
// (the reference without tag or digest) and its last path element.
func ociPURL(ref, digest, platform string) string {
	repo, last := ref, ref
	if d, err := name.NewDigest(repo); err == nil {
		repo = strings.TrimSuffix(repo, "@"+d.DigestStr())
	}
	if t, err := name.NewTag(repo, name.WithDefaultTag("")); err == nil {
		if t.TagStr() != "" {
			repo = strings.TrimSuffix(repo, ":"+t.TagStr())
		}
		last = t.RepositoryStr()
	}
	return fmt.Sprintf("pkg:oci/%s@%s?repository_url=%s&platform=%s", path.Base(last), strings.ReplaceAll(digest, ":", "%3A"), repo, strings.ReplaceAll(platform, "/", "%2F"))
}

// SPDX renders the SBOM for one platform ("" = the index: every platform) as
// SPDX 2.3 JSON (spdx/tools-golang's model and encoder). The same input
// gives the same bytes.
func SPDX(in SBOMInput, platform string) ([]byte, error) {
	if in.ImageName == "" {
		return nil, errors.New("SBOM input has no image name")
	}
	platforms := []string{platform}
	if platform == "" {
		platforms = append([]string(nil), in.Platforms...)
		sort.Strings(platforms)
	}
	doc := spdxDocument(in, platform)
	img := &spdx.Package{
		PackageSPDXIdentifier: "Image", PackageName: in.ImageName, PackageVersion: in.ImageVersion,
		PackageDownloadLocation: "NOASSERTION", PrimaryPackagePurpose: "CONTAINER",
	}
	pkgs := []*spdx.Package{img}
	rel := func(a common.ElementID, typ string, b common.ElementID) *spdx.Relationship {
		return &spdx.Relationship{RefA: common.MakeDocElementID("", string(a)), Relationship: typ, RefB: common.MakeDocElementID("", string(b))}
	}
	rels := []*spdx.Relationship{rel(doc.SPDXIdentifier, common.TypeRelationshipDescribe, img.PackageSPDXIdentifier)}
	add := func(typ string, ps ...*spdx.Package) {
		for _, p := range ps {
			pkgs = append(pkgs, p)
			rels = append(rels, rel(img.PackageSPDXIdentifier, typ, p.PackageSPDXIdentifier))
		}
	}
	add(common.TypeRelationshipDescendantOf, spdxBases(in, platforms)...)
	if in.CodeServer != "" {
		add(common.TypeRelationshipContains, &spdx.Package{PackageSPDXIdentifier: spdxID("code-server", in.CodeServer), PackageName: "code-server", PackageVersion: in.CodeServer,
			PackageDownloadLocation: "https://github.com/coder/code-server", PackageComment: "VS Code " + in.VSCode,
			PackageExternalReferences: purl("pkg:npm/code-server@" + in.CodeServer)})
	}
	exts, err := spdxExtensions(in, platforms)
	if err != nil {
		return nil, err
	}
	add(common.TypeRelationshipContains, exts...)
	if in.Python != "" {
		add(common.TypeRelationshipContains, &spdx.Package{PackageSPDXIdentifier: spdxID("python", in.Python), PackageName: "python", PackageVersion: in.Python, PackageDownloadLocation: "NOASSERTION"})
	}
	add(common.TypeRelationshipContains, spdxPython(in, platforms)...)
	for _, p := range pkgs {
		p.PackageLicenseConcluded, p.PackageLicenseDeclared, p.PackageCopyrightText = "NOASSERTION", "NOASSERTION", "NOASSERTION"
	}
	doc.Packages, doc.Relationships = pkgs, rels
	// The namespace must be unique per document: derive it from the content.
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	doc.DocumentNamespace = "https://imagectl.dev/spdx/" + spdxIDRe.ReplaceAllString(in.ImageName, "-") + "-" + hex.EncodeToString(sum[:8])
	// As spdx/tools-golang's json.Write encodes (a json.Encoder indented by
	// two spaces), without importing its package: its reader converts SPDX
	// 3, which links a JSON-LD processor into every binary that writes.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding SPDX: %w", err)
	}
	return buf.Bytes(), nil
}

// spdxDocument is the document's header: its name and creation info.
func spdxDocument(in SBOMInput, platform string) *spdx.Document {
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
	return &spdx.Document{
		SPDXVersion:    spdx.Version,
		DataLicense:    spdx.DataLicense,
		SPDXIdentifier: "DOCUMENT",
		DocumentName:   docName,
		CreationInfo: &spdx.CreationInfo{
			Created:  created.Format(time.RFC3339),
			Creators: []common.Creator{{CreatorType: "Tool", Creator: "imagectl"}},
		},
	}
}

// spdxBases is the base image of each platform (none without a base name).
func spdxBases(in SBOMInput, platforms []string) []*spdx.Package {
	if in.BaseName == "" {
		return nil
	}
	var out []*spdx.Package
	for _, p := range platforms {
		bp := &spdx.Package{PackageSPDXIdentifier: spdxID("Base", p), PackageName: in.BaseName, PackageDownloadLocation: "NOASSERTION", PrimaryPackagePurpose: "CONTAINER", PackageComment: "base image for " + p}
		if d := in.BaseDigests[p]; d != "" {
			bp.PackageVersion = d
			if alg, hexd, ok := strings.Cut(d, ":"); ok && alg == "sha256" {
				bp.PackageChecksums = sha256Checksum(hexd)
			}
			bp.PackageExternalReferences = purl(ociPURL(in.BaseName, d, p))
		}
		out = append(out, bp)
	}
	return out
}

// spdxExtensions is each extension's file of each platform.
func spdxExtensions(in SBOMInput, platforms []string) ([]*spdx.Package, error) {
	var out []*spdx.Package
	for _, e := range in.Extensions {
		for _, p := range platforms {
			f, ok := e.Files[p]
			if !ok {
				return nil, fmt.Errorf("extension %s@%s has no file for %s", e.ID, e.Version, p)
			}
			ep := &spdx.Package{PackageSPDXIdentifier: spdxID("vsix", e.ID, e.Version, p), PackageName: e.ID, PackageVersion: e.Version,
				PackageDownloadLocation: noassert(f.URL), PackageComment: "VS Code extension, target platform " + f.TargetPlatform + ", installed on " + p}
			if f.SHA256 != "" {
				ep.PackageChecksums = sha256Checksum(f.SHA256)
			}
			out = append(out, ep)
		}
	}
	return out, nil
}

// spdxPython is the Python closure: PythonPackages, or with
// PythonByPlatform the closure of every platform the document covers (a
// wheel of another platform is another package: another sha256).
func spdxPython(in SBOMInput, platforms []string) []*spdx.Package {
	pys := in.PythonPackages
	if in.PythonByPlatform != nil {
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
	var out []*spdx.Package
	for _, pp := range pys {
		id := spdxID("pypi", pp.Name, pp.Version)
		if pp.SHA256 != "" {
			id = spdxID("pypi", pp.Name, pp.Version, pp.SHA256[:12])
		}
		sp := &spdx.Package{PackageSPDXIdentifier: id, PackageName: pp.Name, PackageVersion: pp.Version, PackageDownloadLocation: noassert(pp.URL),
			PackageExternalReferences: purl("pkg:pypi/" + strings.ToLower(pp.Name) + "@" + pp.Version)}
		if pp.SHA256 != "" {
			sp.PackageChecksums = sha256Checksum(pp.SHA256)
		}
		out = append(out, sp)
	}
	return out
}
