// Package builder adapts the build pipeline (build/pipeline) to release:
// its Builder builds a planned entry from the render its plan made, pushes
// the index by digest with no tag and no signature (release.Builder), and
// then signs what it pushed with its SBOM and provenance attestations
// (release.Signer), exactly as imagectl build --sign does.
//
// It is apart from package release so that release, which plans, tags and
// verifies, links neither BuildKit nor the build (arch_test.go).
package builder
