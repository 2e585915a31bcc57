package kind

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// The KubeRay versions the smoke test runs against. This is the one place
// they are pinned: the harness, `imagectl smoke kind --kuberay-version`, the
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

// PluginRelease is a kubectl-ray plugin release the smoke workflow
// installs: its linux/amd64 tarball and the tarball's SHA-256 (as the krew
// index, kubernetes-sigs/krew-index plugins/ray.yaml, records it).
type PluginRelease struct {
	Version string // vX.Y.Z, the KubeRay release
	URL     string
	SHA256  string
}

// PluginReleases are the kubectl-ray plugins the smoke runs, one per pinned
// KubeRay version: the plugin of the same release as the operator.
var PluginReleases = map[string]PluginRelease{
	KubeRayOldest: {
		Version: "v1.3.2",
		URL:     "https://github.com/ray-project/kuberay/releases/download/v1.3.2/kubectl-ray_v1.3.2_linux_amd64.tar.gz",
		SHA256:  "c9213c36657d12668ef5d8877a4ef8cab7d4fd64117333cab3ab6abc990aab5d",
	},
	KubeRayNewest: {
		Version: "v1.7.0",
		URL:     "https://github.com/ray-project/kuberay/releases/download/v1.7.0/kubectl-ray_v1.7.0_linux_amd64.tar.gz",
		SHA256:  "22e028cd4dcd66c2870533f75c14cbb61348bfbec80409edab09714319d6063d",
	},
}

// Command is one command of docs/inject.md's manual steps ("The manual
// steps"), the alternative to imagectl debug, as the harness runs it
// (kubectl gets the cluster's --kubeconfig first; the plugin, run through
// kubectl, gets it as KUBECONFIG).
type Command struct {
	// Args is argv; "$NS" stands for the namespace (the guide sets NS
	// first), "$CLUSTER" for the RayJob's RayCluster and "$HEAD" for its
	// head Pod, as the guide's variables hold them.
	Args []string
	// Pipe, when set, reads Args' output on stdin (a | b).
	Pipe []string
	// Stdout, when set, is the file Args' output goes to (a > FILE).
	Stdout string
	// Var, when set, captures the output: HEAD=$(kubectl get pod ...).
	Var string
}

func (c Command) String() string {
	s := strings.Join(c.Args, " ")
	if c.Pipe != nil {
		s += " | " + strings.Join(c.Pipe, " ")
	}
	if c.Stdout != "" {
		s += " > " + c.Stdout
	}
	if c.Var != "" {
		s = c.Var + "=$(" + s + ")"
	}
	return s
}

// Timeouts of the user guide's waits.
const (
	OperatorTimeout = "5m"
	PrepullTimeout  = "20m"
	HeadPodTimeout  = "20m"
)

// Files and names of the user guide, relative to the directory the
// commands run in.
const (
	PlainFile    = "rayjob.yaml"       // the user's RayJob, without the sidecar
	InjectedFile = "rayjob-debug.yaml" // imagectl inject's output
	SecretFile   = "secret.yaml"       // the password Secret, written by --secret-file
	PrepullFile  = "prepull.yaml"      // examples/prepull.yaml with the two images
	PrepullName  = "ray-debug-prepull" // the DaemonSet of prepull.yaml
	WorkingDir   = "working_dir"       // --working-dir, holding the job's script
	ScriptFile   = "sample_code.py"    // the job's driver, in WorkingDir
)

// Guide is the manual steps' commands for a KubeRay version, in the order
// docs/inject.md gives them and the harness runs them. Every command after
// the operator's install names the namespace (-n "$NS"): plugin v1.4 to
// v1.6 create the RayJob in -n (else default) but port-forward in the
// kubeconfig context's namespace. The head Pod is looked up by the RayJob's
// own RayCluster, not as any head Pod of the namespace. The harness adds
// --image (the image under test, by digest) and, for a private repository,
// --image-pull-secret to the inject step; it runs the submit step in the
// background (it returns when the job ends) and attaches meanwhile.
func Guide(kuberay string) []Command {
	return []Command{
		{Args: []string{"kubectl", "apply", "--server-side", "-k", KubeRayKustomization(kuberay)}},
		{Args: []string{"kubectl", "wait", "--for=condition=Available", "deployment", "-A", "-l", OperatorSelectors[0], "--timeout=" + OperatorTimeout}},
		{Args: []string{"imagectl", "inject", "-f", PlainFile, "--secret-file", SecretFile}, Stdout: InjectedFile},
		{Args: []string{"kubectl", "apply", "--server-side", "-n", "$NS", "-f", SecretFile}},
		{Args: []string{"kubectl", "apply", "--server-side", "-n", "$NS", "-f", PrepullFile}},
		{Args: []string{"kubectl", "rollout", "status", "-n", "$NS", "daemonset/" + PrepullName, "--timeout=" + PrepullTimeout}},
		{Args: []string{"kubectl", "delete", "-n", "$NS", "-f", PrepullFile}},
		{Args: []string{"kubectl", "ray", "job", "submit", "-n", "$NS", "-f", InjectedFile, "--working-dir", "./" + WorkingDir, "--", "python", ScriptFile}},
		{Var: "CLUSTER", Args: []string{"kubectl", "get", "-n", "$NS", "-f", InjectedFile, "-o", "jsonpath={.status.rayClusterName}"}},
		{Var: "HEAD", Args: []string{"kubectl", "get", "pod", "-n", "$NS", "-l", "ray.io/cluster=$CLUSTER,ray.io/node-type=head", "-o", "jsonpath={.items[0].metadata.name}"}},
		{Args: []string{"kubectl", "wait", "-n", "$NS", "--for=condition=Ready", "pod/$HEAD", "--timeout=" + HeadPodTimeout}},
	}
}

// guideStep is Guide's step i.
const (
	stepInstall = iota
	stepWaitOperator
	stepInject
	stepApplySecret
	stepPrepull
	stepWaitPrepull
	stepDeletePrepull
	stepSubmit
	stepCluster
	stepHeadPod
	stepWaitHead
)

// DebugCommand is README's `imagectl debug` as the harness runs it with
// Config.Debug, after the manual steps, on the same cluster: the plain
// RayJob (debug injects the sidecar itself), the job's script in
// --working-dir, the entrypoint after --, with -o json (the harness reads
// the events) and --cleanup. The harness adds --image (the image under test,
// by digest) and, for a private repository, --image-pull-secret, before
// the --; the cluster comes from KUBECONFIG, the namespace from its
// context.
func DebugCommand() Command {
	return Command{Args: []string{"imagectl", "debug", "-f", PlainFile, "--working-dir", "./" + WorkingDir, "-o", "json", "--cleanup", "--", "python", ScriptFile}}
}
