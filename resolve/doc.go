// Package resolve picks, from matrix.yaml and the catalog snapshot, the newest
// compatible set of code-server, Python, Ray, debugpy and extension files per
// platform, and explains why each version won and why each newer one lost.
// It never touches the network.
package resolve
