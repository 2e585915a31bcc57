// Package pypi reads release metadata from the PyPI JSON API
// (GET {base}/pypi/{project}/json) and derives, from wheel file names, which
// CPython versions each release ships wheels for on each OCI platform.
package pypi
