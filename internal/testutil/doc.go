// Package testutil holds the helpers that test files across imagectl share:
// an in-process registry, the skip-or-fail rule for a missing tool
// (IMAGECTL_REQUIRE_TOOLS=1 turns every such skip into a failure), the pip
// and debugpy checks, and reading a section of a Markdown file.
//
// Only test files import it; imagespec's import-graph test enforces that.
package testutil
