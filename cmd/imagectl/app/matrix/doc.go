// Package matrix is imagectl matrix: resolve, list and refresh over matrix.yaml,
// the catalog and the upstream clients.
package matrix
