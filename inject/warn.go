package inject

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/google/go-containerregistry/pkg/name"
	"gopkg.in/yaml.v3"

	"github.com/imagectl/imagectl/internal/docsurl"
	"github.com/imagectl/imagectl/internal/pep440"
)

// MinDebugpy is the debugpy the Ray debugger needs in the worker.
const MinDebugpy = "1.8.0"

// ImagesWithoutDebugpy are Ray image repositories known not to ship
// debugpy: Ray's own images install ray[all] without it, so a task's
// breakpoint() logs "Module 'debugpy>=1.8.0' cannot be loaded" and does not
// pause unless the runtime env adds it.
var ImagesWithoutDebugpy = []string{"rayproject/ray", "rayproject/ray-ml"}

// envSource is an env list and where it is written, for messages.
type envSource struct {
	list  *yaml.Node
	where string
}

// lastEnv is the value of the last entry named name in the concatenated
// env lists (the kubelet lets the last of duplicate names win) and where
// it is written; ok is false when none names it.
func lastEnv(name string, sources ...envSource) (value, where string, ok bool) {
	for _, src := range sources {
		if src.list == nil || src.list.Kind != yaml.SequenceNode {
			continue
		}
		for _, e := range src.list.Content {
			if scalarAt(e, "name") == name {
				value, where, ok = scalarAt(e, "value"), src.where, true
			}
		}
	}
	return value, where, ok
}

// envGroup is the env of one Ray container: label names it, sources are
// the lists that make its env, in order.
type envGroup struct {
	label   string
	sources []envSource
}

// rayEnvGroups are the Ray containers of a document with the lists their
// env is made of: for a values file of the ray-cluster chart, the chart
// renders common.containerEnv followed by the group's own containerEnv.
func (c *config) rayEnvGroups(root *yaml.Node, kind string, s *site) []envGroup {
	if c.helmValues {
		common := envSource{valueAt(root, "common", "containerEnv"), "common.containerEnv"}
		groups := []envGroup{{"the head's Ray container", []envSource{common, {s.rayEnv, "head.containerEnv"}}}}
		if w := valueAt(root, "worker"); w != nil && scalarAt(w, "disabled") != "true" {
			groups = append(groups, envGroup{"the worker group's Ray container", []envSource{common, {valueAt(w, "containerEnv"), "worker.containerEnv"}}})
		}
		if extra := valueAt(root, "additionalWorkerGroups"); extra != nil && extra.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(extra.Content); i += 2 {
				name, g := extra.Content[i].Value, extra.Content[i+1]
				if scalarAt(g, "disabled") == "true" {
					continue
				}
				groups = append(groups, envGroup{fmt.Sprintf("worker group %q's Ray container", name),
					[]envSource{common, {valueAt(g, "containerEnv"), "additionalWorkerGroups." + name + ".containerEnv"}}})
			}
		}
		return groups
	}
	head := "the head's Ray container"
	groups := []envGroup{{head, []envSource{{s.rayEnv, head}}}}
	if gs := valueAt(clusterOf(root, kind), "workerGroupSpecs"); gs != nil {
		for _, g := range gs.Content {
			cs := valueAt(g, "template", "spec", "containers")
			if cs != nil && cs.Kind == yaml.SequenceNode && len(cs.Content) > 0 {
				label := fmt.Sprintf("worker group %q's Ray container", scalarAt(g, "groupName"))
				groups = append(groups, envGroup{label, []envSource{{valueAt(cs.Content[0], "env"), label}}})
			}
		}
	}
	return groups
}

// clusterOf is the RayClusterSpec mapping of a Ray document.
func clusterOf(root *yaml.Node, kind string) *yaml.Node {
	switch kind {
	case "RayJob":
		return valueAt(root, "spec", "rayClusterSpec")
	case "RayService":
		return valueAt(root, "spec", "rayClusterConfig")
	}
	return valueAt(root, "spec")
}

// clusterPath is where clusterOf is, for messages.
func clusterPath(kind string) string {
	switch kind {
	case "RayJob":
		return "spec.rayClusterSpec"
	case "RayService":
		return "spec.rayClusterConfig"
	}
	return "spec"
}

// checkDebugger reports what keeps the debugger from pausing tasks or from
// listing and attaching to them; it returns where the token of Ray's token
// authentication is (checkAuth), nil without it.
func (c *config) checkDebugger(root *yaml.Node, kind string, s *site, warn func(string, ...any)) (auth *tokenSource) {
	// RAY_DEBUG as each Ray container gets it; a value written once for
	// several containers (common.containerEnv) is reported once.
	type problem struct{ value, why string }
	var order []string
	reach := map[string][]string{}
	problems := map[string]problem{}
	for _, g := range c.rayEnvGroups(root, kind, s) {
		v, where, ok := lastEnv("RAY_DEBUG", g.sources...)
		if !ok {
			continue
		}
		why, bad := rayDebugProblem(v)
		if !bad {
			continue
		}
		if _, seen := problems[where]; !seen {
			order = append(order, where)
			problems[where] = problem{v, why}
		}
		reach[where] = append(reach[where], g.label)
	}
	for _, where := range order {
		p := problems[where]
		if len(reach[where]) == 1 && reach[where][0] == where {
			warn("%s sets RAY_DEBUG=%s: %s", where, p.value, p.why)
		} else {
			warn("%s sets RAY_DEBUG=%s for %s: %s", where, p.value, strings.Join(reach[where], " and "), p.why)
		}
	}
	auth = c.checkAuth(root, kind, s, warn)
	if !c.helmValues {
		checkNetworkPolicy(root, kind, warn)
	}
	if kind != "RayJob" {
		return auth
	}
	renv := map[string]any{}
	if y := scalarAt(root, "spec", "runtimeEnvYAML"); y != "" {
		if err := yaml.Unmarshal([]byte(y), &renv); err != nil {
			warn("spec.runtimeEnvYAML is not valid YAML (%v): Ray will reject the job", err)
			return auth
		}
	}
	if env, ok := renv["env_vars"].(map[string]any); ok {
		if v, ok := env["RAY_DEBUG"]; ok {
			if p, bad := rayDebugProblem(fmt.Sprint(v)); bad {
				warn("spec.runtimeEnvYAML sets RAY_DEBUG=%v: %s", v, p)
			}
		}
	}
	has, known := runtimeEnvHasDebugpy(renv)
	if known && !has && imageWithoutDebugpy(s.rayImage) {
		// kubectl ray job submit -f passes spec.runtimeEnvYAML on, unless
		// --runtime-env(-json) is given, which replaces it whole: the
		// RayJob's own runtime env is the one place that works in every mode.
		hint := `add "debugpy>=` + MinDebugpy + `" to pip in spec.runtimeEnvYAML`
		warn("the runtime env lacks debugpy>=%s and the Ray image %s does not ship it: breakpoint() will log \"Module 'debugpy>=%s' cannot be loaded\" and not pause; %s",
			MinDebugpy, s.rayImage, MinDebugpy, hint)
	}
	return auth
}

// rayDebugProblem says what a RAY_DEBUG value does when it is not the
// debugpy debugger ("" or "1").
func rayDebugProblem(v string) (string, bool) {
	switch strings.TrimSpace(v) {
	case "", "1":
		return "", false
	case "legacy":
		return "Ray uses the old pdb debugger (ray debug), and the Ray Distributed Debugger will list no paused task", true
	}
	return "breakpoint() does nothing, so no task pauses for the debugger", true
}

// imageWithoutDebugpy reports whether ref names one of ImagesWithoutDebugpy
// (on Docker Hub, with any tag or digest).
func imageWithoutDebugpy(ref string) bool {
	r, err := name.ParseReference(ref)
	if err != nil {
		return false
	}
	for _, w := range ImagesWithoutDebugpy {
		if wr, err := name.NewRepository(w); err == nil && wr.Name() == r.Context().Name() {
			return true
		}
	}
	return false
}

var requirementRE = regexp.MustCompile(`^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$`)

// runtimeEnvHasDebugpy reports whether pip or uv in a runtime env install
// a debugpy >= 1.8.0; known is false when it cannot tell (a conda env
// given by name or file).
func runtimeEnvHasDebugpy(renv map[string]any) (has, known bool) {
	known = true
	var reqs []string
	collect := func(v any) {
		switch v := v.(type) {
		case []any:
			for _, r := range v {
				if s, ok := r.(string); ok {
					reqs = append(reqs, s)
				}
			}
		case map[string]any:
			if p, ok := v["packages"].([]any); ok {
				for _, r := range p {
					if s, ok := r.(string); ok {
						reqs = append(reqs, s)
					}
				}
			}
		case string:
			// a requirements file: cannot tell
			known = false
		}
	}
	collect(renv["pip"])
	collect(renv["uv"])
	if conda, ok := renv["conda"]; ok {
		m, isMap := conda.(map[string]any)
		if !isMap {
			known = false
		} else if deps, ok := m["dependencies"].([]any); ok {
			for _, d := range deps {
				switch d := d.(type) {
				case string:
					reqs = append(reqs, strings.Replace(d, "=", "==", 1))
				case map[string]any:
					collect(d["pip"])
				}
			}
		}
	}
	for _, r := range reqs {
		m := requirementRE.FindStringSubmatch(r)
		if m == nil || !strings.EqualFold(strings.ReplaceAll(m[1], "_", "-"), "debugpy") {
			continue
		}
		if specAllowsNew(m[3]) {
			return true, true
		}
	}
	return false, known
}

// clauseVersionRE finds the version of each clause of a specifier.
var clauseVersionRE = regexp.MustCompile(`(?:===|==|!=|<=|>=|~=|<|>)\s*([^,\s;]+)`)

// specAllowsNew reports whether a PEP 440 version specifier (with an
// optional environment marker after ";") admits a debugpy the Ray debugger
// accepts, one at or above MinDebugpy. It probes MinDebugpy and, for each
// version a clause names at or above it, that version and the next release
// after it (">1.9" admits 1.10, "!=1.8.0" admits 1.8.1): a specifier that
// admits one of them admits a new enough debugpy. A specifier that does not
// parse is taken to allow it (pip would refuse it; no warning to give here).
func specAllowsNew(spec string) bool {
	spec, _, _ = strings.Cut(spec, ";")
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return true
	}
	sp, err := pep440.ParseSpecifier(spec)
	if err != nil {
		return true
	}
	minimum, _ := pep440.Parse(MinDebugpy)
	probes := []string{MinDebugpy}
	for _, m := range clauseVersionRE.FindAllStringSubmatch(spec, -1) {
		v := strings.TrimSuffix(m[1], ".*")
		if pv, err := pep440.Parse(v); err == nil && pv.Compare(minimum) >= 0 {
			probes = append(probes, pv.BaseVersion(), nextRelease(pv.BaseVersion()))
		}
	}
	for _, p := range probes {
		if v, err := pep440.Parse(p); err == nil && sp.Allows(v) {
			return true
		}
	}
	return false
}

// nextRelease is the release after X.Y...Z: its last segment plus one.
func nextRelease(v string) string {
	i := strings.LastIndex(v, ".")
	n, err := strconv.Atoi(v[i+1:])
	if err != nil {
		return v
	}
	return v[:i+1] + strconv.Itoa(n+1)
}

// PodSecurityEnforceLabel is the namespace label that makes the API server
// enforce a Pod Security Standard on every pod of the namespace.
const PodSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"

// podSecurityLevels reads the PodSecurity enforce level of every Namespace
// document in chunks (documents that do not parse are reported by Apply).
func podSecurityLevels(chunks [][]byte) map[string]string {
	levels := map[string]string{}
	for _, chunk := range chunks {
		root, err := parseDoc(chunk)
		if err != nil || root == nil || scalarAt(root, "apiVersion") != "v1" || scalarAt(root, "kind") != "Namespace" {
			continue
		}
		if l := scalarAt(root, "metadata", "labels", PodSecurityEnforceLabel); l != "" {
			levels[scalarAt(root, "metadata", "name")] = l
		}
	}
	return levels
}

// checkHardened warns when the head pod will still be refused although the
// sidecar's own securityContext lets linuxserver's init start as root: a
// namespace of the input that enforces PodSecurity "restricted" refuses
// any container that may run as root, and a pod or Ray container that
// asks for runAsNonRoot says such a policy is likely in force (unless a
// Namespace of the input gives the namespace's level).
func (c *config) checkHardened(ns string, s *site, warn func(string, ...any)) {
	if c.restricted {
		// A Namespace of the input that enforces another level admits
		// the Ray container as it is.
		if ns == "" || c.enforce[ns] == "" || c.enforce[ns] == "restricted" {
			c.checkRestrictedRay(s, warn)
		}
		return
	}
	const why = "the sidecar runs linuxserver's init as root (its own securityContext sets runAsUser: 0, runAsNonRoot: false), then code-server as PUID"
	if ns != "" && c.enforce[ns] == "restricted" {
		warn("namespace %s has the label %s=restricted: PodSecurity refuses the head pod, because %s; the RayCluster never starts (FailedToCreateHeadPod events). Debug in a namespace labelled %s=baseline (see %s)",
			ns, PodSecurityEnforceLabel, why, PodSecurityEnforceLabel, docsurl.InjectHardenedPods)
	}
	if ns != "" && c.enforce[ns] != "" {
		// The input's Namespace says which level is enforced: runAsNonRoot
		// is no sign of one.
		return
	}
	for i, where := range []string{"the head's Ray container", "the head pod"} {
		if i >= len(s.securityCtx) {
			break
		}
		field := "securityContext.runAsNonRoot"
		if c.helmValues {
			field = []string{"head.securityContext.runAsNonRoot", "head.podSecurityContext.runAsNonRoot"}[i]
		}
		if scalarAt(s.securityCtx[i], "runAsNonRoot") == "true" {
			warn("%s sets %s: true, so the namespace likely enforces PodSecurity \"restricted\" (label %s) or a policy that requires runAsNonRoot; %s, which the kubelet accepts but such a policy refuses: the head pod is not created and the RayCluster never starts (FailedToCreateHeadPod events). See %s",
				where, field, PodSecurityEnforceLabel, why, docsurl.InjectHardenedPods)
			return
		}
	}
}

// tokenSource is the Secret key the sidecar's token proxy reads Ray's
// token from (tokenproxy.go), and what made inject pick it.
type tokenSource struct {
	secret, key string
	// mode says how the cluster turns token authentication on, cause how
	// the Secret was found, exists whether it is there before the pod.
	mode, cause, exists string
}

// refusedWhy is what token authentication does to the debugger when inject
// cannot give the sidecar the token.
var refusedWhy = "without it the Ray Distributed Debugger extension's requests to the dashboard carry no token, Ray's dashboard refuses them (401 Unauthorized: Missing authentication token), and the extension lists no paused task (see " + docsurl.InjectTokenAuth + ")"

// kubeRayCheckName is the name KubeRay gives the token Secret of a
// RayCluster (utils.CheckName of its name, ray-operator v1.5.1 to v1.7.0):
// the last 50 characters, and an "r" for a first one that is a digit or
// punctuation.
func kubeRayCheckName(s string) string {
	const maxLength = 50
	if len(s) > maxLength {
		s = s[len(s)-maxLength:]
	}
	if s != "" && (unicode.IsDigit(rune(s[0])) || unicode.IsPunct(rune(s[0]))) {
		s = "r" + s[1:]
	}
	return s
}

// lastEnvEntry is the last entry named name of the concatenated env lists
// and where it is written; nil when none names it.
func lastEnvEntry(name string, sources ...envSource) (entry *yaml.Node, where string) {
	for _, src := range sources {
		if src.list == nil || src.list.Kind != yaml.SequenceNode {
			continue
		}
		for _, e := range src.list.Content {
			if scalarAt(e, "name") == name {
				entry, where = e, src.where
			}
		}
	}
	return entry, where
}

// lastEnvEntryOf is the last entry named name of one env list.
func lastEnvEntryOf(list *yaml.Node, name string) *yaml.Node {
	e, _ := lastEnvEntry(name, envSource{list: list})
	return e
}

// checkAuth finds Ray's token authentication (KubeRay's authOptions.mode:
// token, KubeRay >= 1.5.1 with Ray >= 2.52, or RAY_AUTH_MODE=token set on
// the head's Ray container by hand) and the Secret key that holds the
// token, which the sidecar's proxy then reads. It returns nil without
// token authentication, and when the token cannot be found, with a
// warning that says what to set.
func (c *config) checkAuth(root *yaml.Node, kind string, s *site, warn func(string, ...any)) *tokenSource {
	if !c.helmValues {
		ao := valueAt(clusterOf(root, kind), "authOptions")
		if scalarAt(ao, "mode") == "token" {
			mode := clusterPath(kind) + ".authOptions.mode is token (KubeRay token authentication)"
			own := valueAt(lastEnvEntryOf(s.rayEnv, "RAY_AUTH_TOKEN"), "valueFrom", "secretKeyRef")
			switch name := scalarAt(root, "metadata", "name"); {
			case scalarAt(ao, "enableK8sTokenAuth") == "true":
				warn("%s with enableK8sTokenAuth: Ray checks Kubernetes ServiceAccount tokens, not one static token, and inject has none to give the sidecar: %s. Debug on a cluster with authOptions.enableK8sTokenAuth unset", mode, refusedWhy)
			case scalarAt(own, "name") != "" && scalarAt(own, "key") != "":
				// KubeRay >= 1.6 keeps a RAY_AUTH_TOKEN the Ray container
				// sets; 1.5 appends its own after it, which then wins.
				return &tokenSource{secret: scalarAt(own, "name"), key: scalarAt(own, "key"), mode: mode,
					cause: "the Secret the head's Ray container's own RAY_AUTH_TOKEN refers to, which KubeRay >= 1.6 keeps (1.5 puts its own Secret after it, and the dashboard would then refuse the proxy's token)", exists: "create it before the cluster"}
			case scalarAt(ao, "secretName") != "":
				return &tokenSource{secret: scalarAt(ao, "secretName"), key: KubeRayTokenKey, mode: mode,
					cause: clusterPath(kind) + ".authOptions.secretName", exists: "create it before the cluster (KubeRay does not)"}
			case kind == "RayCluster" && name != "":
				return &tokenSource{secret: kubeRayCheckName(name), key: KubeRayTokenKey, mode: mode,
					cause: "the Secret KubeRay creates for the RayCluster, named after it", exists: "KubeRay creates it before the head pod"}
			case kind == "RayCluster":
				warn("%s and the RayCluster has no metadata.name: KubeRay names its token Secret after the RayCluster, so inject cannot tell which Secret to mount into the sidecar; %s. Give the RayCluster a name, or set spec.authOptions.secretName (KubeRay >= 1.6) to a Secret with the key %s, and run inject again", mode, refusedWhy, KubeRayTokenKey)
			default:
				if name == "" {
					name = "<name>"
				}
				warn("%s: KubeRay keeps the token in a Secret named after the RayCluster it creates for this %s (%s-<5 random characters>), so inject cannot tell which Secret to mount into the sidecar; %s. Set %s.authOptions.secretName (KubeRay >= 1.6) to a Secret you create with the key %s (kubectl create secret generic NAME --from-literal=%s=\"$(openssl rand -base64 32)\"), and run inject again",
					mode, kind, name, refusedWhy, clusterPath(kind), KubeRayTokenKey, KubeRayTokenKey)
			}
			return nil
		}
	}
	sources := []envSource{{s.rayEnv, "the head's Ray container"}}
	if c.helmValues {
		sources = []envSource{{valueAt(root, "common", "containerEnv"), "common.containerEnv"}, {s.rayEnv, "head.containerEnv"}}
	}
	v, where, ok := lastEnv("RAY_AUTH_MODE", sources...)
	if !ok || strings.TrimSpace(v) != "token" {
		return nil
	}
	mode := where + " sets RAY_AUTH_MODE=token (Ray token authentication)"
	e, tokenWhere := lastEnvEntry("RAY_AUTH_TOKEN", sources...)
	ref := valueAt(e, "valueFrom", "secretKeyRef")
	switch {
	case ref != nil && scalarAt(ref, "name") != "" && scalarAt(ref, "key") != "":
		return &tokenSource{secret: scalarAt(ref, "name"), key: scalarAt(ref, "key"), mode: mode,
			cause: "the Secret " + tokenWhere + "'s RAY_AUTH_TOKEN refers to", exists: "the Ray container needs it too"}
	case e != nil && scalarAt(e, "value") != "":
		warn("%s, and its RAY_AUTH_TOKEN holds the token itself, written in this file: inject copies no token into the sidecar; %s. Put the token in a Secret, set RAY_AUTH_TOKEN with valueFrom.secretKeyRef (name and key) instead, and run inject again", mode, refusedWhy)
	default:
		warn("%s but sets no RAY_AUTH_TOKEN from a Secret (Ray then reads RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token): inject cannot find the token to give the sidecar; %s. Set RAY_AUTH_TOKEN with valueFrom.secretKeyRef (the Secret's name and key) on %s, and run inject again", mode, refusedWhy, where)
	}
	return nil
}

// checkNetworkPolicy warns about KubeRay's spec.networkPolicy (KubeRay
// >= 1.7 with its RayClusterNetworkPolicy feature gate): the policies it
// creates admit traffic between the pods of the RayCluster on every port
// (the sidecar reaches debugpy on the head and the workers) and nothing else
// the mode denies.
func checkNetworkPolicy(root *yaml.Node, kind string, warn func(string, ...any)) {
	np := valueAt(clusterOf(root, kind), "networkPolicy")
	if np == nil {
		return
	}
	mode := scalarAt(np, "mode")
	if mode == "" {
		mode = "DenyAll"
	}
	var lost []string
	if mode == "DenyAll" || mode == "DenyAllIngress" {
		lost = append(lost, "nothing outside this RayCluster reaches its pods, so code-server (port 8443) is reachable only through kubectl port-forward (not through a Service, an Ingress or another pod), and a debugger running outside the RayCluster cannot connect to the random port of a paused task's debugpy")
	}
	if mode == "DenyAll" || mode == "DenyAllEgress" {
		lost = append(lost, "the pods reach nothing outside the RayCluster, DNS included unless networkPolicy.head/worker egressRules allow it, so a runtime env that installs debugpy from PyPI fails")
	}
	if len(lost) == 0 {
		return
	}
	warn("%s.networkPolicy (mode %s): KubeRay's network policies (feature gate RayClusterNetworkPolicy) admit traffic between the pods of this RayCluster on every port, so the sidecar in the head pod still reaches debugpy on the head and the workers; but %s",
		clusterPath(kind), mode, strings.Join(lost, "; and "))
}

// firstDocument describes the first document of chunks that holds
// anything ("document 1 (ConfigMap settings)"), and its 1-based index:
// the one document `kubectl ray job submit -f` reads (it decodes the file
// with sigs.k8s.io/yaml, which stops after the first document; every
// plugin version, v1.3 to v1.7).
func firstDocument(chunks [][]byte) (index int, desc string) {
	for i, chunk := range chunks {
		root, err := parseDoc(chunk)
		if err != nil || root == nil {
			continue
		}
		desc = fmt.Sprintf("document %d", i+1)
		if kind := scalarAt(root, "kind"); kind != "" {
			desc += " (" + strings.TrimSpace(kind+" "+scalarAt(root, "metadata", "name")) + ")"
		}
		return i + 1, desc
	}
	return 0, ""
}

// checkSubmission warns about a RayJob the kubectl ray plugin cannot
// submit with -f: one whose spec.submissionMode is not InteractiveMode
// (K8sJobMode when unset, KubeRay's default), and one that is not the first
// document of its file. index is the RayJob's 1-based document index.
func (c *config) checkSubmission(root *yaml.Node, kind string, index int, warn func(string, ...any)) {
	if kind != "RayJob" || c.helmValues {
		return
	}
	mode := scalarAt(root, "spec", "submissionMode")
	modeText := "submissionMode " + mode
	if mode == "" {
		mode = "K8sJobMode"
		modeText = "submissionMode K8sJobMode (unset: KubeRay's default)"
	}
	if mode != "InteractiveMode" {
		warn("%s, not InteractiveMode: KubeRay submits the entrypoint itself, so `kubectl ray job submit -f` refuses this RayJob, and `imagectl debug` follows the job KubeRay submits but can upload no --working-dir and take no entrypoint after --; set spec.submissionMode: InteractiveMode to submit the job yourself",
			modeText)
	}
	if c.firstDoc != 0 && index != c.firstDoc {
		warn("this RayJob (%s) is not the first document of the file: `kubectl ray job submit -f` reads only the first, %s, and ignores the rest without an error; put the RayJob first (the plugin still applies no other document: apply them yourself), or use `imagectl debug`, which applies every document",
			modeText, c.firstDocDesc)
	}
}
