package release

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/imagespec"
)

// pyVersion is one distribution's locked wheel on one platform.
type pyVersion struct{ version, sha256 string }

// diffPythonLocks explains how the locked Python closures of a published
// set and the new one differ, one reason per distribution: "aiosignal
// 1.3.1 -> 1.3.2" when every platform moved alike, else per platform.
// ray and debugpy are left out (their bumps have their own reasons).
func diffPythonLocks(old, cur imagespec.Set) []Reason {
	if len(old.PythonLocks) == 0 && len(cur.PythonLocks) == 0 {
		return nil
	}
	if len(old.PythonLocks) == 0 {
		return []Reason{{KindPythonDep, "closure now locked (" + closureSizes(cur) + "); the published image was built unlocked"}}
	}
	if len(cur.PythonLocks) == 0 {
		return []Reason{{KindPythonDep, "closure no longer locked (the catalog records none); the published image had " + closureSizes(old)}}
	}
	index := func(s imagespec.Set) map[string]map[string]pyVersion { // name -> platform -> wheel
		m := map[string]map[string]pyVersion{}
		for p, ds := range s.PythonLocks {
			for _, d := range ds {
				n := imagespec.NormalizeName(d.Name)
				if m[n] == nil {
					m[n] = map[string]pyVersion{}
				}
				m[n][p] = pyVersion{d.Version, d.SHA256}
			}
		}
		return m
	}
	o, c := index(old), index(cur)
	plats := unionKeys(old.PythonLocks, cur.PythonLocks)
	var rs []Reason
	for _, n := range unionKeys(o, c) {
		if n == "ray" || n == "debugpy" {
			continue
		}
		// Per platform: "a -> b", "a added", "a removed", or a changed file.
		type change struct{ platform, detail string }
		var changes []change
		for _, p := range plats {
			a, hadA := o[n][p]
			b, hasB := c[n][p]
			_, oldPlat := old.PythonLocks[p]
			_, curPlat := cur.PythonLocks[p]
			switch {
			case !oldPlat || !curPlat:
				// A platform locked on one side only: not a dependency bump.
			case hadA && hasB && a.version != b.version:
				changes = append(changes, change{p, fmt.Sprintf("%s -> %s", a.version, b.version)})
			case hadA && hasB && a.sha256 != b.sha256:
				changes = append(changes, change{p, fmt.Sprintf("%s wheel changed (%s -> %s)", a.version, shortHex(a.sha256), shortHex(b.sha256))})
			case hadA && !hasB:
				changes = append(changes, change{p, a.version + " removed"})
			case !hadA && hasB:
				changes = append(changes, change{p, b.version + " added"})
			}
		}
		if len(changes) == 0 {
			continue
		}
		same := true
		for _, ch := range changes[1:] {
			same = same && ch.detail == changes[0].detail
		}
		if same && len(changes) == len(plats) {
			rs = append(rs, Reason{KindPythonDep, n + " " + changes[0].detail})
			continue
		}
		var per []string
		for _, ch := range changes {
			per = append(per, ch.detail+" on "+ch.platform)
		}
		rs = append(rs, Reason{KindPythonDep, n + " " + strings.Join(per, ", ")})
	}
	return rs
}

func closureSizes(s imagespec.Set) string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(s.PythonLocks)) {
		out = append(out, fmt.Sprintf("%d distributions on %s", len(s.PythonLocks[p]), p))
	}
	return strings.Join(out, ", ")
}

func shortHex(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
