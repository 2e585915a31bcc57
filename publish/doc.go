// Package publish publishes the platform images BuildKit exported as one
// multi-platform image, in the style of ko's publish package: one
// Interface, with a registry implementation (NewRegistry: the index pushed
// by digest, BuildKit's provenance attestations as referrers of their
// platform manifests, then the tags) and an OCI-archive implementation
// (NewArchive: the per-platform OCI tarballs merged into one that docker
// load accepts). The index bytes are the same either way (newIndex).
//
// The package knows BuildKit's exports only as digests and tarballs
// (Export), and links neither BuildKit nor the image definition.
package publish
