// Package pipeline is `imagectl build` from start to finish: Run composes
// the stages, each a function in pipeline.go with explicit inputs and
// outputs, in the order a build runs them:
//
//   - resolve (resolveStage): the set, its rendered definition and inputs
//     digest, its tags and repository (a target);
//   - the published check (publishedStage, published.go): with a push, stop
//     when the versioned tag already names an image of these inputs (signed
//     with the key, when signing);
//   - preflight: buildkitd answers, the registry takes a push;
//   - fetch (fetchStage): the extension files into the cache, each
//     validated once (extensions.Fetcher.FetchFiles: a download as it
//     arrives, a cached file when it is found);
//   - layout (layoutStage): each platform's extensions, settings.json
//     (computed once) and build contexts, as a build.Spec;
//   - solve (solveAll, solve.go): every platform through build.Interface,
//     the platforms pushed in turn so a shared layer is uploaded once; a
//     push to be signed (by Run, or by Build's caller) prepares each image
//     in its buildkitd's store first and starts its SBOM scan there
//     (earlyScans), so the scan runs while the image is pushed;
//   - publish (publish.go): a publish.Interface, as ko's, chosen in
//     newPublisher: the registry (index, provenance referrers, tags) or an
//     OCI archive;
//   - sign (Signing): the index and every platform manifest, with the
//     SBOM and provenance attestations.
//
// Each stage hands its output to the next; Result is what the build
// produced (imagectl build -o json), not the sign stage's state. Build runs
// every stage but sign and hands the sign stage (Signing) to its caller:
// imagectl release builds with it and signs in its own sign step; the
// Signing holds the scans beside the push until its Sign (or Close). Renders
// keeps each render by its inputs digest, so plan and release render a set
// once. Speed-ups wrap the stage they speed up: the scan of each platform
// image reads the base layers a prefetch decompressed during the solve
// (layerSource), by a scanner warmed during the solve (warmer), while the
// image is pushed (earlyScans; the sign stage attaches what it found). The scan
// itself is the Scanner's: sbom.Command runs imagectl-sbom, the binary
// that links syft, so that this package (and imagectl) does not.
//
// The package sits above build, extensions, sign and sbom and joins them;
// it imports nothing from release, which the CLI adapts it to. build itself
// (the BuildKit client and the image definition) links none of them, and
// nothing below pipeline links BuildKit.
package pipeline
