// Package kind is the end-to-end smoke harness: it creates a kind cluster
// (sigs.k8s.io/kind as a library), loads or pulls the image under test,
// installs a pinned KubeRay operator, applies the smoke RayJob rendered from
// tests/smoke, runs `imagectl smoke attach` INSIDE the code-server sidecar of
// the Ray head pod once per paused task (so the attach crosses the network a
// user's would), asserts the RayJob reaches SUCCEEDED with the expected
// output, collects logs on failure and deletes the cluster.
//
// Kubernetes calls shell out to kubectl (with the cluster's own kubeconfig):
// kubectl cp and exec into the sidecar, server-side apply of the KubeRay
// kustomization and rollout waits are one line each there, and it keeps
// client-go's large API surface out of this package.
//
// KubeRay is installed from its kustomization at the release tag
// (github.com/ray-project/kuberay/ray-operator/config/default?ref=vX.Y.Z,
// server-side apply, then the operator image pinned to
// quay.io/kuberay/operator:vX.Y.Z) because helm is not assumed present;
// kubectl fetches it with git.
//
// When Docker (a running engine), kind's needs, kubectl, git or the network
// are missing, Run returns a *SkipError saying exactly which.
package kind
