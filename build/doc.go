// Package build turns a resolved set into a multi-arch image through BuildKit:
// it renders the image definition from dockerfiles/, prepares the build
// context (extension layouts, settings, wheels), solves it against one
// buildkitd per platform or one for all, each platform's image pushed by
// digest or written as an OCI tarball. Joining the platforms into one
// index, and publishing it, is package publish's. What the image carries (labels, in-image paths, the lock, the
// settings contract) is package imagespec's, so the packages that only read
// images do not link BuildKit.
package build
