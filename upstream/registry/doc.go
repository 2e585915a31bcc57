// Package registry lists code-server versions from the base image's registry
// tags through the OCI distribution API (go-containerregistry), with the index
// digest and per-platform manifest digests behind each tag. Any registry
// works: lscr.io, docker.io, ghcr.io or a local one.
package registry
