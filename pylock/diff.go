package pylock

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/imagespec"
)

// Closures are one set's locked closures by OCI platform, as
// imagespec.Set.PythonLocks holds them.
type Closures = map[string][]imagespec.PythonDist

// wheel is one distribution's locked wheel on one platform.
type wheel struct{ version, sha256 string }

// byName indexes closures by normalized name, then platform.
func byName(cs Closures) map[string]map[string]wheel {
	m := map[string]map[string]wheel{}
	for p, ds := range cs {
		for _, d := range ds {
			n := imagespec.NormalizeName(d.Name)
			if m[n] == nil {
				m[n] = map[string]wheel{}
			}
			m[n][p] = wheel{d.Version, d.SHA256}
		}
	}
	return m
}

// Diff explains how two sets' locked closures differ, one line per
// distribution, sorted by normalized name: "aiosignal 1.3.1 -> 1.3.2" when
// every platform moved alike, else per platform ("frozenlist 1.4.1 -> 1.5.0
// on linux/arm64"); "click 8.1.8 removed", "colorful 0.5.6 added", and
// "click 8.1.8 wheel changed (cccccccccccc -> ffffffffffff)" for another
// wheel under the same version. ray and debugpy are left out (their bumps
// are the sets' own versions), and so is a platform locked on one side only
// (not a dependency bump). Either side empty gives nil: whether a closure
// is locked at all is the caller's to say.
func Diff(old, cur Closures) []string {
	if len(old) == 0 || len(cur) == 0 {
		return nil
	}
	o, c := byName(old), byName(cur)
	plats := slices.Sorted(maps.Keys(union(old, cur)))
	var out []string
	for _, n := range slices.Sorted(maps.Keys(union(o, c))) {
		if n == "ray" || n == "debugpy" {
			continue
		}
		// Per platform: "a -> b", "a added", "a removed", or a changed file.
		type change struct{ platform, detail string }
		var changes []change
		for _, p := range plats {
			a, hadA := o[n][p]
			b, hasB := c[n][p]
			_, oldPlat := old[p]
			_, curPlat := cur[p]
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
			out = append(out, n+" "+changes[0].detail)
			continue
		}
		var per []string
		for _, ch := range changes {
			per = append(per, ch.detail+" on "+ch.platform)
		}
		out = append(out, n+" "+strings.Join(per, ", "))
	}
	return out
}

// union returns a map with the keys of a and b.
func union[V any](a, b map[string]V) map[string]bool {
	u := map[string]bool{}
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}

// Sizes says how large each platform's closure is, by platform:
// "5 distributions on linux/amd64, 5 on linux/arm64".
func Sizes(cs Closures) string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(cs)) {
		if len(out) == 0 {
			out = append(out, fmt.Sprintf("%d distributions on %s", len(cs[p]), p))
		} else {
			out = append(out, fmt.Sprintf("%d on %s", len(cs[p]), p))
		}
	}
	return strings.Join(out, ", ")
}

// Summary lists the distributions of one set's closures that are not on
// every platform at the same version ("differs by platform: frozenlist:
// linux/amd64 1.4.1, linux/arm64 -"), or says they all are.
func Summary(cs Closures) string {
	plats := slices.Sorted(maps.Keys(cs))
	ver := byName(cs)
	var diff []string
	for _, n := range slices.Sorted(maps.Keys(ver)) {
		var per []string
		same := len(ver[n]) == len(plats)
		first := ""
		for _, p := range plats {
			v := "-"
			if w, ok := ver[n][p]; ok {
				v = w.version
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

func shortHex(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
