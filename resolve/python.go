package resolve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/catalog"
)

// python picks the CPython minor version: the highest Ray ships wheels for
// on every requested platform, within matrix.yaml's min and max, or the
// pinned one. It returns those common versions (ascending) and the choice.
func (r *resolver) python(ray catalog.PythonPackage, pin string, ex *Explanation) ([]string, string, error) {
	common, candidates := r.rayPythons(ray)
	if len(common) == 0 {
		var per []string
		for _, p := range r.platforms {
			per = append(per, fmt.Sprintf("%s: [%s]", p, strings.Join(sortedPythons(ray.Pythons[p]), ", ")))
		}
		return nil, "", &ConflictError{Component: "Python", Context: r.ctx,
			Detail: fmt.Sprintf("Ray %s ships no CPython wheel common to every platform (%s)", ray.Version, strings.Join(per, "; "))}
	}
	if pin != "" && !slices.Contains(common, pin) {
		var have []string
		for _, p := range r.platforms {
			if slices.Contains(ray.Pythons[p], pin) {
				have = append(have, p)
			}
		}
		where := "none of the requested platforms"
		if len(have) > 0 {
			where = "only " + strings.Join(have, ", ")
		}
		return nil, "", &ConflictError{Component: "Python", Context: r.ctx,
			Detail: fmt.Sprintf("--python %s: Ray %s ships wheels for it on %s (common to all: %s)", pin, ray.Version, where, strings.Join(common, ", "))}
	}
	pol := r.cfg.Components.Python
	i, rejected := first(candidates, func(v string) string { return v },
		rejectIf(func(v string) bool { _, ok := catalog.PythonMinor(v); return !ok }, "not a CPython 3.N version"),
		func(v string) string { return r.missingRayWheels(ray, common, v) },
		rejectIf(func(v string) bool { return pol.Max != "" && mustMinor(v) > mustMinor(pol.Max) }, "above the matrix.yaml python max "+pol.Max),
		rejectIf(func(v string) bool { return pol.Min != "" && mustMinor(v) < mustMinor(pol.Min) }, "below the matrix.yaml python min "+pol.Min),
		rejectIf(func(v string) bool { return pin != "" && v != pin }, "not the requested --python "+pin),
	)
	if i < 0 {
		return nil, "", &ConflictError{Component: "Python", Context: r.ctx, Rejected: rejected}
	}
	why := fmt.Sprintf("highest CPython with Ray %s wheels on %s (common: %s)", ray.Version, strings.Join(r.platforms, " and "), strings.Join(common, ", "))
	if pin != "" {
		why = fmt.Sprintf("requested; Ray %s ships wheels for it on %s", ray.Version, strings.Join(r.platforms, " and "))
	}
	if pol.Max != "" {
		why += ", capped at " + pol.Max
	}
	ex.add(Decision{Component: "python", Chosen: candidates[i], Reason: why, Rejected: rejected})
	return common, candidates[i], nil
}

// missingRayWheels says on which platforms Ray has no wheel for CPython v,
// or "" when v is common to all.
func (r *resolver) missingRayWheels(ray catalog.PythonPackage, common []string, v string) string {
	if slices.Contains(common, v) {
		return ""
	}
	var missing []string
	for _, p := range r.platforms {
		if !slices.Contains(ray.Pythons[p], v) {
			missing = append(missing, p)
		}
	}
	return fmt.Sprintf("no Ray %s wheel for %s", ray.Version, strings.Join(missing, ", "))
}

// rayPythons returns the CPython versions Ray ships wheels for on every
// requested platform (ascending) and on any of them (the candidates,
// highest first).
func (r *resolver) rayPythons(ray catalog.PythonPackage) (common, candidates []string) {
	all := map[string]bool{}
	for i, p := range r.platforms {
		ps := ray.Pythons[p]
		for _, v := range ps {
			all[v] = true
		}
		if i == 0 {
			common = slices.Clone(ps)
			continue
		}
		common = slices.DeleteFunc(common, func(v string) bool { return !slices.Contains(ps, v) })
	}
	common = sortedPythons(common)
	candidates = make([]string, 0, len(all))
	for v := range all {
		candidates = append(candidates, v)
	}
	slices.SortFunc(candidates, func(a, b string) int { return catalog.ComparePythons(b, a) })
	return common, candidates
}

// sortedPythons returns the CPython versions vs ascending, without
// duplicates, as catalog.Normalize orders them; vs is not modified.
func sortedPythons(vs []string) []string {
	return slices.Compact(slices.SortedFunc(slices.Values(vs), catalog.ComparePythons))
}

func mustMinor(v string) int {
	n, _ := catalog.PythonMinor(v)
	return n
}
