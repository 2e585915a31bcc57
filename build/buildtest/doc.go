// Package buildtest is a fake build.Interface for tests that run the build
// pipeline without a buildkitd: Build makes each platform image from the
// files the pipeline wrote into the spec's build contexts (one layer), with
// the spec's labels and SOURCE_DATE_EPOCH as the config's created time, and
// exports it as BuildKit does: an index of the image manifest (and, with
// Provenance, a provenance attestation manifest) pushed by digest to the
// spec's repository, or written as an OCI layout tarball to spec.Archive.
// Images are deterministic: the same spec gives the same digests.
package buildtest
