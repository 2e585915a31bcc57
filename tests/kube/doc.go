// Package kube holds the tests that run against a real Kubernetes control
// plane and the real KubeRay operator, both started by
// tests/e2e/with-kube.sh (etcd, kube-apiserver, kube-controller-manager and
// ray-operator built from the Go module proxy). Without a node Pods are
// objects that stay Pending; the *OnNode tests need the node the script
// adds with IMAGECTL_KUBE_NODE=1 (kube-scheduler, a kubelet, containerd,
// CoreDNS, kube-proxy), where the Pods run: TestReadmeDebugFlowOnNode runs
// README's debug flow to the end, its Ray container the stand-in of
// ./standin; TestWorkerJoinsThroughServicesOnNode runs a RayCluster's worker
// past KubeRay's wait-gcs-ready by the head Service's name and reaches a
// ClusterIP from inside a Pod; TestDebugOnNode runs imagectl debug on a
// RayJob whose task pauses on the head Pod, and on a worker Pod (the task
// pinned to the worker group's custom resource), and attaches from the
// sidecar.
//
// Every manifest the project ships or produces (examples/*.yaml, inject's
// output in each of its modes, its --helm-values output rendered by helm
// from KubeRay's ray-cluster chart, the smoke harness's RayJob) is applied
// server-side with strict field validation, and the head Pod the operator
// writes is checked: the Ray container first, the sidecar second and
// unchanged, one /tmp/ray volume, the head Service's ports. PodSecurity
// admission decides on inject's output in namespaces enforcing baseline and
// restricted, and README's kubectl lines and the smoke harness's own steps
// (kind.RunUntilPods) run up to where a Pod would have to run.
//
// The tests use only the kubeconfig the script exports as
// IMAGECTL_KUBE_KUBECONFIG (never a developer's KUBECONFIG) and each works
// in namespaces of its own. Without that variable they skip, or fail under
// IMAGECTL_REQUIRE_TOOLS=1.
package kube
