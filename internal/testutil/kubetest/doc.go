// Package kubetest decodes Kubernetes manifests in tests strictly into
// their KubeRay and Kubernetes Go types. It is apart from testutil so that
// only the tests that read manifests link the Kubernetes API types.
package kubetest
