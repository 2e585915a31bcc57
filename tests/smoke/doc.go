// Package smoketest holds the smoke RayJob template and its task script, and
// renders them; the harness in package smoke/kind applies the result to a
// kind cluster with KubeRay, and TestSmoke in this directory runs it (or
// skips with the exact reason Docker, kind or the network are missing).
package smoketest
