// Package pipeline is `imagectl build` from start to finish in one function,
// Run: resolve the set, render the definition and compute the inputs
// digest, stop there when the versioned tag already names an image of these
// inputs (signed with the key, when signing), fetch the extension files, lay
// out each platform's build contexts, solve them with package build (the
// platforms pushed in turn, so a shared layer is uploaded once), push the
// index (or write an OCI archive) and sign every manifest.
//
// It sits above build because extensions imports build's image contract.
package pipeline
