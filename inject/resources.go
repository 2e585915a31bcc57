package inject

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Resource names as the API server takes them for a container
// (k8s.io/kubernetes pkg/apis/core/validation, validateContainerResourceName
// and ValidateContainerResourceRequirements): cpu, memory,
// ephemeral-storage, hugepages-<size>, a name with the kubernetes.io/
// prefix, or an extended resource (a qualified name with a domain:
// example.com/gpu), which must be a whole number, requested exactly as
// much as its limit, and never without a limit.
const (
	hugePagesPrefix      = "hugepages-"
	nativePrefix         = "kubernetes.io/"
	requestsPrefix       = "requests."
	containerResourceMsg = "expected a container resource Kubernetes accepts: cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource with a domain (example.com/gpu)"
)

var standardContainerResources = []string{"cpu", "memory", "ephemeral-storage"}

// mergeResources is base with over applied: a key of over replaces that
// key of base, an empty value drops it.
func mergeResources(base, over map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range over {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// isNativeResource: a name without a domain, or in kubernetes.io.
func isNativeResource(name string) bool {
	return !strings.Contains(name, "/") || strings.Contains(name, nativePrefix)
}

func isExtendedResource(name string) bool {
	if isNativeResource(name) || strings.HasPrefix(name, requestsPrefix) {
		return false
	}
	// The quota for it is requests.<name>: that must be a qualified name.
	return len(validation.IsQualifiedName(requestsPrefix+name)) == 0
}

// overcommitAllowed: a request below the limit is allowed (cpu, memory,
// ephemeral-storage), not for huge pages or extended resources.
func overcommitAllowed(name string) bool {
	return isNativeResource(name) && !strings.HasPrefix(name, hugePagesPrefix)
}

// checkResourceName says why the API server would refuse name in a
// container's resources, or "".
func checkResourceName(name string) string {
	if errs := validation.IsQualifiedName(name); len(errs) > 0 {
		return containerResourceMsg + ": " + strings.Join(errs, "; ")
	}
	if !strings.Contains(name, "/") {
		if slices.Contains(standardContainerResources, name) || strings.HasPrefix(name, hugePagesPrefix) {
			return ""
		}
		return containerResourceMsg
	}
	if !isNativeResource(name) && !isExtendedResource(name) {
		return containerResourceMsg
	}
	return ""
}

// checkResources refuses requests and limits the API server would refuse
// in a container, every problem named as "requests cpu=\"3\": ...".
func checkResources(requests, limits map[string]string) error {
	var errs []error
	parsed := map[string]map[string]resource.Quantity{"requests": {}, "limits": {}}
	for _, what := range []string{"requests", "limits"} {
		m := requests
		if what == "limits" {
			m = limits
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			bad := func(format string, a ...any) {
				errs = append(errs, fmt.Errorf("%s %s=%q: %s", what, k, m[k], fmt.Sprintf(format, a...)))
			}
			if why := checkResourceName(k); why != "" {
				bad("%s", why)
				continue
			}
			q, err := resource.ParseQuantity(m[k])
			if err != nil {
				bad("expected a Kubernetes quantity (500m, 2, 1Gi): %v", err)
				continue
			}
			if q.Sign() < 0 {
				bad("must be greater than or equal to 0")
				continue
			}
			if isExtendedResource(k) && q.MilliValue()%1000 != 0 {
				bad("an extended resource is counted in whole units: expected a whole number")
				continue
			}
			parsed[what][k] = q
		}
	}
	reqs, lims := parsed["requests"], parsed["limits"]
	for _, k := range slices.Sorted(maps.Keys(reqs)) {
		q := reqs[k]
		l, ok := lims[k]
		switch {
		case !ok && !overcommitAllowed(k):
			errs = append(errs, fmt.Errorf("requests %s=%q: %s needs a limit too (limits %s=%s): Kubernetes does not overcommit it", k, requests[k], k, k, requests[k]))
		case ok && !overcommitAllowed(k) && q.Cmp(l) != 0:
			errs = append(errs, fmt.Errorf("requests %s=%q: must be equal to limits %s=%q: Kubernetes does not overcommit %s", k, requests[k], k, limits[k], k))
		case ok && q.Cmp(l) > 0:
			errs = append(errs, fmt.Errorf("requests %s=%q is above limits %s=%q: Kubernetes requires requests <= limits", k, requests[k], k, limits[k]))
		}
	}
	hugePages, cpuOrMemory := false, false
	for _, m := range []map[string]resource.Quantity{reqs, lims} {
		for k := range m {
			hugePages = hugePages || strings.HasPrefix(k, hugePagesPrefix)
			cpuOrMemory = cpuOrMemory || k == "cpu" || k == "memory"
		}
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, errors.New("resources: huge pages need a cpu or memory request or limit too"))
	}
	return errors.Join(errs...)
}
