package kind

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// The KubeRay versions the smoke test runs against. This is the one place
// they are pinned: the harness, `imagectl smoke --kuberay-version`, the
// README (a test checks) and the smoke workflow's matrix ("oldest",
// "newest") all take them from here.
const (
	// KubeRayNewest is KubeRay's current release, the default.
	KubeRayNewest = "1.7.0"
	// KubeRayOldest is the oldest release the examples work with:
	// InteractiveMode RayJobs need KubeRay 1.3.
	KubeRayOldest = "1.3.2"
)

// KubeRayVersion resolves "", "newest", "oldest" or X.Y.Z (a leading v is
// dropped) to X.Y.Z.
func KubeRayVersion(s string) (string, error) {
	switch s {
	case "", "newest":
		return KubeRayNewest, nil
	case "oldest":
		return KubeRayOldest, nil
	}
	v, err := semver.StrictNewVersion(strings.TrimPrefix(s, "v"))
	if err != nil || v.Prerelease() != "" || v.Metadata() != "" {
		return "", fmt.Errorf("KubeRay version %q: expected X.Y.Z, oldest or newest", s)
	}
	if older(v.String(), "1.3.0") {
		return "", fmt.Errorf("KubeRay %s: older than 1.3.0 has no InteractiveMode and installs into ray-system; the oldest supported is %s", v, KubeRayOldest)
	}
	return v.String(), nil
}

// older reports whether KubeRay version a is older than b (both X.Y.Z).
func older(a, b string) bool {
	va, errA := semver.StrictNewVersion(a)
	vb, errB := semver.StrictNewVersion(b)
	return errA == nil && errB == nil && va.LessThan(vb)
}

// KubeRayKustomization is what kubectl installs the operator from: KubeRay's
// ray-operator/config/default at the release tag. Since v1.3.0 it puts
// everything in namespace default and pins the operator image
// (quay.io/kuberay/operator:vX.Y.Z) itself.
func KubeRayKustomization(version string) string {
	return "github.com/ray-project/kuberay/ray-operator/config/default?ref=v" + version
}

// OperatorSelectors find the operator's Deployment in any namespace, in
// order: KubeRay's kustomization labels it
// app.kubernetes.io/component=kuberay-operator (and name=kuberay); its Helm
// chart labels the Deployment app.kubernetes.io/name=kuberay-operator.
var OperatorSelectors = []string{"app.kubernetes.io/component=kuberay-operator", "app.kubernetes.io/name=kuberay-operator"}

// Command is one command of README's "Debug a RayJob on KubeRay" as the
// harness runs it (kubectl gets the cluster's --kubeconfig first).
type Command struct {
	Args []string // argv; "$HEAD" stands for the head pod's name
	// Pipe, when set, reads Args' output on stdin (imagectl inject ... | kubectl apply -f -).
	Pipe []string
	// Var, when set, captures the output: HEAD=$(kubectl get pod ...).
	Var string
}

func (c Command) String() string {
	s := strings.Join(c.Args, " ")
	if c.Pipe != nil {
		s += " | " + strings.Join(c.Pipe, " ")
	}
	if c.Var != "" {
		s = c.Var + "=$(" + s + ")"
	}
	return s
}

// Timeouts of the user guide's waits.
const (
	OperatorTimeout = "5m"
	HeadPodTimeout  = "20m"
)

// Guide is the user guide's commands for a KubeRay version, in the order
// the README gives them and the harness runs them. The inject step names
// the plain manifest rayjob.yaml; the harness adds --image for the image
// under test.
func Guide(kuberay string) []Command {
	return []Command{
		{Args: []string{"kubectl", "apply", "--server-side", "-k", KubeRayKustomization(kuberay)}},
		{Args: []string{"kubectl", "wait", "--for=condition=Available", "deployment", "-A", "-l", OperatorSelectors[0], "--timeout=" + OperatorTimeout}},
		{Args: append([]string{"imagectl", "inject", "-f", "rayjob.yaml"}, InjectArgs...), Pipe: []string{"kubectl", "apply", "-f", "-"}},
		{Var: "HEAD", Args: []string{"kubectl", "get", "pod", "-l", "ray.io/node-type=head", "-o", "jsonpath={.items[0].metadata.name}"}},
		{Args: []string{"kubectl", "wait", "--for=condition=Ready", "pod/$HEAD", "--timeout=" + HeadPodTimeout}},
	}
}

// guideStep is Guide's step i.
const (
	stepInstall = iota
	stepWaitOperator
	stepInject
	stepHeadPod
	stepWaitHead
)
