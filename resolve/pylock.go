package resolve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
)

// BlockedClosureError is returned for a set whose Python closure
// imagectl matrix refresh could not lock on a platform: pip found no
// installable wheel of a distribution (or a conflict).
type BlockedClosureError struct {
	Key     catalog.LockKey
	Blocked catalog.LockBlocked
}

func (e *BlockedClosureError) Error() string {
	by := "a dependency conflict"
	if e.Blocked.Distribution != "" {
		by = e.Blocked.Distribution
	}
	return fmt.Sprintf("%s cannot be installed for CPython %s on %s: blocked by %s (%s), as imagectl matrix refresh locked it with pip",
		strings.Join(e.Key.Requirements(), " and "), e.Key.Python, e.Key.Platform, by, e.Blocked.Detail)
}

// LockKeys are the Python closures sets need locked: one per set and
// platform (duplicates removed).
func LockKeys(sets []imagespec.Set) []catalog.LockKey {
	var keys []catalog.LockKey
	seen := map[string]bool{}
	for _, s := range sets {
		for _, p := range s.Platforms {
			k := catalog.LockKey{Ray: s.Ray, RayExtras: slices.Clone(s.RayExtras), Debugpy: s.Debugpy, Python: s.Python, Platform: p}
			if !seen[k.String()] {
				seen[k.String()] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// pythonLocks returns the catalog's lock of the set's closure per platform.
// A blocked lock is an error naming the distribution that blocks it; a
// missing one a note (the build is then unlocked).
func (r *resolver) pythonLocks(ray, debugpy, python string, ex *Explanation) (map[string][]imagespec.PythonDist, error) {
	out := map[string][]imagespec.PythonDist{}
	var sizes, missing []string
	index := ""
	for _, p := range r.platforms {
		k := catalog.LockKey{Ray: ray, RayExtras: r.cfg.Components.Ray.Extras, Debugpy: debugpy, Python: python, Platform: p}
		l, ok := r.cat.FindPythonLock(k)
		switch {
		case !ok:
			missing = append(missing, p)
			continue
		case l.Blocked != nil:
			by := "a dependency conflict"
			if l.Blocked.Distribution != "" {
				by = l.Blocked.Distribution
			}
			ex.add(Decision{Component: "python closure", Chosen: "none on " + p,
				Reason: fmt.Sprintf("blocked by %s: %s (pip against %s)", by, l.Blocked.Detail, l.Index)})
			return nil, &BlockedClosureError{Key: k, Blocked: *l.Blocked}
		}
		ds := make([]imagespec.PythonDist, 0, len(l.Distributions))
		for _, d := range l.Distributions {
			ds = append(ds, imagespec.PythonDist{Name: d.Name, Version: d.Version, Filename: d.Filename, URL: d.URL, SHA256: d.SHA256})
		}
		// By normalized name, as catalog.Normalize sorts a closure.
		slices.SortStableFunc(ds, func(a, b imagespec.PythonDist) int {
			return strings.Compare(imagespec.NormalizeName(a.Name), imagespec.NormalizeName(b.Name))
		})
		out[p] = ds
		index = l.Index
		if len(sizes) == 0 {
			sizes = append(sizes, fmt.Sprintf("%d distributions on %s", len(ds), p))
		} else {
			sizes = append(sizes, fmt.Sprintf("%d on %s", len(ds), p))
		}
	}
	if len(missing) > 0 {
		ex.Notes = append(ex.Notes, fmt.Sprintf("python closure: the catalog locks no closure of %s for CPython %s on %s; the build lets pip resolve the dependencies there at build time (unlocked, no hashes); run imagectl matrix refresh to lock them",
			strings.Join(catalog.LockKey{Ray: ray, RayExtras: r.cfg.Components.Ray.Extras, Debugpy: debugpy}.Requirements(), " and "), python, strings.Join(missing, ", ")))
	}
	if len(out) == 0 {
		return nil, nil
	}
	ex.add(Decision{Component: "python closure", Chosen: strings.Join(sizes, ", "),
		Reason: fmt.Sprintf("locked by imagectl matrix refresh with pip against %s; every wheel pinned by sha256 (%s)", index, closureSummary(out))})
	return out, nil
}

// closureSummary lists the distributions of the closure that are not on
// every platform at the same version, or says they are.
func closureSummary(locks map[string][]imagespec.PythonDist) string {
	plats := make([]string, 0, len(locks))
	for p := range locks {
		plats = append(plats, p)
	}
	slices.Sort(plats)
	ver := map[string]map[string]string{} // name -> platform -> version
	for _, p := range plats {
		for _, d := range locks[p] {
			n := imagespec.NormalizeName(d.Name)
			if ver[n] == nil {
				ver[n] = map[string]string{}
			}
			ver[n][p] = d.Version
		}
	}
	var diff []string
	names := make([]string, 0, len(ver))
	for n := range ver {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		var per []string
		same := len(ver[n]) == len(plats)
		first := ""
		for _, p := range plats {
			v, ok := ver[n][p]
			if !ok {
				v = "-"
			}
			if first == "" {
				first = v
			} else if v != first {
				same = false
			}
			per = append(per, p+" "+v)
		}
		if !same {
			diff = append(diff, n+": "+strings.Join(per, ", "))
		}
	}
	if len(diff) == 0 {
		return "the same distributions and versions on every platform"
	}
	return "differs by platform: " + strings.Join(diff, "; ")
}
