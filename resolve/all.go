package resolve

import (
	"slices"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
)

// Skipped is a Ray version that All could not build, and why.
type Skipped struct {
	Ray    string `json:"ray"`
	Reason string `json:"reason"`
}

// All resolves every buildable combination for platforms (empty: matrix.yaml
// platforms): for each buildable Ray version, newest first, the newest
// compatible set. Buildable Ray versions satisfy components.ray.constraint,
// are not excluded, yanked or pre-releases, and with build: latest-patch only
// the newest patch of each minor counts. Ray versions whose resolution fails
// are returned in skipped.
func All(cfg *matrix.Config, cat *catalog.Catalog, platforms []string) (sets []imagespec.Set, skipped []Skipped, err error) {
	if _, err := normalizePlatforms(platforms, cfg.Platforms); err != nil {
		return nil, nil, err
	}
	c := cfg.Components.Ray
	buildable, _ := filter(cat.Ray, pythonPackageVersion,
		rejectIf(func(p catalog.PythonPackage) bool {
			ok, err := pySatisfies(c.Constraint, p.Version)
			return err != nil || !ok
		}, "outside the constraint"),
		rejectIf(func(p catalog.PythonPackage) bool { return p.Yanked }, "yanked"),
		rejectIf(func(p catalog.PythonPackage) bool { return p.PreRelease || catalog.IsPythonPreRelease(p.Version) }, "pre-release"),
		rejectIf(func(p catalog.PythonPackage) bool { return isPyExcluded(p.Version, c.Exclude) }, "excluded"),
	)
	rays := make([]string, 0, len(buildable))
	for _, p := range buildable {
		rays = append(rays, p.Version)
	}
	slices.SortFunc(rays, func(a, b string) int { return catalog.ComparePythonVersions(b, a) })
	rays = slices.Compact(rays)
	if c.Build != matrix.RayBuildAll {
		seen := map[string]bool{}
		rays = slices.DeleteFunc(rays, func(v string) bool {
			m := minorOf(v)
			if seen[m] {
				return true
			}
			seen[m] = true
			return false
		})
	}
	r := newResolver(cfg, cat)
	for _, v := range rays {
		set, _, err := r.resolve(Request{Ray: v, Platforms: platforms})
		if err != nil {
			skipped = append(skipped, Skipped{Ray: v, Reason: err.Error()})
			continue
		}
		sets = append(sets, set)
	}
	return sets, skipped, nil
}
