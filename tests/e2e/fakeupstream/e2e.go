package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/extensions/gallerytest"
)

// runGallery serves the VSIX fixtures as a fake Marketplace and Open VSX and
// writes their base URLs to -urls-file as JSON.
func runGallery(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gallery", flag.ExitOnError)
	dir := fs.String("dir", gallerytest.FixtureDir(), "directory of *.vsix fixtures")
	urls := fs.String("urls-file", "", "write {\"marketplace\":..., \"openvsx\":...} here")
	fs.Parse(args)
	builds, err := gallerytest.LoadDir(*dir)
	if err != nil {
		return err
	}
	f := gallerytest.New(builds)
	defer f.Close()
	b, _ := json.Marshal(map[string]string{"marketplace": f.MarketplaceURL(), "openvsx": f.OpenVSXURL()})
	if *urls != "" {
		if err := os.WriteFile(*urls+".tmp", b, 0o644); err != nil {
			return err
		}
		if err := os.Rename(*urls+".tmp", *urls); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// runConfig writes the e2e matrix.yaml and catalog.json: every upstream
// pointed at the local servers, the stand-in base digests, and a catalog of
// the VSIX fixtures with their real sha256.
func runConfig(args []string) error {
	fs := flag.NewFlagSet("e2e-config", flag.ExitOnError)
	out := fs.String("out", "", "directory for matrix.yaml and catalog.json")
	registry := fs.String("registry", "", "host:port of the local registry")
	baseJSON := fs.String("base", "", "push-base output (index and platform digests)")
	urlsFile := fs.String("gallery-urls", "", "gallery -urls-file output")
	pyIndex := fs.String("package-index", "", "PEP 503 index URL")
	vsixDir := fs.String("vsix", gallerytest.FixtureDir(), "directory of *.vsix fixtures")
	debuggerConstraint := fs.String("ray-debugger", "", "constraint on anyscalecompute.ray-distributed-debugger")
	toolsImage := fs.String("tools-image", "", "build.toolsImage (the build-platform image with python3 and pip), a tag")
	toolsJSON := fs.String("tools", "", "push-base output of the tools image: its index digest is recorded in the catalog, as matrix refresh would")
	omit := fs.String("omit", "", "comma-separated id@version to leave out of the catalog (a snapshot taken before that release)")
	fs.Parse(args)
	if *out == "" || *registry == "" || *baseJSON == "" || *urlsFile == "" || *pyIndex == "" || *toolsImage == "" || *toolsJSON == "" {
		return errors.New("-out, -registry, -base, -gallery-urls, -package-index, -tools-image and -tools are required")
	}
	omitted := map[string]bool{}
	for _, o := range strings.Split(*omit, ",") {
		if o != "" {
			omitted[o] = true
		}
	}
	var base struct {
		Index     string            `json:"index"`
		Platforms map[string]string `json:"platforms"`
	}
	if err := readJSON(*baseJSON, &base); err != nil {
		return err
	}
	var tools struct {
		Index string `json:"index"`
	}
	if err := readJSON(*toolsJSON, &tools); err != nil {
		return err
	}
	if tools.Index == "" {
		return fmt.Errorf("%s: no index digest", *toolsJSON)
	}
	var urls map[string]string
	if err := readJSON(*urlsFile, &urls); err != nil {
		return err
	}
	builds, err := gallerytest.LoadDir(*vsixDir)
	if err != nil {
		return err
	}
	cat := catalog.Catalog{
		SchemaVersion: catalog.SchemaVersion,
		Describes:     "2025-07-15",
		Origin:        "imagectl e2e: stand-in base images, fixture wheels and vsce-built VSIX fixtures (tests/e2e/run.sh)",
		CodeServer: []catalog.CodeServer{{
			Version: "4.101.2", VSCode: "1.101.2", Tag: "4.101.2",
			IndexDigest: base.Index, Platforms: base.Platforms,
		}},
		ToolsImage: &catalog.ToolsImage{Ref: *toolsImage, Digest: tools.Index},
		Ray: []catalog.PythonPackage{{Version: "2.46.0", Pythons: map[string][]string{
			"linux/amd64": {"3.11", "3.12"}, "linux/arm64": {"3.11", "3.12"},
		}}},
		Debugpy: []catalog.PythonPackage{{Version: "1.8.14", Pythons: map[string][]string{
			"linux/amd64": {"3.11", "3.12"}, "linux/arm64": {"3.11", "3.12"},
		}}},
	}
	cat.Extensions = extensionRecords(builds, omitted)
	catalog.Normalize(&cat)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := catalog.Write(filepath.Join(*out, "catalog.json"), &cat); err != nil {
		return err
	}
	dbg := ""
	if *debuggerConstraint != "" {
		dbg = fmt.Sprintf("\n    constraint: %q", *debuggerConstraint)
	}
	m := fmt.Sprintf(e2eMatrix, *registry, urls["marketplace"], urls["openvsx"], *pyIndex, dbg, *toolsImage)
	return os.WriteFile(filepath.Join(*out, "matrix.yaml"), []byte(m), 0o644)
}

// extensionRecords is the catalog's record of every fixture build but the
// omitted (id@version) ones, ids sorted, versions newest first.
func extensionRecords(builds []gallerytest.Build, omitted map[string]bool) []catalog.ExtensionRecord {
	recs := map[string]*catalog.ExtensionRecord{}
	vers := map[string]*catalog.ExtensionVersion{}
	for _, b := range builds {
		if omitted[b.ID+"@"+b.Version] {
			continue
		}
		r := recs[b.ID]
		if r == nil {
			r = &catalog.ExtensionRecord{ID: b.ID, Source: "marketplace"}
			recs[b.ID] = r
		}
		k := b.ID + "@" + b.Version
		v := vers[k]
		if v == nil {
			v = &catalog.ExtensionVersion{Version: b.Version, PreRelease: b.PreRelease, Engine: b.Engine,
				Dependencies: b.Dependencies, ExtensionPack: b.ExtensionPack, Files: map[string]catalog.File{}}
			vers[k] = v
		}
		v.Files[b.TargetPlatform] = catalog.File{SHA256: b.SHA256(), Size: int64(len(b.Body))}
	}
	var out []catalog.ExtensionRecord
	ids := make([]string, 0, len(recs))
	for id := range recs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := recs[id]
		var ks []string
		for k := range vers {
			if strings.HasPrefix(k, id+"@") {
				ks = append(ks, k)
			}
		}
		sort.Slice(ks, func(i, j int) bool {
			return catalog.CompareVersions(strings.TrimPrefix(ks[i], id+"@"), strings.TrimPrefix(ks[j], id+"@")) > 0
		})
		for _, k := range ks {
			r.Versions = append(r.Versions, *vers[k])
		}
		out = append(out, *r)
	}
	return out
}

// e2eMatrix is the e2e matrix.yaml, a fmt format: 1 the registry, 2 and 3
// the Marketplace and Open VSX URLs, 4 the package index, 5 the debugger's
// constraint line, 6 the tools image.
const e2eMatrix = `# Written by tests/e2e/fakeupstream e2e-config: every upstream is local.
image:
  name: code-server-ray-e2e
  repositories:
    - %[1]s/code-server-ray
  source: https://example.invalid/imagectl-e2e
platforms:
  - linux/amd64
  - linux/arm64
base:
  image: %[1]s/code-server
  versions: registry-tags
  tagPattern: '^(\d+\.\d+\.\d+)$'
components:
  codeServer:
    constraint: ">=4.96.0"
  ray:
    constraint: ">=2.39.0"
    extras: [default]
  python:
    policy: highest-common
    # The stand-in base (Debian bookworm) ships python3.11.
    max: "3.11"
  debugpy:
    constraint: ">=1.8.0"
extensions:
  - id: ms-python.python
    source: marketplace
  - id: ms-python.debugpy
    source: marketplace
  - id: anyscalecompute.ray-distributed-debugger
    source: marketplace%[5]s
settings:
  anyscalecompute.ray-distributed-debugger.clusterDashboards:
    - host: "127.0.0.1:8265"
      localRoot: ""
build:
  toolsImage: %[6]s
  # The stand-in base ships python3.11 (Debian bookworm).
  pythonRuntime: base
tags:
  - template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}-{{.Inputs}}"
  - template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}"
    floating: true
  - template: "ray{{.Ray}}"
    floating: true
  - template: latest
    floating: true
upstreams:
  pypi: %[4]s
  marketplace: %[2]s
  openvsx: %[3]s
  github: http://127.0.0.1:1
  packageIndex: %[4]s
`

func readJSON(p string, v any) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}
