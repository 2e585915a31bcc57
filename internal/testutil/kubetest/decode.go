package kubetest

import (
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// DecodeStrict decodes one YAML document into its KubeRay (RayJob,
// RayCluster, RayService) or Kubernetes (ConfigMap, Secret, Service,
// DaemonSet) Go type, returned as a pointer: an unknown or misspelt field,
// a duplicate key or a wrong type fails, and so does any other kind. A
// document with neither apiVersion nor kind gives nil and no error.
func DecodeStrict(doc []byte) (any, error) {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return nil, err
	}
	var obj any
	switch meta.APIVersion + " " + meta.Kind {
	case "ray.io/v1 RayJob":
		obj = &rayv1.RayJob{}
	case "ray.io/v1 RayCluster":
		obj = &rayv1.RayCluster{}
	case "ray.io/v1 RayService":
		obj = &rayv1.RayService{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 Secret":
		obj = &corev1.Secret{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "apps/v1 DaemonSet":
		obj = &appsv1.DaemonSet{}
	case " ":
		return nil, nil
	default:
		return nil, fmt.Errorf("unexpected %s %s", meta.APIVersion, meta.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", meta.Kind, err)
	}
	return obj, nil
}
