// Package catalog is the committed snapshot of upstream facts that resolution
// needs: code-server versions (with the VS Code they bundle and the base image
// digests per platform), Ray releases (with the CPython versions their wheels
// cover per platform), debugpy releases, and extension versions (engine,
// target platforms, pre-release flag, dependencies, pack, and file digests).
//
// Refresh queries the upstreams and writes the snapshot atomically; after that,
// resolution never touches the network.
package catalog
