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
//     validated once (extensions.ValidateFiles);
//   - layout (layoutStage): each platform's extensions, settings.json
//     (computed once) and build contexts, as a build.Spec;
//   - solve (solveAll, solve.go): every platform through build.Interface,
//     the platforms pushed in turn so a shared layer is uploaded once;
//   - publish (publish.go): a publisher, as ko's publish.Interface, chosen
//     in newPublisher: the registry (index, provenance referrers, tags) or
//     an OCI archive;
//   - sign (Result.sign): the index and every platform manifest, with the
//     SBOM and provenance attestations.
//
// ReleaseBuilder (release.go) runs the same pipeline for imagectl release
// from the render its plan made (Renders), and signs in release's sign
// step. The package sits above build, extensions, sign and sbom and joins
// them; build itself (the BuildKit client and the image definition) links
// none of them, and nothing below pipeline links BuildKit.
package pipeline
