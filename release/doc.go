// Package release decides what a scheduled run must rebuild and publishes it
// safely.
//
// [Planner.Plan] compares, for every buildable set of the matrix, the digest of
// its inputs with the dev.imagectl.inputs.digest label of the image published
// under the set's versioned tag. It reads only manifests and config blobs
// (go-containerregistry, no layer pulls) and says why each entry needs work:
// not published yet, a new Ray or code-server release, the base rebuilt
// upstream, an extension bump, a component bump or a definition change, by
// comparing the dev.imagectl.lock label with the new set.
//
// [Releaser.Release] runs each planned entry through build (push by digest),
// sign and verify, and only then writes tags: the versioned tag first (it is
// immutable: never overwritten, a no-op when it already names the same
// digest), then the floating tags it owns, most specific first. The build,
// sign and verify steps are small interfaces ([Builder], [Signer],
// [Verifier]) defined here, where they are consumed; the command line wires the
// real implementations and decorators in one place.
package release
