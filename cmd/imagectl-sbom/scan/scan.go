package scan

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/CycloneDX/cyclonedx-go"

	"github.com/anchore/stereoscope/pkg/file"
	"github.com/anchore/stereoscope/pkg/image"
	"github.com/anchore/syft/syft"
	"github.com/anchore/syft/syft/cataloging"
	"github.com/anchore/syft/syft/cataloging/pkgcataloging"
	syftfile "github.com/anchore/syft/syft/file"
	"github.com/anchore/syft/syft/format/common/cyclonedxhelpers"
	"github.com/anchore/syft/syft/format/common/spdxhelpers"
	"github.com/anchore/syft/syft/license"
	"github.com/anchore/syft/syft/pkg"
	syftsbom "github.com/anchore/syft/syft/sbom"
	"github.com/anchore/syft/syft/source"
	"github.com/anchore/syft/syft/source/stereoscopesource"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/sbom"
)

// scannerConfig says how Scan catalogues, besides the syft version: the
// catalogers, what is left out, how extensions are added. Change it with
// any change that makes Scan find or write something else, so that
// ToolVersion changes and a build attaches a new SBOM instead of keeping
// one made the old way.
const scannerConfig = "syft image catalogers without rpm-db-cataloger; no file catalogers; no package-file ownership relationships; vscode extensions from extensions.json with the lock's VSIX sha256 and URL, their licence from package.json or else their VSIX's licence file (2)"

// ToolVersion is the syft version Scan links and a digest of its
// configuration: two documents of the same image with the same
// ToolVersion have the same content.
func ToolVersion() string {
	sum := sha256.Sum256([]byte(scannerConfig))
	return syftVersion() + "-" + hex.EncodeToString(sum[:4])
}

// syftVersion is the version of github.com/anchore/syft in go.mod (a test
// checks they agree).
const syftModuleVersion = "v1.52.0"

func syftVersion() string { return syftModuleVersion }

// Scan catalogues img (one platform image) with syft's image catalogers,
// adds the VS Code extensions, and encodes the SBOM.
func Scan(ctx context.Context, img v1.Image, o sbom.Options) (*sbom.Result, error) {
	start := time.Now()
	if o.Format == "" {
		o.Format = sbom.FormatSPDX
	}
	if o.Format != sbom.FormatSPDX && o.Format != sbom.FormatCycloneDX {
		return nil, fmt.Errorf("sbom format %q: want %s or %s", o.Format, sbom.FormatSPDX, sbom.FormatCycloneDX)
	}
	if o.Parallelism <= 0 {
		o.Parallelism = 2
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("image digest: %w", err)
	}
	// Syft's license scanner is built while the layers are read, once per
	// process (see sharedLicenseScanner), unless Prepare started it.
	Prepare()
	tmp := file.NewTempDirGenerator("imagectl-sbom")
	defer tmp.Cleanup()
	cache := o.LayerDir
	if cache == "" {
		if cache, err = tmp.NewDirectory("layers"); err != nil {
			return nil, fmt.Errorf("sbom scratch directory: %w", err)
		}
	} else if err := os.MkdirAll(cache, 0o700); err != nil {
		return nil, fmt.Errorf("sbom layer directory: %w", err)
	}
	counted := &fetchCounter{Image: img}
	simg := image.New(counted, tmp, cache)
	if err := simg.Read(ctx); err != nil {
		return nil, fmt.Errorf("reading the %s image's layers: %w", o.Platform, err)
	}
	defer simg.Cleanup()
	ref := o.Name
	if o.Version != "" {
		ref += ":" + o.Version
	}
	src := stereoscopesource.New(simg, stereoscopesource.ImageConfig{Reference: ref + "@" + digest.String(), Alias: source.Alias{Name: o.Name, Version: o.Version}})
	lctx, err := sharedLicenseScanner()
	if err != nil {
		return nil, err
	}
	cfg := syft.DefaultCreateSBOMConfig().
		WithTool(sbom.ToolName, ToolVersion()).
		WithParallelism(o.Parallelism).
		WithoutFiles().
		// No package-to-file CONTAINS relationships: without file
		// cataloguing they name every file a dpkg or Python package owns
		// with an all-zero SHA1 (no digest was taken), 85-95% of the
		// document and nothing a verifier can check; the image's own
		// package databases list them. Packages, their evidence and the
		// package-to-package relationships are unchanged.
		WithRelationshipsConfig(cataloging.DefaultRelationshipsConfig().WithPackageFileOwnership(false)).
		// The image catalogers (installed packages), without the RPM
		// database one: it needs a sqlite driver linked in, and the bases
		// imagectl builds on are Debian and Ubuntu.
		WithCatalogerSelection(cataloging.NewSelectionRequest().WithDefaults(pkgcataloging.ImageTag).WithRemovals("rpm-db-cataloger"))
	cfg = cfg.WithPackagesConfig(cfg.Packages.WithBinaryConfig(classifierConfig()))
	s, err := syft.CreateSBOM(withValuesOf(ctx, lctx), src, cfg)
	if err != nil {
		return nil, fmt.Errorf("cataloguing the %s image with syft: %w", o.Platform, err)
	}
	exts, notes, err := extensionPackages(src, o)
	if err != nil {
		return nil, err
	}
	s.Artifacts.Packages.Add(exts...)

	res := &sbom.Result{Counts: map[string]int{}}
	if o.LayerDir != "" {
		if res.LayersPrefetched, err = counted.unread(); err != nil {
			return nil, fmt.Errorf("image config: %w", err)
		}
	}
	for p := range s.Artifacts.Packages.Enumerate() {
		res.Counts[string(p.Type)]++
	}
	var buf bytes.Buffer
	switch o.Format {
	case sbom.FormatSPDX:
		if err := writeSPDX(&buf, s, o, digest.String(), notes); err != nil {
			return nil, err
		}
		res.PredicateType = imagespec.PredicateSPDX
	case sbom.FormatCycloneDX:
		if err := writeCycloneDX(&buf, s, o); err != nil {
			return nil, err
		}
		res.PredicateType = imagespec.PredicateCycloneDX
	}
	res.Document = buf.Bytes()
	res.Duration = time.Since(start)
	return res, nil
}

// sharedLicenseScanner is a context carrying syft's license scanner with
// the configuration of syft.DefaultCreateSBOMConfig, for every Scan of the
// process. Building it compiles licensecheck's built-in licenses into one
// matcher, about 0.8 s of CPU, which syft.CreateSBOM would otherwise do on
// each call; the scanner only reads that matcher (syft's own catalogers
// share one across their goroutines).
var sharedLicenseScanner = sync.OnceValues(func() (context.Context, error) {
	ctx, err := syft.SetContextLicenseScanner(context.Background(), syft.DefaultCreateSBOMConfig().Licenses)
	if err != nil {
		return nil, fmt.Errorf("syft's license scanner: %w", err)
	}
	return ctx, nil
})

// Prepare starts building, in the background, what every Scan of the
// process shares (syft's license scanner): a build that will scan calls it
// before its solve, which leaves CPU idle, instead of the first Scan
// building it after the push.
func Prepare() {
	go func() { _, _ = sharedLicenseScanner() }()
}

// valuesOf is a context with the cancellation, deadline and values of its
// Context and, for keys that one lacks, the values of values.
type valuesOf struct {
	context.Context
	values context.Context
}

func withValuesOf(ctx, values context.Context) context.Context {
	return valuesOf{Context: ctx, values: values}
}

func (c valuesOf) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// writeSPDX encodes s as SPDX 2.3 with the VSIX sha256 and URL of each
// extension and where its licence was read (licenseNotes, by id@version
// with the id lower-cased), a fixed creation time and a namespace from the
// image digest.
func writeSPDX(w io.Writer, s *syftsbom.SBOM, o sbom.Options, digest string, licenseNotes map[string]string) error {
	doc := spdxhelpers.ToFormatModel(*s)
	if doc == nil {
		return fmt.Errorf("converting the SBOM to SPDX")
	}
	created := o.Created.UTC()
	if o.Created.IsZero() {
		created = time.Unix(0, 0).UTC()
	}
	if doc.CreationInfo == nil {
		doc.CreationInfo = &spdx.CreationInfo{}
	}
	doc.CreationInfo.Created = created.Format(time.RFC3339)
	doc.DocumentNamespace = "https://imagectl.dev/spdx/" + strings.NewReplacer("/", "-", ":", "-").Replace(o.Name) + "/" + strings.ReplaceAll(o.Platform, "/", "-") + "/" + strings.TrimPrefix(digest, "sha256:")
	files := extensionFiles(o)
	for _, p := range doc.Packages {
		if !isExtensionPackage(p) {
			continue
		}
		key := strings.ToLower(p.PackageName) + "@" + p.PackageVersion
		if n := licenseNotes[key]; n != "" {
			p.PackageLicenseComments = n
		}
		f, ok := files[key]
		if !ok {
			continue
		}
		if f.SHA256 != "" {
			p.PackageChecksums = append(p.PackageChecksums, spdx.Checksum{Algorithm: spdx.SHA256, Value: f.SHA256})
		}
		if f.URL != "" {
			p.PackageDownloadLocation = f.URL
		}
		p.PackageComment = "VS Code extension installed under " + imagespec.ExtensionsDir + " from the VSIX of target platform " + f.TargetPlatform
	}
	return spdxjson.Write(doc, w)
}

// writeCycloneDX encodes s as CycloneDX JSON (syft's default spec
// version) with the VSIX sha256 of each extension as a component hash.
func writeCycloneDX(w io.Writer, s *syftsbom.SBOM, o sbom.Options) error {
	bom := cyclonedxhelpers.ToFormatModel(*s)
	if bom == nil {
		return fmt.Errorf("converting the SBOM to CycloneDX")
	}
	if bom.Metadata != nil {
		created := o.Created.UTC()
		if o.Created.IsZero() {
			created = time.Unix(0, 0).UTC()
		}
		bom.Metadata.Timestamp = created.Format(time.RFC3339)
	}
	files := extensionFiles(o)
	if bom.Components != nil {
		for i, c := range *bom.Components {
			if !strings.Contains(c.PackageURL, "type=vscode-extension") {
				continue
			}
			f, ok := files[strings.ToLower(c.Name)+"@"+c.Version]
			if !ok || f.SHA256 == "" {
				continue
			}
			hashes := append([]cyclonedx.Hash(nil), derefHashes(c.Hashes)...)
			hashes = append(hashes, cyclonedx.Hash{Algorithm: cyclonedx.HashAlgoSHA256, Value: f.SHA256})
			(*bom.Components)[i].Hashes = &hashes
		}
	}
	enc := cyclonedx.NewBOMEncoder(w, cyclonedx.BOMFileFormatJSON)
	enc.SetPretty(true)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(bom); err != nil {
		return fmt.Errorf("encoding CycloneDX: %w", err)
	}
	return nil
}

func derefHashes(h *[]cyclonedx.Hash) []cyclonedx.Hash {
	if h == nil {
		return nil
	}
	return *h
}

// extensionFiles maps "id@version" (id lower-cased) to the VSIX installed
// on o.Platform.
func extensionFiles(o sbom.Options) map[string]imagespec.File {
	files := map[string]imagespec.File{}
	for _, e := range o.Extensions {
		files[strings.ToLower(e.ID)+"@"+e.Version] = e.Files[o.Platform]
	}
	return files
}

func isExtensionPackage(p *spdx.Package) bool {
	for _, r := range p.PackageExternalReferences {
		if r.RefType == "purl" && strings.HasPrefix(r.Locator, "pkg:generic/") && strings.Contains(r.Locator, "vscode-extension") {
			return true
		}
	}
	return false
}

// installedExtension is one entry of extensions.json.
type installedExtension struct {
	Identifier struct {
		ID string `json:"id"`
	} `json:"identifier"`
	Version          string `json:"version"`
	RelativeLocation string `json:"relativeLocation"`
}

// extensionPackages reads /config/extensions/extensions.json and each
// extension's package.json from the image, with the extension's licence
// as its VSIX declares it: package.json's license (an SPDX expression), or
// else the licence file the VSIX manifest names (extension.vsixmanifest's
// License, kept as .vsixmanifest in the installed folder), recorded by the
// first line of its text (its title, "AS License") with the text itself.
// notes says, per id@version (id lower-cased), where the licence was read.
func extensionPackages(src source.Source, o sbom.Options) (out []pkg.Package, notes map[string]string, err error) {
	res, err := src.FileResolver(source.SquashedScope)
	if err != nil {
		return nil, nil, err
	}
	read := func(p string) ([]byte, *syftfile.Location, error) {
		locs, err := res.FilesByPath(p)
		if err != nil || len(locs) == 0 {
			return nil, nil, err
		}
		rc, err := res.FileContentsByLocation(locs[0])
		if err != nil {
			return nil, nil, err
		}
		defer rc.Close()
		b, err := io.ReadAll(io.LimitReader(rc, 16<<20))
		return b, &locs[0], err
	}
	notes = map[string]string{}
	raw, _, err := read(path.Join(imagespec.ExtensionsDir, "extensions.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s/extensions.json from the %s image: %w", imagespec.ExtensionsDir, o.Platform, err)
	}
	if raw == nil {
		return nil, nil, nil // no extensions installed
	}
	var installed []installedExtension
	if err := json.Unmarshal(raw, &installed); err != nil {
		return nil, nil, fmt.Errorf("%s/extensions.json of the %s image: %w", imagespec.ExtensionsDir, o.Platform, err)
	}
	for _, ie := range installed {
		dir := ie.RelativeLocation
		if dir == "" || strings.Contains(dir, "/") {
			dir = ie.Identifier.ID + "-" + ie.Version
		}
		manifest := path.Join(imagespec.ExtensionsDir, dir, "package.json")
		b, loc, err := read(manifest)
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s from the %s image: %w", manifest, o.Platform, err)
		}
		if b == nil {
			return nil, nil, fmt.Errorf("extensions.json of the %s image lists %s %s, but %s is missing", o.Platform, ie.Identifier.ID, ie.Version, manifest)
		}
		var pj struct {
			Name, Publisher, Version, License string
		}
		if err := json.Unmarshal(b, &pj); err != nil {
			return nil, nil, fmt.Errorf("%s of the %s image: %w", manifest, o.Platform, err)
		}
		id := pj.Publisher + "." + pj.Name
		if pj.Publisher == "" || pj.Name == "" {
			id = ie.Identifier.ID
		}
		p := pkg.Package{
			Name:      id,
			Version:   pj.Version,
			Type:      pkg.Type(sbom.ExtensionType),
			FoundBy:   "imagectl-vscode-extensions",
			Language:  pkg.JavaScript,
			Locations: syftfile.NewLocationSet(*loc),
			PURL:      "pkg:generic/" + strings.ToLower(id) + "@" + pj.Version + "?type=vscode-extension",
		}
		lic, note, err := extensionLicense(read, path.Join(imagespec.ExtensionsDir, dir), pj.License, *loc)
		if err != nil {
			return nil, nil, fmt.Errorf("the licence of %s %s in the %s image: %w", id, pj.Version, o.Platform, err)
		}
		if lic != nil {
			p.Licenses = pkg.NewLicenseSet(*lic)
		}
		notes[strings.ToLower(id)+"@"+pj.Version] = note
		p.SetID()
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b pkg.Package) int { return strings.Compare(a.Name, b.Name) })
	return out, notes, nil
}

// maxLicenseFile bounds the licence text read into the SBOM.
const maxLicenseFile = 256 << 10

// licenseFileNames are the names vsce packages a licence file under when
// the VSIX manifest names none.
var licenseFileNames = []string{"LICENSE.txt", "LICENSE.md", "LICENSE", "license.txt", "license.md", "license"}

// extensionLicense is the licence of the extension installed in dir
// (package.json's license is declared, found at pjLoc): declared when it
// is a licence rather than npm's "SEE LICENSE IN <file>", else read from
// the licence file the VSIX manifest names (or vsce's usual names). note
// says where it was read, for the SBOM's licence comment.
func extensionLicense(read func(string) ([]byte, *syftfile.Location, error), dir, declared string, pjLoc syftfile.Location) (lic *pkg.License, note string, err error) {
	file := ""
	if raw, _, err := read(path.Join(dir, ".vsixmanifest")); err != nil {
		return nil, "", err
	} else if raw != nil {
		var m struct {
			Metadata struct {
				License string `xml:"License"`
			} `xml:"Metadata"`
		}
		if err := xml.Unmarshal(raw, &m); err != nil {
			return nil, "", fmt.Errorf("%s/.vsixmanifest: %w", dir, err)
		}
		if f, ok := strings.CutPrefix(strings.TrimSpace(m.Metadata.License), "extension/"); ok && f != "" && !strings.Contains(f, "..") {
			file = f
		}
	}
	var text []byte
	var textLoc *syftfile.Location
	for _, f := range append([]string{file}, licenseFileNames...) {
		if f == "" {
			continue
		}
		b, loc, err := read(path.Join(dir, f))
		if err != nil {
			return nil, "", err
		}
		if b != nil {
			text, textLoc, file = b, loc, path.Join(dir, f)
			break
		}
	}
	title := licenseTitle(text)
	upper := strings.ToUpper(strings.TrimSpace(declared))
	if declared != "" && !strings.HasPrefix(upper, "SEE LICENSE IN") {
		l := pkg.NewLicenseFromLocations(declared, pjLoc)
		note = "licence declared in package.json: " + declared
		if textLoc != nil {
			note += fmt.Sprintf("; licence file %s (%q)", file, title)
		}
		return &l, note, nil
	}
	if textLoc == nil {
		if declared != "" {
			return nil, "package.json says " + declared + ", and the extension has no licence file", nil
		}
		return nil, "neither package.json nor a licence file states a licence", nil
	}
	if len(text) > maxLicenseFile {
		text = text[:maxLicenseFile]
	}
	l := pkg.License{Value: title, Type: license.Declared, Contents: string(text), Locations: syftfile.NewLocationSet(*textLoc)}
	note = fmt.Sprintf("licence file %s (%q); package.json states no licence", file, title)
	if declared != "" {
		note = fmt.Sprintf("licence file %s (%q), as package.json says: %s", file, title, declared)
	}
	return &l, note, nil
}

// licenseTitle is the first non-empty line of a licence text, at most 100
// characters: the licence's name ("MIT License", "AS License").
func licenseTitle(text []byte) string {
	for line := range strings.Lines(string(text)) {
		if t := strings.TrimSpace(line); t != "" {
			if len(t) > 100 {
				t = t[:100]
			}
			return t
		}
	}
	return "licence file"
}
