package pylock

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/imagespec"
)

// Lock is the complete closure of Python distributions that pip's own
// resolver chose for one set's top-level requirements
// (ray[<extras>]==Ray, debugpy==Debugpy) for CPython Python on one OCI
// platform, with the exact wheel of each: what the build installs with
// pip install --no-deps --require-hashes. imagectl matrix refresh records
// one per (set, platform) of matrix list in catalog.json.
type Lock struct {
	Ray       string   `json:"ray"`
	RayExtras []string `json:"rayExtras,omitempty"`
	Debugpy   string   `json:"debugpy"`
	// Python is the CPython minor version, e.g. "3.12".
	Python string `json:"python"`
	// Platform is the OCI platform, e.g. linux/arm64.
	Platform string `json:"platform"`
	// Index is the PEP 503 index pip resolved against
	// (matrix.yaml upstreams.packageIndex).
	Index string `json:"index"`
	// Distributions is the closure, sorted by normalized name
	// (SortClosure); empty when Blocked.
	Distributions []imagespec.PythonDist `json:"distributions,omitempty"`
	// Blocked says why pip found no installable closure on this platform,
	// e.g. a dependency with no wheel for it.
	Blocked *Blocked `json:"blocked,omitempty"`
}

// Blocked is why a closure could not be locked on a platform.
type Blocked struct {
	// Distribution is the distribution that has no installable wheel
	// (normalized name), or empty when pip reported a conflict instead.
	Distribution string `json:"distribution,omitempty"`
	// Detail is pip's own one-line reason.
	Detail string `json:"detail"`
}

// By names what blocks the closure: the distribution, or "a dependency
// conflict" when pip reported one.
func (b Blocked) By() string {
	if b.Distribution != "" {
		return b.Distribution
	}
	return "a dependency conflict"
}

// Key identifies what a Lock locks.
type Key struct {
	Ray       string
	RayExtras []string
	Debugpy   string
	Python    string
	Platform  string
}

// Key returns what l locks.
func (l Lock) Key() Key {
	return Key{Ray: l.Ray, RayExtras: l.RayExtras, Debugpy: l.Debugpy, Python: l.Python, Platform: l.Platform}
}

// Matches reports whether l locks k (extras compared as sets).
func (l Lock) Matches(k Key) bool {
	a, b := slices.Clone(l.RayExtras), slices.Clone(k.RayExtras)
	slices.Sort(a)
	slices.Sort(b)
	return l.Ray == k.Ray && l.Debugpy == k.Debugpy && l.Python == k.Python && l.Platform == k.Platform && slices.Equal(a, b)
}

// Requirements are the top-level requirements of k, as pip takes them.
func (k Key) Requirements() []string {
	ray := "ray"
	if len(k.RayExtras) > 0 {
		ex := slices.Clone(k.RayExtras)
		slices.Sort(ex)
		ray += "[" + strings.Join(ex, ",") + "]"
	}
	return []string{ray + "==" + k.Ray, "debugpy==" + k.Debugpy}
}

func (k Key) String() string {
	return fmt.Sprintf("%s and debugpy==%s for CPython %s on %s", k.Requirements()[0], k.Debugpy, k.Python, k.Platform)
}

// Keys are the Python closures sets need locked: one per set and platform
// (duplicates removed), in the order of the sets, then of their platforms.
func Keys(sets []imagespec.Set) []Key {
	var keys []Key
	seen := map[string]bool{}
	for _, s := range sets {
		for _, p := range s.Platforms {
			k := Key{Ray: s.Ray, RayExtras: slices.Clone(s.RayExtras), Debugpy: s.Debugpy, Python: s.Python, Platform: p}
			if !seen[k.String()] {
				seen[k.String()] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// SortClosure sorts a closure by PEP 503 normalized name, the order a Lock
// and imagespec.Set.PythonLocks keep it in.
func SortClosure(ds []imagespec.PythonDist) {
	slices.SortStableFunc(ds, func(a, b imagespec.PythonDist) int {
		return strings.Compare(imagespec.NormalizeName(a.Name), imagespec.NormalizeName(b.Name))
	})
}

// Request is one closure for a Locker to resolve.
type Request struct {
	// Requirements are the top-level requirements, e.g. "ray[default]==2.46.0".
	Requirements []string
	// Python is the target CPython minor version and Platform the OCI platform.
	Python   string
	Platform string
	// Index is the PEP 503 index URL.
	Index string
}

// BlockedError is returned by a Locker when the closure has no installable
// wheel on the platform (recorded as Lock.Blocked, not a refresh failure).
type BlockedError struct {
	Blocked Blocked
}

func (e *BlockedError) Error() string {
	if e.Blocked.Distribution != "" {
		return fmt.Sprintf("blocked by %s: %s", e.Blocked.Distribution, e.Blocked.Detail)
	}
	return "blocked: " + e.Blocked.Detail
}

// Locker resolves the complete closure of a Request with pip's own
// resolver (upstream/pip's Locker).
type Locker interface {
	Lock(ctx context.Context, req Request) ([]imagespec.PythonDist, error)
}
