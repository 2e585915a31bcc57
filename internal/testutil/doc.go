// Package testutil holds the helpers that test files across imagectl share:
// an in-process registry, the skip-or-fail rule for a missing tool
// (IMAGECTL_REQUIRE_TOOLS=1 turns every such skip into a failure), the pip
// and debugpy checks, the test cache directory, rewriting a zip archive,
// reading a member of a tarball, and the shell lines of a Markdown section.
// Its subpackage kubetest decodes Kubernetes manifests strictly.
//
// Only test files import them; the root arch_test.go enforces that.
package testutil
