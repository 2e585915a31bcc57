// Package inject is imagectl inject: adds the code-server sidecar to a RayJob,
// RayCluster, RayService or Helm values file (package inject does the
// work).
package inject
