// Package kind is the end-to-end smoke harness: it creates a kind cluster
// (the kind CLI, KindVersion), installs a pinned KubeRay operator and
// follows README's "Debug a RayJob on KubeRay" with a plain smoke RayJob
// (rayjob.yaml.tmpl, InteractiveMode, no sidecar) and its script
// (sample_code.py) in a directory of its own: `imagectl inject -f
// rayjob.yaml --secret-file secret.yaml > rayjob-debug.yaml` with this
// machine's imagectl, a server-side apply of secret.yaml, the pre-pull
// DaemonSet of examples/prepull.yaml, and `kubectl ray job submit -f
// rayjob-debug.yaml --working-dir ./working_dir -- python sample_code.py`
// with the real kubectl ray plugin and the local Ray CLI, in the
// background. Meanwhile it runs `imagectl smoke attach` INSIDE the sidecar
// once per paused task (so the attach crosses the network a user's would)
// and once with --post-mortem for the task frozen on its exception, then
// requires the plugin to exit 0 with the expected output and the RayJob to
// reach SUCCEEDED, collects logs on failure and deletes the cluster. With
// Config.Debug it then runs README's `imagectl debug` (DebugCommand: the
// plain RayJob, -o json, --cleanup) on the same cluster, attaches from the
// sidecar the same way once debug reports the first paused task, and
// requires debug to exit 0 with the job SUCCEEDED.
//
// Nothing is loaded into kind: the node pulls the image under test by
// digest from the registry it was pushed to. When that repository cannot be
// read anonymously, the harness makes a kubernetes.io/dockerconfigjson
// imagePullSecret from this machine's docker config (DOCKER_CONFIG or
// ~/.docker/config.json, as docker login writes it) and injects it.
//
// Every tool is run as a command, never linked: kind (create cluster with
// its own kubeconfig, export logs, delete cluster), kubectl (with that
// kubeconfig; the plugin gets it as KUBECONFIG), git (through kubectl's
// kustomize), docker and the plugin; the kubeconfig's namespace and the
// pull secret are read and written with yaml.v3. The commands that
// docs/inject.md's manual steps (the alternative to imagectl debug) show
// are the ones in Guide, run exactly so (a test checks the doc against Guide). The KubeRay
// versions are pinned once, in KubeRayNewest and KubeRayOldest, and the
// plugin release of each in PluginReleases. The guide's commands name the
// namespace (-n "$NS"); the harness runs them in its kubeconfig context's
// namespace, and finds the operator by OperatorSelectors wherever it runs.
//
// When Docker (a running engine), kind, kubectl, git, the kubectl ray
// plugin, the Ray CLI or the network are missing, Run returns a *SkipError
// saying exactly which.
package kind
