// Package github lists code-server versions from GitHub releases
// (GET {base}/repos/coder/code-server/releases), the alternative to registry
// tags. It knows no image digests.
package github
