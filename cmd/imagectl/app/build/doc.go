// Package build is imagectl build: resolves the set for --ray, then runs the build pipeline
// (build/pipeline) with the flags mapped onto its request, and prints the
// result.
package build
