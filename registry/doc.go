// Package registry reads and writes the manifests of published imagectl
// images through go-containerregistry, without pulling a layer: whether a
// reference exists (Head), the labels build wrote (Inspect) and a tag
// (Tag). Plan and release read the published tags with it, and the build
// pipeline's published check reads the versioned tag.
package registry
