// Package workflowstest checks the GitHub Actions workflows under
// .github/workflows against what the project promises: every job's
// permissions and triggers, floating tags gated on the smoke test, actions
// pinned by commit (once each, off Node 20), a model of every release path
// (each one ends with pinned extension files), and the release's smoke
// step picking the entry at its Ray and Python. A small evaluator of the
// workflows' ${{ }} expressions lets the tests follow the calls between
// workflows. Nothing outside tests/ may import this package.
package workflowstest
