package sbom

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/imagectl/imagectl/imagespec"
)

// Formats of the document a scan writes.
const (
	FormatSPDX      = "spdx"
	FormatCycloneDX = "cyclonedx"
)

// ToolName is the tool a scan names in its document (SPDX creators
// "Tool: imagectl-syft-<version>", CycloneDX metadata.tools), the version
// being the scanner's (Command.Tool).
const ToolName = "imagectl-syft"

// ExtensionType is the package type of a VS Code extension in a scanned
// SBOM (Result.Counts, and the document's packages).
const ExtensionType = "vscode-extension"

// Options say what a scanned document is about. They are the request
// imagectl-sbom reads, with the image.
type Options struct {
	// Name is the image repository and Version its primary tag.
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Platform is the OCI platform of the image.
	Platform string `json:"platform"`
	// Created is the document's creation time (SOURCE_DATE_EPOCH).
	Created time.Time `json:"created"`
	// Extensions are the set's extensions: their VSIX sha256 and URL for
	// Platform go into the SBOM beside what the image has installed.
	Extensions []imagespec.Extension `json:"extensions,omitempty"`
	// Format is FormatSPDX (default) or FormatCycloneDX.
	Format string `json:"format,omitempty"`
	// Parallelism of syft's catalogers (default 2).
	Parallelism int `json:"parallelism,omitempty"`
	// LayerDir, if set, is where the image's uncompressed layers are read
	// from and written to (a layer already there, written by Prefetch, is
	// not fetched again); otherwise a scratch directory. The caller removes
	// it (the scan may, once done).
	LayerDir string `json:"layerDir,omitempty"`
}

// Request is what imagectl-sbom scan reads on its standard input: the
// image to scan, by digest, and the Options.
type Request struct {
	// Image is the platform image, REGISTRY/REPO@sha256:..., read over
	// plain HTTP (Command serves it on a loopback address).
	Image string `json:"image"`
	Options
}

// Result is one platform's SBOM, what imagectl-sbom scan writes on its
// standard output.
type Result struct {
	// Document is the SBOM (SPDX 2.3 JSON or CycloneDX JSON) and
	// PredicateType its in-toto predicate type.
	Document      []byte `json:"document"`
	PredicateType string `json:"documentType"`
	// Counts are the packages found per type (deb, python, npm,
	// vscode-extension, ...).
	Counts map[string]int `json:"counts"`
	// Duration is how long the scan took.
	Duration time.Duration `json:"duration"`
	// LayersPrefetched counts the image's layers whose content the scan did
	// not fetch: it read them from Options.LayerDir (written there by
	// Prefetch).
	LayersPrefetched int `json:"layersPrefetched"`
}

// ValidateFormat returns nil for FormatSPDX, FormatCycloneDX and "" (SPDX).
func ValidateFormat(f string) error {
	if f != "" && f != FormatSPDX && f != FormatCycloneDX {
		return fmt.Errorf("SBOM format %q: want %s or %s", f, FormatSPDX, FormatCycloneDX)
	}
	return nil
}

// MadeBy returns a check that is nil for an SPDX or CycloneDX JSON SBOM
// naming tool ("imagectl-syft-<version>", Command.Tool's answer) as its
// tool, and otherwise says what it names: an SBOM written from the lock,
// or by another scanner or configuration, is not what the scanner would
// write.
func MadeBy(tool string) func(doc []byte) error {
	return func(doc []byte) error { return madeBy(doc, tool) }
}

func madeBy(doc []byte, want string) error {
	var d struct {
		CreationInfo struct {
			Creators []string `json:"creators"`
		} `json:"creationInfo"`
		Metadata struct {
			Tools json.RawMessage `json:"tools"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return fmt.Errorf("is not JSON: %w", err)
	}
	var tools []string
	for _, c := range d.CreationInfo.Creators {
		if t, ok := strings.CutPrefix(c, "Tool: "); ok {
			tools = append(tools, t)
		}
	}
	if len(d.Metadata.Tools) > 0 {
		// CycloneDX 1.5+: {"components": [...]}; older: [...].
		var comps struct {
			Components []struct{ Name, Version string } `json:"components"`
		}
		var legacy []struct{ Name, Version string }
		if json.Unmarshal(d.Metadata.Tools, &comps) != nil {
			_ = json.Unmarshal(d.Metadata.Tools, &legacy)
		}
		for _, c := range append(comps.Components, legacy...) {
			tools = append(tools, c.Name+"-"+c.Version)
		}
	}
	if slices.Contains(tools, want) {
		return nil
	}
	if len(tools) == 0 {
		return fmt.Errorf("names no tool (want %s)", want)
	}
	return fmt.Errorf("was made by %s, not %s", strings.Join(tools, ", "), want)
}
