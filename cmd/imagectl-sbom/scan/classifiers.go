package scan

import (
	"github.com/anchore/syft/syft/pkg/cataloger/binary"
)

// nodeClass is the class of syft's Node.js binary classifier, and
// nodePattern the one of its two patterns that finds a Node.js of version 8
// or later ("node.js/v22.9.0" in the binary).
const (
	nodeClass   = "nodejs-binary"
	nodePattern = `(?m)node\.js\/v(?P<version>[0-9]+\.[0-9]+\.[0-9]+)`
)

// classifierConfig is syft's default binary classifier configuration with
// the Node.js classifier matching nodePattern alone. syft's own classifier
// first tries a pattern for Node.js 0.x and 4–6 (`\x00(node )?v(0|4|5|6)…\x00`)
// whose only literal is a NUL byte, so Go's regexp starts a match at every
// NUL of every file named node: seconds of CPU for code-server's ~100 MB
// node, the largest part of an SBOM scan (BenchmarkNodeClassifier). The cost
// of leaving it out: a Node.js 0.x or 4–6 binary in an image is not listed
// as a package (code-server ships Node.js 20 or later).
// Everything is set through syft's public API: binary.Classifier and its
// FileContentsVersionMatcher, deprecated for syft v2, where this stops
// compiling and is to be looked at again.
func classifierConfig() binary.ClassifierCatalogerConfig {
	cfg := binary.DefaultClassifierCatalogerConfig()
	for i := range cfg.Classifiers {
		if cfg.Classifiers[i].Class == nodeClass {
			//lint:ignore SA1019 syft's classifiers are built with this matcher; its replacement is internal to syft
			cfg.Classifiers[i].EvidenceMatcher = binary.FileContentsVersionMatcher(nodePattern)
		}
	}
	return cfg
}
