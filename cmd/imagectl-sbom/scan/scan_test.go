package scan

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"golang.org/x/sync/errgroup"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/sbom"
	"github.com/imagectl/imagectl/sbom/document"
)

// layer is a tar layer of files (path -> content).
func layer(t testing.TB, files map[string]string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	dirs := map[string]bool{}
	for _, n := range names {
		parts := strings.Split(n, "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/") + "/"
			if !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[n]))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(files[n]))
	}
	tw.Close()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

const dpkgStatus = `Package: libc6
Status: install ok installed
Priority: optional
Section: libs
Installed-Size: 12345
Maintainer: GNU Libc Maintainers <debian-glibc@lists.debian.org>
Architecture: arm64
Multi-Arch: same
Source: glibc
Version: 2.36-9+deb12u7
Description: GNU C Library: Shared libraries

Package: python3.11-minimal
Status: install ok installed
Priority: optional
Section: python
Installed-Size: 5000
Maintainer: Matthias Klose <doko@debian.org>
Architecture: arm64
Version: 3.11.2-6+deb12u2
Description: Minimal subset of the Python language

`

func metadata(name, version string) string {
	return "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\nSummary: x\n\n"
}

// testImage is a small arm64 image shaped like imagectl's: a Debian base,
// Python distributions under /opt/imagectl/python, code-server's npm
// packages and two installed extensions, in separate layers.
func testImage(t testing.TB) v1.Image {
	t.Helper()
	site := "opt/imagectl/python/lib/python3.12/site-packages/"
	img, err := mutate.AppendLayers(empty.Image,
		layer(t, map[string]string{
			"etc/os-release":                                   "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\n",
			"var/lib/dpkg/status":                              dpkgStatus,
			"app/code-server/package.json":                     `{"name":"code-server","version":"4.101.2"}`,
			"app/code-server/node_modules/argon2/package.json": `{"name":"argon2","version":"0.31.2","license":"MIT"}`,
		}),
		layer(t, map[string]string{
			site + "ray-2.46.0.dist-info/METADATA":       metadata("ray", "2.46.0"),
			site + "debugpy-1.8.14.dist-info/METADATA":   metadata("debugpy", "1.8.14"),
			site + "aiosignal-1.3.1.dist-info/METADATA":  metadata("aiosignal", "1.3.1"),
			site + "frozenlist-1.4.1.dist-info/METADATA": metadata("frozenlist", "1.4.1"),
		}),
		layer(t, map[string]string{
			"config/extensions/extensions.json": `[{"identifier":{"id":"ms-python.python"},"version":"2025.10.0","relativeLocation":"ms-python.python-2025.10.0"},
 {"identifier":{"id":"anyscalecompute.ray-distributed-debugger"},"version":"0.1.4","relativeLocation":"anyscalecompute.ray-distributed-debugger-0.1.4"}]`,
			"config/extensions/ms-python.python-2025.10.0/package.json":                     `{"name":"python","publisher":"ms-python","version":"2025.10.0","license":"MIT"}`,
			"config/extensions/anyscalecompute.ray-distributed-debugger-0.1.4/package.json": `{"name":"ray-distributed-debugger","publisher":"anyscalecompute","version":"0.1.4"}`,
			// As vsce packs them: package.json's license, else the licence
			// file the manifest names. The real ray-distributed-debugger
			// 0.1.6 has no license in package.json and Anyscale's "AS
			// License" in extension/LICENSE.txt.
			"config/extensions/ms-python.python-2025.10.0/.vsixmanifest":                     vsixManifest("python", "ms-python", "2025.10.0", "extension/LICENSE.txt"),
			"config/extensions/ms-python.python-2025.10.0/LICENSE.txt":                       "MIT License\n\nCopyright (c) Microsoft Corporation.\n",
			"config/extensions/anyscalecompute.ray-distributed-debugger-0.1.4/.vsixmanifest": vsixManifest("ray-distributed-debugger", "anyscalecompute", "0.1.4", "extension/LICENSE.txt"),
			"config/extensions/anyscalecompute.ray-distributed-debugger-0.1.4/LICENSE.txt":   asLicense,
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "arm64"
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// asLicense stands in for the ray-distributed-debugger's LICENSE.txt: its
// title and scope-of-use clause, not the whole text.
const asLicense = "AS License\n\nCopyright (2023) Anyscale, Inc.\n\nScope of Use. You may not use this Software except in connection with your use of the Anyscale Services pursuant to the Agreement.\n"

// vsixManifest is the .vsixmanifest code-server keeps in an installed
// extension's folder, as vsce writes it, naming its licence file.
func vsixManifest(name, publisher, version, license string) string {
	return `<?xml version="1.0" encoding="utf-8"?>
<PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011" xmlns:d="http://schemas.microsoft.com/developer/vsx-schema-design/2011">
	<Metadata>
		<Identity Language="en-US" Id="` + name + `" Version="` + version + `" Publisher="` + publisher + `" TargetPlatform="universal"/>
		<DisplayName>` + name + `</DisplayName>
		<License>` + license + `</License>
	</Metadata>
</PackageManifest>
`
}

func testExtensions() []imagespec.Extension {
	return []imagespec.Extension{
		{ID: "ms-python.python", Version: "2025.10.0", Files: map[string]imagespec.File{
			"linux/arm64": {TargetPlatform: "linux-arm64", URL: "https://gallery.example/python-arm64.vsix", SHA256: strings.Repeat("a", 64)},
			"linux/amd64": {TargetPlatform: "linux-x64", URL: "https://gallery.example/python-x64.vsix", SHA256: strings.Repeat("b", 64)},
		}},
		{ID: "anyscalecompute.ray-distributed-debugger", Version: "0.1.4", Files: map[string]imagespec.File{
			"linux/arm64": {TargetPlatform: "universal", URL: "https://gallery.example/ray.vsix", SHA256: strings.Repeat("c", 64)},
		}},
	}
}

func TestScanSPDX(t *testing.T) {
	img := testImage(t)
	o := sbom.Options{Name: "registry.example/code-server-ray", Version: "4.101.2-ray2.46.0-py3.12", Platform: "linux/arm64",
		Created: time.Unix(1752537600, 0), Extensions: testExtensions()}
	res, err := Scan(context.Background(), img, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.PredicateType != imagespec.PredicateSPDX {
		t.Errorf("predicate type %s", res.PredicateType)
	}
	var head struct {
		SPDXVersion  string `json:"spdxVersion"`
		Namespace    string `json:"documentNamespace"`
		CreationInfo struct {
			Created string `json:"created"`
		} `json:"creationInfo"`
	}
	if err := json.Unmarshal(res.Document, &head); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	if head.SPDXVersion != "SPDX-2.3" || head.CreationInfo.Created != "2025-07-15T00:00:00Z" || !strings.HasSuffix(head.Namespace, "/linux-arm64/"+d.Hex) {
		t.Errorf("document header %+v: want SPDX-2.3, created at SOURCE_DATE_EPOCH, namespace from the digest", head)
	}
	pkgs, err := document.Packages(res.Document)
	if err != nil {
		t.Fatal(err)
	}
	find := func(name, version string) *document.Package {
		for i, p := range pkgs {
			if p.Name == name && p.Version == version {
				return &pkgs[i]
			}
		}
		return nil
	}
	for _, w := range []struct{ name, version, purlPrefix string }{
		{"libc6", "2.36-9+deb12u7", "pkg:deb/debian/libc6@2.36-9%2Bdeb12u7"},
		{"python3.11-minimal", "3.11.2-6+deb12u2", "pkg:deb/debian/python3.11-minimal@"},
		{"ray", "2.46.0", "pkg:pypi/ray@2.46.0"},
		{"debugpy", "1.8.14", "pkg:pypi/debugpy@1.8.14"},
		{"aiosignal", "1.3.1", "pkg:pypi/aiosignal@1.3.1"},
		{"frozenlist", "1.4.1", "pkg:pypi/frozenlist@1.4.1"},
		{"argon2", "0.31.2", "pkg:npm/argon2@0.31.2"},
		{"ms-python.python", "2025.10.0", "pkg:generic/ms-python.python@2025.10.0"},
		{"anyscalecompute.ray-distributed-debugger", "0.1.4", "pkg:generic/anyscalecompute.ray-distributed-debugger@0.1.4"},
	} {
		p := find(w.name, w.version)
		if p == nil {
			t.Errorf("SBOM lacks %s %s", w.name, w.version)
			continue
		}
		if !strings.HasPrefix(p.PURL, w.purlPrefix) {
			t.Errorf("%s %s: purl %q, want %s...", w.name, w.version, p.PURL, w.purlPrefix)
		}
	}
	// The arm64 VSIX sha256, not the x64 one.
	if p := find("ms-python.python", "2025.10.0"); p != nil {
		if diff := cmp.Diff([]string{strings.Repeat("a", 64)}, p.SHA256); diff != "" {
			t.Errorf("ms-python.python sha256 (-want +got):\n%s", diff)
		}
	}
	// Each extension's licence as its VSIX declares it, and where it was read.
	type lic struct{ License, Comment string }
	gotLic := map[string]lic{}
	for name, version := range map[string]string{"ms-python.python": "2025.10.0", "anyscalecompute.ray-distributed-debugger": "0.1.4"} {
		if p := find(name, version); p != nil {
			gotLic[name] = lic{p.License, p.LicenseComment}
		}
	}
	wantLic := map[string]lic{
		"ms-python.python": {"MIT", `licence declared in package.json: MIT; licence file /config/extensions/ms-python.python-2025.10.0/LICENSE.txt ("MIT License")`},
		"anyscalecompute.ray-distributed-debugger": {`"AS License" (LicenseRef-AS-License)`,
			`licence file /config/extensions/anyscalecompute.ray-distributed-debugger-0.1.4/LICENSE.txt ("AS License"); package.json states no licence`},
	}
	if diff := cmp.Diff(wantLic, gotLic); diff != "" {
		t.Errorf("extension licences (-want +got):\n%s", diff)
	}
	// The licence that is not on the SPDX list carries its text.
	var doc struct {
		Extracted []struct {
			ID   string `json:"licenseId"`
			Name string `json:"name"`
			Text string `json:"extractedText"`
		} `json:"hasExtractedLicensingInfos"`
	}
	if err := json.Unmarshal(res.Document, &doc); err != nil {
		t.Fatal(err)
	}
	text := ""
	for _, e := range doc.Extracted {
		if e.ID == "LicenseRef-AS-License" && e.Name == "AS License" {
			text = e.Text
		}
	}
	if text != asLicense {
		t.Errorf("LicenseRef-AS-License's extracted text = %q, want the LICENSE.txt of the VSIX %q (licences %+v)", text, asLicense, doc.Extracted)
	}
	for typ, n := range map[string]int{"deb": 2, "python": 4, "vscode-extension": 2} {
		if res.Counts[typ] != n {
			t.Errorf("%d %s packages counted, want %d (%v)", res.Counts[typ], typ, n, res.Counts)
		}
	}
	// Reproducible: the same image gives the same bytes.
	again, err := Scan(context.Background(), img, o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Document, again.Document) {
		t.Error("two scans of the same image differ")
	}
}

func TestScanCycloneDX(t *testing.T) {
	res, err := Scan(context.Background(), testImage(t), sbom.Options{Name: "r/x", Platform: "linux/arm64", Format: sbom.FormatCycloneDX, Extensions: testExtensions()})
	if err != nil {
		t.Fatal(err)
	}
	if res.PredicateType != imagespec.PredicateCycloneDX {
		t.Errorf("predicate type %s", res.PredicateType)
	}
	pkgs, err := document.Packages(res.Document)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pkgs {
		names = append(names, p.Name+"@"+p.Version)
	}
	for _, want := range []string{"libc6@2.36-9+deb12u7", "aiosignal@1.3.1", "ms-python.python@2025.10.0"} {
		if !slices.Contains(names, want) {
			t.Errorf("CycloneDX components lack %s: %v", want, names)
		}
	}
	for _, p := range pkgs {
		if p.Name == "ms-python.python" && !slices.Equal(p.SHA256, []string{strings.Repeat("a", 64)}) {
			t.Errorf("ms-python.python component hashes %v, want the arm64 VSIX sha256", p.SHA256)
		}
		if want, ok := map[string]string{"ms-python.python": "MIT", "anyscalecompute.ray-distributed-debugger": `"AS License"`}[p.Name]; ok && p.License != want {
			t.Errorf("%s's CycloneDX licence = %q, want %q", p.Name, p.License, want)
		}
	}
	if _, err := Scan(context.Background(), testImage(t), sbom.Options{Format: "xml"}); err == nil {
		t.Error("format xml accepted")
	}
}

// The document names this scanner (so a build can keep an SBOM already
// attached by the same scanner) and has no package-to-file ownership
// relationships, only packages, their evidence and package relationships.
func TestScanToolAndNoFileOwnership(t *testing.T) {
	for _, format := range []string{sbom.FormatSPDX, sbom.FormatCycloneDX} {
		res, err := Scan(context.Background(), testImage(t), sbom.Options{Name: "r/x", Platform: "linux/arm64", Format: format, Extensions: testExtensions()})
		if err != nil {
			t.Fatal(err)
		}
		if err := sbom.MadeBy(sbom.ToolName + "-" + ToolVersion())(res.Document); err != nil {
			t.Errorf("%s: MadeByThisScanner: %v", format, err)
		}
		if !strings.Contains(ToolVersion(), "v1.") {
			t.Errorf("ToolVersion %q lacks the syft version", ToolVersion())
		}
		if format != sbom.FormatSPDX {
			continue
		}
		var d struct {
			Relationships []struct {
				From string `json:"spdxElementId"`
				To   string `json:"relatedSpdxElement"`
				Type string `json:"relationshipType"`
			} `json:"relationships"`
		}
		if err := json.Unmarshal(res.Document, &d); err != nil {
			t.Fatal(err)
		}
		for _, r := range d.Relationships {
			if r.Type == "CONTAINS" && strings.HasPrefix(r.From, "SPDXRef-Package-") && strings.HasPrefix(r.To, "SPDXRef-File-") {
				t.Errorf("file ownership relationship %s CONTAINS %s", r.From, r.To)
			}
		}
	}
	for _, c := range []struct{ name, doc string }{
		{"lock SBOM", `{"spdxVersion":"SPDX-2.3","creationInfo":{"creators":["Tool: imagectl"]}}`},
		{"older scanner", `{"spdxVersion":"SPDX-2.3","creationInfo":{"creators":["Tool: ` + sbom.ToolName + `-v0.0.1-00000000"]}}`},
		{"CycloneDX of another tool", `{"bomFormat":"CycloneDX","metadata":{"tools":{"components":[{"name":"syft","version":"1.0.0"}]}}}`},
		{"no tool", `{"spdxVersion":"SPDX-2.3"}`},
		{"not JSON", `<spdx/>`},
	} {
		if err := sbom.MadeBy(sbom.ToolName + "-" + ToolVersion())([]byte(c.doc)); err == nil {
			t.Errorf("%s: MadeByThisScanner accepted %s", c.name, c.doc)
		}
	}
}

func TestSyftVersionIsGoMod(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := "github.com/anchore/syft " + syftModuleVersion + "\n"
	if !strings.Contains(string(mod), want) {
		t.Errorf("go.mod does not require %q: update syftModuleVersion", strings.TrimSpace(want))
	}
}

// TestConcurrentScansWriteTheSameDocument scans one image twice at once
// (as a build scans its platforms, both with the process's one license
// scanner): each writes the same document as a scan alone. make race runs
// it under the race detector, which checks that sharing.
func TestConcurrentScansWriteTheSameDocument(t *testing.T) {
	img := testImage(t)
	o := sbom.Options{Name: "registry.example/code-server-ray", Platform: "linux/amd64", Extensions: testExtensions()}
	alone, err := Scan(context.Background(), img, o)
	if err != nil {
		t.Fatal(err)
	}
	docs := make([][]byte, 2)
	var g errgroup.Group
	for i := range docs {
		g.Go(func() error {
			res, err := Scan(context.Background(), img, o)
			if err != nil {
				return err
			}
			docs[i] = res.Document
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		if !bytes.Equal(d, alone.Document) {
			t.Errorf("concurrent scan %d wrote another document than a scan alone (%d and %d bytes)", i, len(d), len(alone.Document))
		}
	}
}

func TestWithValuesOf(t *testing.T) {
	type key string
	values := context.WithValue(context.Background(), key("shared"), "from values")
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key("own"), "own"))
	c := withValuesOf(ctx, values)
	if got := c.Value(key("own")); got != "own" {
		t.Errorf("own value = %v", got)
	}
	if got := context.WithValue(c, key("child"), 1).Value(key("shared")); got != "from values" {
		t.Errorf("value only values has, through a child = %v, want it", got)
	}
	cancel()
	select {
	case <-context.WithValue(c, key("child"), 1).Done():
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling the context did not cancel one made from it")
	}
}
