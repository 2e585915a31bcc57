// Package kind is the end-to-end smoke harness: it creates a kind cluster
// (sigs.k8s.io/kind as a library), installs a pinned KubeRay operator,
// renders a plain smoke RayJob (rayjob.yaml.tmpl, no sidecar) and adds the
// code-server sidecar under test with the inject library — as a user does
// with `imagectl inject` — applies it, runs `imagectl smoke attach` INSIDE
// the sidecar once per paused task (so the attach crosses the network a
// user's would), asserts the RayJob reaches SUCCEEDED with the expected
// output, collects logs on failure and deletes the cluster.
//
// Nothing is loaded into kind: the node pulls the image under test by
// digest from the registry it was pushed to. When that repository cannot be
// read anonymously, the harness makes a kubernetes.io/dockerconfigjson
// imagePullSecret from this machine's docker config (DOCKER_CONFIG or
// ~/.docker/config.json, as docker login writes it) and injects it.
//
// Kubernetes calls shell out to kubectl (with the cluster's own kubeconfig).
// The commands that README's "Debug a RayJob on KubeRay" shows are the ones
// in Guide, run exactly so (a test checks the README against Guide):
// server-side apply of KubeRay's kustomization at the release tag (which
// installs into namespace default since v1.3.0 and pins the operator image
// itself), a wait for the operator's Deployment by its labels in any
// namespace, inject piped into kubectl apply, and the head pod lookup and
// wait. The KubeRay versions are pinned once, in KubeRayNewest and
// KubeRayOldest. No command names a namespace: everything goes where the
// kubeconfig's context points, and the operator is found by
// OperatorSelectors wherever it runs.
//
// When Docker (a running engine), kind's needs, kubectl, git or the network
// are missing, Run returns a *SkipError saying exactly which.
package kind
