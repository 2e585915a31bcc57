// Package catalog is the committed snapshot of upstream facts that resolution
// needs: code-server versions (with the VS Code they bundle and the base image
// digests per platform), Ray releases (with the CPython versions their wheels
// cover per platform), debugpy releases, and extension versions (engine,
// target platforms, pre-release flag, dependencies, pack, and file digests).
//
// Refresh queries the upstreams and writes the snapshot atomically; after that,
// resolution never touches the network.
//
// Load and Parse decode strictly with encoding/json/v2 (the
// github.com/go-json-experiment/json mirror): a duplicate key, a key that is
// not exactly a field name, a wrong type, null for a value that is not
// optional, a string over 16 KiB and data after the document are errors
// naming the line and the JSON path (decode.go). Validate then checks every
// value resolution and fetching use.
package catalog
