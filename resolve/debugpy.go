package resolve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/catalog"
)

// debugpy picks the newest debugpy release that satisfies matrix.yaml's
// constraint, is not yanked, excluded or a pre-release, and has a wheel for
// CPython python on every requested platform.
func (r *resolver) debugpy(python string, ex *Explanation) (string, error) {
	c := r.cfg.Components.Debugpy
	sat := func(p catalog.PythonPackage) (bool, error) { return pySatisfies(c.Constraint, p.Version) }
	i, rejected := first(r.debugpys, pythonPackageVersion,
		rejectErr(func(p catalog.PythonPackage) error { _, err := sat(p); return err }),
		rejectIf(func(p catalog.PythonPackage) bool { return p.Yanked }, "yanked on PyPI"),
		rejectIf(func(p catalog.PythonPackage) bool { return p.PreRelease || catalog.IsPythonPreRelease(p.Version) }, "pre-release"),
		rejectIf(func(p catalog.PythonPackage) bool { ok, _ := sat(p); return !ok }, "does not satisfy "+c.Constraint),
		rejectIf(func(p catalog.PythonPackage) bool { return isPyExcluded(p.Version, c.Exclude) }, "excluded in matrix.yaml components.debugpy.exclude"),
		func(p catalog.PythonPackage) string { return r.wheelProblem(p, python) },
	)
	if i < 0 {
		return "", &ConflictError{Component: "debugpy", Context: r.ctx + " with Python " + python, Rejected: rejected}
	}
	ex.add(Decision{Component: "debugpy", Chosen: r.debugpys[i].Version,
		Reason:   fmt.Sprintf("newest satisfying %s, not yanked, with a wheel for CPython %s on %s", c.Constraint, python, strings.Join(r.platforms, " and ")),
		Rejected: rejected})
	return r.debugpys[i].Version, nil
}

func pythonPackageVersion(p catalog.PythonPackage) string { return p.Version }

// wheelProblem says why release p has no wheel usable by CPython py on every
// platform, or "" if it has one.
func (r *resolver) wheelProblem(p catalog.PythonPackage, py string) string {
	if p.RequiresPython != "" {
		ok, err := pythonSatisfies(p.RequiresPython, py)
		if err != nil {
			return err.Error()
		}
		if !ok {
			return fmt.Sprintf("requires-python %s excludes %s", p.RequiresPython, py)
		}
	}
	if len(p.Pythons["any"]) > 0 {
		return ""
	}
	var missing []string
	for _, pl := range r.platforms {
		if !slices.Contains(p.Pythons[pl], py) {
			missing = append(missing, pl)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("no wheel for CPython %s on %s", py, strings.Join(missing, ", "))
	}
	return ""
}
