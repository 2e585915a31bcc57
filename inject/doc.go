// Package inject adds the code-server debugger sidecar to a user's own
// KubeRay manifests (ray.io/v1 RayJob, RayCluster and RayService, as
// documents or as the items of a List) or to a values file of KubeRay's
// ray-cluster Helm chart, and takes it out again.
//
// An object as the API server returns it (kubectl get -o yaml) loses what
// the server fills in (StripServerFields: status, metadata.resourceVersion,
// uid, creationTimestamp, generation, managedFields, selfLink and kubectl's
// last-applied-configuration annotation), with a note that a head Pod
// already running keeps its containers until it is recreated.
//
// What it adds to the head group's pod template:
//
//   - the sidecar container, after the Ray container (which stays
//     containers[0]: KubeRay uses index 0), with the image for the Ray
//     version of the manifest, a named port (8443), resources,
//     DEFAULT_WORKSPACE=/tmp/ray/session_latest/runtime_resources and the
//     code-server PASSWORD from a Secret (secretKeyRef; never a plain value,
//     never a sudo password), and no probes: KubeRay counts a RayCluster
//     ready, and submits a RayJob to it, only once every container of the
//     head Pod is Ready, so a probe on the sidecar would hold the job
//     while code-server is down;
//   - the sidecar's own securityContext (runAsUser 0, runAsNonRoot false,
//     no privilege escalation, every capability dropped but
//     imagespec.StartupCapabilities, the RuntimeDefault seccomp profile),
//     so that linuxserver's init starts as root whatever the pod's
//     securityContext says, with only what it uses;
//   - the /tmp/ray volume shared by the Ray container and the sidecar: an
//     existing /tmp/ray mount of the Ray container (and its volume) is
//     reused, otherwise an emptyDir named ray-logs (DefaultVolume, the name
//     KubeRay's autoscaler container mounts) is added and mounted on both;
//   - optionally imagePullSecrets and a postStart hook that writes a
//     non-default dashboard address into the debugger extension's settings.
//
// The default image is the published build for the manifest's Ray version:
// with WithTagLister, the build for that patch, else the newest for its
// minor; without one, the floating minor tag. Result.Notes says which.
//
// The password Secret is never part of the output stream: PasswordSecret
// makes it as a document of its own (for --secret-file), keeping the
// password of an existing one.
//
// It edits text located structurally: every document is parsed with the
// yaml.v3 node API to find the exact nodes (line and column) it edits, and
// the additions are spliced into the original bytes. So comments, key
// order, quoting, unknown fields and every document that is not a Ray kind
// are kept byte for byte, each line with its own ending (\n or \r\n); the
// lines added end as most lines of their document do; a %YAML 1.1 or 1.2
// directive stays with its document. The sidecar's RecordEnv variable records, as
// JSON, each item added and how (appended to a list, the list's key
// created, an empty "key: []" line rewritten); Remove takes out exactly
// what the record lists, in the head pod only, which gives back the
// original bytes, and Apply on an injected manifest does the same before
// adding anew, so applying twice changes nothing. The record is not
// trusted: an item is taken out only when it is as inject writes it (one
// per list; the /tmp/ray mount and the emptyDir the sidecar itself uses),
// no container left mounts a volume taken out, and no list key is left
// empty; a record that says otherwise (edited by hand) is an error naming
// the item, and nothing is taken out.
//
// What it cannot edit safely is an error naming the line: an anchor on
// the head pod template, in it or above it (an alias elsewhere would carry
// the sidecar into worker pods), an alias or merge key in it, a duplicate
// mapping key, a containers[0] that is no Ray container, a hostPath
// /tmp/ray (unless WithAllowHostPath), a line break other than \n or
// \r\n. Every value it writes is a one-line YAML scalar, and the result is
// parsed again.
//
// Problems that make the debugger silently useless are reported as
// warnings: RAY_DEBUG=legacy or 0 on a Ray container (or in a RayJob's
// runtime env, or the chart's common.containerEnv), a RayJob whose runtime
// env lacks debugpy>=1.8.0 while its Ray image is known not to ship it, a
// Ray version older than 2.39 with an image given (without one it is an
// error: no image is published for it), Ray token authentication, KubeRay's
// spec.networkPolicy, and PodSecurity "restricted" or runAsNonRoot, which
// still refuse the sidecar. A default image whose tag was not checked
// against the registry is in Result.Unchecked.
package inject
