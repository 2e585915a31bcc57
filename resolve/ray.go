package resolve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/catalog"
)

// ray looks up the requested Ray version. It is not a candidate walk: the
// version is given, and each way it can fail is an error of its own.
func (r *resolver) ray(want string, ex *Explanation) (catalog.PythonPackage, error) {
	var known []string
	var found *catalog.PythonPackage
	for i, p := range r.cat.Ray {
		known = append(known, p.Version)
		if p.Version == want || catalog.ComparePythonVersions(p.Version, want) == 0 {
			found = &r.cat.Ray[i]
		}
	}
	slices.SortFunc(known, catalog.ComparePythonVersions)
	if want == "" {
		return catalog.PythonPackage{}, fmt.Errorf("no Ray version given; known Ray versions: %s", strings.Join(known, ", "))
	}
	if found == nil {
		return catalog.PythonPackage{}, &UnknownRayError{Version: want, Known: known}
	}
	c := r.cfg.Components.Ray
	ok, err := pySatisfies(c.Constraint, found.Version)
	switch {
	case err != nil:
		//lint:ignore ST1005 the message starts with the product name Ray
		return catalog.PythonPackage{}, fmt.Errorf("Ray %s: %w", found.Version, err)
	case !ok:
		//lint:ignore ST1005 the message starts with the product name Ray
		return catalog.PythonPackage{}, fmt.Errorf("Ray %s is outside matrix.yaml components.ray.constraint %q", found.Version, c.Constraint)
	case isPyExcluded(found.Version, c.Exclude):
		//lint:ignore ST1005 the message starts with the product name Ray
		return catalog.PythonPackage{}, fmt.Errorf("Ray %s is excluded in matrix.yaml components.ray.exclude", found.Version)
	case found.Yanked:
		//lint:ignore ST1005 the message starts with the product name Ray
		return catalog.PythonPackage{}, fmt.Errorf("Ray %s is yanked on PyPI", found.Version)
	}
	ex.add(Decision{Component: "ray", Chosen: found.Version,
		Reason: fmt.Sprintf("requested; satisfies %s", c.Constraint)})
	return *found, nil
}
