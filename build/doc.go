// Package build turns a resolved set into a multi-arch image through BuildKit:
// it renders the image definition from dockerfiles/, prepares the build
// context (extension layouts, settings, wheels), solves it against one
// buildkitd per platform or one for all, and pushes by digest or writes an OCI
// archive. What the image carries (labels, in-image paths, the lock, the
// settings contract) is package imagespec's, so the packages that only read
// images do not link BuildKit.
package build
