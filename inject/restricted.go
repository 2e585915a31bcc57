package inject

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/docsurl"
)

// Restricted mode (WithRestricted): a sidecar that PodSecurity "restricted"
// admits and that starts linuxserver's startup in its non-root mode, as the
// faithful base showed it (docs/faithful-base.md): a non-root UID, no
// capability, no privilege escalation, RuntimeDefault seccomp, a read-only
// root with emptyDirs where the startup writes (/run, /tmp, /config), and
// LSIO_NON_ROOT_USER=1, because linuxserver's own detection (/run not owned
// by root) cannot see it through an emptyDir, which belongs to root.
const (
	// configCopyMount is where the init container mounts the /config
	// emptyDir to copy the image's /config into it.
	configCopyMount = "/mnt/imagectl-config"
	// configCopyDir is the folder of the /config emptyDir that holds the
	// copy, mounted (subPath) at /config in the sidecar.
	configCopyDir = "config"
)

// restrictedMounts are the sidecar's emptyDirs in restricted mode, by the
// suffix of their volume's name: what linuxserver's non-root startup and
// code-server write.
var restrictedMounts = []struct{ suffix, path, subPath string }{
	{"-run", "/run", ""},                            // s6-overlay's live state (/run/s6, /run/service)
	{"-tmp", "/tmp", ""},                            // code-server's and s6's scratch files
	{"-config", imagespec.ConfigDir, configCopyDir}, // code-server's user data, extensions and home: a copy of the image's
}

// ConfigCopyCommand is the init container's command: it copies the image's
// /config (the extensions and settings imagectl built into it) into a
// folder of the /config emptyDir, as the sidecar's user. cp -a keeps modes
// and times, and an owner it cannot keep (the image's abc, 911) becomes
// the user's, so code-server can write there. It copies the folder, not
// its content into the emptyDir's root: that root is root's, and cp -a
// fails on it ("preserving times for '.'": it cannot set the times of a
// directory the user does not own).
var ConfigCopyCommand = []string{"cp", "-a", imagespec.ConfigDir, configCopyMount + "/"}

// WithRestricted writes a sidecar that PodSecurity "restricted" admits:
// it runs as the Ray container's user and group (its, else the pod's,
// runAsUser and runAsGroup; 1000 when neither says), with no capability,
// no privilege escalation, the RuntimeDefault seccomp profile and a
// read-only root filesystem; emptyDirs at /run, /tmp and /config, the last
// filled by an init container with a copy of the image's /config; and
// LSIO_NON_ROOT_USER=1. The sidecar cannot become root: there is no sudo,
// and the terminal's user is the Ray container's.
func WithRestricted() Option { return func(c *config) { c.restricted = true } }

// WithArbitraryUID is WithRestricted without a runAsUser or runAsGroup of
// the sidecar's own: the platform picks them, as OpenShift's restricted-v2
// does (a UID of the namespace's range, GID 0, no passwd entry). On a
// cluster that does not, the kubelet refuses the sidecar, whose image
// starts as root.
func WithArbitraryUID() Option { return func(c *config) { c.restricted, c.arbitraryUID = true, true } }

// restrictedVolumeName is the emptyDir volume of the mount with suffix.
func (c *config) restrictedVolumeName(suffix string) string { return c.name + suffix }

// configInitName is the init container that fills the /config emptyDir.
func (c *config) configInitName() string { return c.name + "-config" }

// restrictedSecurityContext is the sidecar's (and its init container's)
// securityContext in restricted mode.
func (c *config) restrictedSecurityContext(s *site) (item, error) {
	sc := mapOf()
	if !c.arbitraryUID {
		uid, gid := codeServerIDs(s)
		u, uerr := strconv.ParseInt(uid, 10, 64)
		g, gerr := strconv.ParseInt(gid, 10, 64)
		if uerr != nil || gerr != nil || u < 0 || g < 0 {
			return item{}, fmt.Errorf("%s: runAsUser %q, runAsGroup %q: expected numbers, for the restricted sidecar to run as the Ray container's user", s.desc, uid, gid)
		}
		if u == 0 {
			return item{}, fmt.Errorf("%s: the Ray container runs as root (runAsUser 0): a restricted sidecar runs as the Ray container's user, and PodSecurity \"restricted\" admits no root; run Ray as a non-root user, or drop --restricted", s.desc)
		}
		sc.kv = append(sc.kv, pair("runAsUser", u), pair("runAsGroup", g))
	}
	sc.kv = append(sc.kv,
		pair("runAsNonRoot", true),
		pair("allowPrivilegeEscalation", false),
		pair("readOnlyRootFilesystem", true),
		pair("capabilities", mapOf(pair("drop", listOf(scalar("ALL"))))),
		pair("seccompProfile", mapOf(pair("type", "RuntimeDefault"))),
	)
	return sc, nil
}

// configInit is the init container that copies the image's /config into
// the /config emptyDir, with the sidecar's resources (a pod's effective
// request is the larger of its init containers' and the sum of its
// containers': this one adds nothing to it).
func (c *config) configInit(image string, sc, resources item) item {
	cmd := listOf()
	for _, a := range ConfigCopyCommand {
		cmd.list = append(cmd.list, scalar(a))
	}
	ic := mapOf(
		pair("name", c.configInitName()),
		pair("image", image),
		pair("command", cmd),
	)
	if len(resources.kv) > 0 {
		ic.kv = append(ic.kv, pair("resources", resources))
	}
	ic.kv = append(ic.kv,
		pair("volumeMounts", listOf(mapOf(pair("name", c.restrictedVolumeName("-config")), pair("mountPath", configCopyMount)))),
		pair("securityContext", sc),
	)
	return ic
}

// isConfigInit reports whether n is the init container as configInit
// writes it (any image, resources and securityContext).
func isConfigInit(n *yaml.Node, name string) bool {
	if n == nil || n.Kind != yaml.MappingNode || scalarAt(n, "name") != name || scalarAt(n, "image") == "" {
		return false
	}
	for i := 0; i < len(n.Content); i += 2 {
		switch n.Content[i].Value {
		case "name", "image", "command", "resources", "volumeMounts", "securityContext":
		default:
			return false
		}
	}
	cmd := valueAt(n, "command")
	if cmd == nil || cmd.Kind != yaml.SequenceNode || len(cmd.Content) != len(ConfigCopyCommand) {
		return false
	}
	for i, a := range ConfigCopyCommand {
		if cmd.Content[i].Value != a {
			return false
		}
	}
	mounts := valueAt(n, "volumeMounts")
	return mounts != nil && mounts.Kind == yaml.SequenceNode && len(mounts.Content) == 1 &&
		scalarAt(mounts.Content[0], "mountPath") == configCopyMount && valueAt(n, "securityContext") != nil
}

// checkRestrictedRay warns about what the Ray container lacks for
// PodSecurity "restricted" (unless a Namespace of the input enforces
// another level): inject changes only the sidecar, and the API server
// refuses the whole head pod for one container. Each field is named
// with the value to set, on the container or (where PodSecurity accepts
// it there) the pod.
func (c *config) checkRestrictedRay(s *site, warn func(string, ...any)) {
	ray, pod := s.securityCtx[0], s.securityCtx[1]
	on := func(key string) string {
		if c.helmValues {
			return "head.securityContext." + key
		}
		return "securityContext." + key
	}
	var missing []string
	if scalarAt(ray, "runAsNonRoot") != "true" && scalarAt(pod, "runAsNonRoot") != "true" {
		missing = append(missing, on("runAsNonRoot")+": true")
	}
	if scalarAt(ray, "runAsUser") == "0" || (scalarAt(ray, "runAsUser") == "" && scalarAt(pod, "runAsUser") == "0") {
		missing = append(missing, on("runAsUser")+": a non-zero UID")
	}
	if scalarAt(ray, "allowPrivilegeEscalation") != "false" {
		missing = append(missing, on("allowPrivilegeEscalation")+": false")
	}
	drops := valueAt(ray, "capabilities", "drop")
	if drops == nil || !slices.ContainsFunc(drops.Content, func(n *yaml.Node) bool { return n.Value == "ALL" }) {
		missing = append(missing, on("capabilities.drop")+": [ALL]")
	}
	if adds := valueAt(ray, "capabilities", "add"); adds != nil {
		for _, a := range adds.Content {
			if a.Value != "NET_BIND_SERVICE" {
				missing = append(missing, on("capabilities.add")+": only NET_BIND_SERVICE (not "+a.Value+")")
			}
		}
	}
	seccomp := func(m *yaml.Node) string { return scalarAt(m, "seccompProfile", "type") }
	if t := seccomp(ray); t != "RuntimeDefault" && t != "Localhost" && !(t == "" && (seccomp(pod) == "RuntimeDefault" || seccomp(pod) == "Localhost")) {
		missing = append(missing, on("seccompProfile.type")+": RuntimeDefault")
	}
	if len(missing) > 0 {
		warn("the sidecar is restricted, but the head's Ray container is not what PodSecurity \"restricted\" admits, and the API server refuses the whole head pod for it (FailedToCreateHeadPod events): set %s (see %s)",
			strings.Join(missing, ", "), docsurl.InjectHardenedPods)
	}
}
