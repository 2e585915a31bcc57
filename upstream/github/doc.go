// Package github reads GitHub releases (GET {base}/repos/...): code-server
// versions from coder/code-server releases, the alternative to registry tags
// (it knows no image digests), and the python-build-standalone runtimes of
// one release with their sha256 from its SHA256SUMS asset.
package github
