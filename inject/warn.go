package inject

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"gopkg.in/yaml.v3"

	"github.com/imagectl/imagectl/internal/pep440"
)

// MinDebugpy is the debugpy the Ray debugger needs in the worker.
const MinDebugpy = "1.8.0"

// ImagesWithoutDebugpy are Ray image repositories known not to ship
// debugpy: Ray's own images install ray[all] without it, so a task's
// breakpoint() logs "Module 'debugpy>=1.8.0' cannot be loaded" and does not
// pause unless the runtime env adds it.
var ImagesWithoutDebugpy = []string{"rayproject/ray", "rayproject/ray-ml"}

// checkDebugger reports what keeps the debugger from pausing tasks.
func (c *config) checkDebugger(root *yaml.Node, kind string, s *site, warn func(string, ...any)) {
	checkEnv := func(env *yaml.Node, where string) {
		if env == nil || env.Kind != yaml.SequenceNode {
			return
		}
		for _, e := range env.Content {
			if scalarAt(e, "name") == "RAY_DEBUG" {
				if v, ok := rayDebugProblem(scalarAt(e, "value")); ok {
					warn("%s sets RAY_DEBUG=%s: %s", where, scalarAt(e, "value"), v)
				}
			}
		}
	}
	checkEnv(s.rayEnv, "the head's Ray container")
	if !c.helmValues {
		cluster := valueAt(root, "spec")
		switch kind {
		case "RayJob":
			cluster = valueAt(root, "spec", "rayClusterSpec")
		case "RayService":
			cluster = valueAt(root, "spec", "rayClusterConfig")
		}
		if groups := valueAt(cluster, "workerGroupSpecs"); groups != nil {
			for _, g := range groups.Content {
				cs := valueAt(g, "template", "spec", "containers")
				if cs != nil && cs.Kind == yaml.SequenceNode && len(cs.Content) > 0 {
					checkEnv(valueAt(cs.Content[0], "env"), fmt.Sprintf("worker group %q's Ray container", scalarAt(g, "groupName")))
				}
			}
		}
	} else if groups := valueAt(root, "worker"); groups != nil {
		checkEnv(valueAt(groups, "containerEnv"), "worker.containerEnv")
	}
	if kind != "RayJob" {
		return
	}
	renv := map[string]any{}
	if y := scalarAt(root, "spec", "runtimeEnvYAML"); y != "" {
		if err := yaml.Unmarshal([]byte(y), &renv); err != nil {
			warn("spec.runtimeEnvYAML is not valid YAML (%v): Ray will reject the job", err)
			return
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
		mode := scalarAt(root, "spec", "submissionMode")
		hint := `add "debugpy>=` + MinDebugpy + `" to pip in spec.runtimeEnvYAML`
		if mode == "InteractiveMode" {
			hint = `submit with --runtime-env-json '{"pip":["debugpy>=` + MinDebugpy + `"]}'`
		}
		warn("the runtime env lacks debugpy>=%s and the Ray image %s does not ship it: breakpoint() will log \"Module 'debugpy>=%s' cannot be loaded\" and not pause; %s",
			MinDebugpy, s.rayImage, MinDebugpy, hint)
	}
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
// asks for runAsNonRoot says such a policy is likely in force.
func (c *config) checkHardened(ns string, s *site, warn func(string, ...any)) {
	const why = "the sidecar runs linuxserver's init as root (its own securityContext sets runAsUser: 0, runAsNonRoot: false), then code-server as PUID"
	if ns != "" && c.enforce[ns] == "restricted" {
		warn("namespace %s has the label %s=restricted: PodSecurity refuses the head pod, because %s; the RayCluster never starts (FailedToCreateHeadPod events). Debug in a namespace labelled %s=baseline (see docs/inject.md, Hardened pods)",
			ns, PodSecurityEnforceLabel, why, PodSecurityEnforceLabel)
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
			warn("%s sets %s: true, so the namespace likely enforces PodSecurity \"restricted\" (label %s) or a policy that requires runAsNonRoot; %s, which the kubelet accepts but such a policy refuses: the head pod is not created and the RayCluster never starts (FailedToCreateHeadPod events). See docs/inject.md, Hardened pods",
				where, field, PodSecurityEnforceLabel, why)
			return
		}
	}
}
