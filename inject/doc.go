// Package inject adds the code-server debugger sidecar to a user's own
// KubeRay manifests (ray.io/v1 RayJob, RayCluster and RayService) or to a
// values file of KubeRay's ray-cluster Helm chart, and takes it out again.
//
// What it adds to the head group's pod template:
//
//   - the sidecar container, after the Ray container (which stays
//     containers[0]: KubeRay uses index 0), with the image for the Ray
//     version of the manifest, a named port (8443), resources,
//     DEFAULT_WORKSPACE=/tmp/ray/session_latest/runtime_resources and the
//     code-server PASSWORD from a Secret (secretKeyRef; never a plain value,
//     never a sudo password);
//   - the sidecar's own securityContext (runAsUser 0, runAsNonRoot false,
//     no privilege escalation, SidecarCapabilities), so that linuxserver's
//     init starts as root whatever the pod's securityContext says;
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
// It edits text, not structs: every document is parsed with the yaml.v3 node
// API only to find positions, and the additions are spliced into the
// original bytes, each added item or key carrying the line comment
// "# added by imagectl inject". So comments, key order, quoting, unknown
// fields and every document that is not a Ray kind are kept byte for byte;
// injecting an injected manifest gives the same bytes (the marked additions
// are replaced by the same additions); and Remove deletes exactly the marked
// lines, which gives back the original bytes.
//
// Problems that make the debugger silently useless are reported as
// warnings: RAY_DEBUG=legacy or 0 on a Ray container (or in a RayJob's
// runtime env, or the chart's common.containerEnv), a RayJob whose runtime
// env lacks debugpy>=1.8.0 while its Ray image is known not to ship it, a
// Ray version older than 2.39, Ray token authentication, KubeRay's
// spec.networkPolicy, and PodSecurity "restricted" or runAsNonRoot, which
// still refuse the sidecar.
package inject
