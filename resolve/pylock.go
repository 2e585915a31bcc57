package resolve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/pylock"
)

// BlockedClosureError is returned for a set whose Python closure
// imagectl matrix refresh could not lock on a platform: pip found no
// installable wheel of a distribution (or a conflict).
type BlockedClosureError struct {
	Key     pylock.Key
	Blocked pylock.Blocked
}

func (e *BlockedClosureError) Error() string {
	return fmt.Sprintf("%s cannot be installed for CPython %s on %s: blocked by %s (%s), as imagectl matrix refresh locked it with pip",
		strings.Join(e.Key.Requirements(), " and "), e.Key.Python, e.Key.Platform, e.Blocked.By(), e.Blocked.Detail)
}

// pythonLocks returns the catalog's lock of the set's closure per platform.
// A blocked lock is an error naming the distribution that blocks it; a
// missing one a note (the build is then unlocked).
func (r *resolver) pythonLocks(ray, debugpy, python string, ex *Explanation) (map[string][]imagespec.PythonDist, error) {
	out := map[string][]imagespec.PythonDist{}
	var missing []string
	index := ""
	for _, p := range r.platforms {
		k := pylock.Key{Ray: ray, RayExtras: r.cfg.Components.Ray.Extras, Debugpy: debugpy, Python: python, Platform: p}
		l, ok := r.cat.FindPythonLock(k)
		switch {
		case !ok:
			missing = append(missing, p)
			continue
		case l.Blocked != nil:
			ex.add(Decision{Component: "python closure", Chosen: "none on " + p,
				Reason: fmt.Sprintf("blocked by %s: %s (pip against %s)", l.Blocked.By(), l.Blocked.Detail, l.Index)})
			return nil, &BlockedClosureError{Key: k, Blocked: *l.Blocked}
		}
		// A copy, sorted as a lock keeps it: the catalog given need not
		// be normalized.
		ds := slices.Clone(l.Distributions)
		pylock.SortClosure(ds)
		out[p] = ds
		index = l.Index
	}
	if len(missing) > 0 {
		ex.Notes = append(ex.Notes, fmt.Sprintf("python closure: the catalog locks no closure of %s for CPython %s on %s; the build lets pip resolve the dependencies there at build time (unlocked, no hashes); run imagectl matrix refresh to lock them",
			strings.Join(pylock.Key{Ray: ray, RayExtras: r.cfg.Components.Ray.Extras, Debugpy: debugpy}.Requirements(), " and "), python, strings.Join(missing, ", ")))
	}
	if len(out) == 0 {
		return nil, nil
	}
	ex.add(Decision{Component: "python closure", Chosen: pylock.Sizes(out),
		Reason: fmt.Sprintf("locked by imagectl matrix refresh with pip against %s; every wheel pinned by sha256 (%s)", index, pylock.Summary(out))})
	return out, nil
}
