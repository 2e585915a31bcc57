// Package imagectl carries the project's defaults into the imagectl binary:
// matrix.yaml and catalog.json, embedded from the repository root (their one
// copy), so an installed imagectl works from any directory.
package imagectl

import _ "embed"

// Matrix is the repository's matrix.yaml.
//
//go:embed matrix.yaml
var Matrix []byte

// Catalog is the repository's catalog.json.
//
//go:embed catalog.json
var Catalog []byte
