// Package pipeline is `imagectl build` from start to finish in one function,
// Run: resolve the set, fetch the extension files, render the definition,
// lay out each platform's build contexts, solve them with package build,
// push the index (or write an OCI archive) and sign every manifest.
//
// It sits above build because extensions imports build's image contract.
package pipeline
