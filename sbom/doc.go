// Package sbom is how imagectl gets the SBOM of an image from its content
// without linking syft: Command runs the scanner, imagectl-sbom (the
// nested module cmd/imagectl-sbom, whose package scan catalogues an image
// with syft), one process per platform image. The image is served to the
// scanner read-only by a registry on 127.0.0.1 for the time of the scan,
// its layers read from wherever the caller's image reads them, with the
// caller's credentials; Request and Result are what goes to the scanner
// and back (JSON). MadeBy tells whether a document was written by the
// scanner at its version (Command.Tool), so that a build keeps an SBOM a
// scan would write again.
//
// Prefetch decompresses a base image's layers ahead of the scans of
// images built on it, into the layer directory the scanner reads
// (Options.LayerDir), while BuildKit solves.
//
// Reading an SBOM document back, and writing one from the lock, is
// package sbom/document.
package sbom
