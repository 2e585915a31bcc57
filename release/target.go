package release

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
)

// Target is one buildable set with its tags split by promise.
type Target struct {
	Set resolve.Set
	// Versioned is the immutable tag; it names the entry (--only).
	Versioned string
	// Floating are the movable tags rendered for the set, most specific first.
	Floating []string
}

// Name is the entry name: the versioned tag.
func (t Target) Name() string { return t.Versioned }

// Targets pairs each set with the tag templates of cfg: set.Tags[i] is the
// rendering of cfg.Tags[i], the first is the versioned tag and the others are
// versioned or floating as matrix.yaml marks them. A set whose rendered tags do
// not line up with the templates, or whose first template is floating, is an
// error: plan cannot tell which tags are promises that may never move.
func Targets(cfg *matrix.Config, sets []resolve.Set) ([]Target, error) {
	if len(cfg.Tags) == 0 {
		return nil, fmt.Errorf("matrix: no tag templates (tags:), cannot name what to publish")
	}
	if cfg.Tags[0].Floating {
		return nil, fmt.Errorf("matrix: tags[0] %q is floating; the first tag must be the versioned, immutable one", cfg.Tags[0].Template)
	}
	out := make([]Target, 0, len(sets))
	for i, s := range sets {
		if len(s.Tags) != len(cfg.Tags) {
			return nil, fmt.Errorf("set %d (ray %s, code-server %s): %d rendered tags %v for %d tag templates; cannot tell floating from versioned",
				i, s.Ray, s.CodeServer.Version, len(s.Tags), s.Tags, len(cfg.Tags))
		}
		t := Target{Set: s, Versioned: s.Tags[0]}
		for j := 1; j < len(s.Tags); j++ {
			if cfg.Tags[j].Floating {
				t.Floating = append(t.Floating, s.Tags[j])
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// OwnFloating resolves floating tags rendered by several targets: each goes to
// the target with the highest (Ray, code-server, Python) versions, and is
// removed from the others, so that one run never moves a tag twice. Tags keep
// their template order and "latest" is always written last. Two targets with
// the same versioned tag are an error.
func OwnFloating(ts []Target) ([]Target, error) {
	owner := map[string]int{}
	seen := map[string]int{}
	for i, t := range ts {
		if t.Versioned == "" {
			return nil, fmt.Errorf("set %d (ray %s): empty versioned tag", i, t.Set.Ray)
		}
		if j, dup := seen[t.Versioned]; dup {
			return nil, fmt.Errorf("sets %d and %d both render the versioned tag %q; it must be unique per set", j, i, t.Versioned)
		}
		seen[t.Versioned] = i
		for _, f := range t.Floating {
			if j, ok := owner[f]; !ok || newer(t.Set, ts[j].Set) {
				owner[f] = i
			}
		}
	}
	out := make([]Target, len(ts))
	for i, t := range ts {
		nt := t
		nt.Floating = nil
		for _, f := range t.Floating {
			if owner[f] == i && f != t.Versioned {
				nt.Floating = append(nt.Floating, f)
			}
		}
		sort.SliceStable(nt.Floating, func(a, b int) bool {
			return nt.Floating[a] != "latest" && nt.Floating[b] == "latest"
		})
		out[i] = nt
	}
	return out, nil
}

// newer reports whether a sorts after b by Ray, code-server, then Python.
func newer(a, b resolve.Set) bool {
	for _, p := range [][2]string{{a.Ray, b.Ray}, {a.CodeServer.Version, b.CodeServer.Version}, {a.Python, b.Python}} {
		if c := compareVersions(p[0], p[1]); c != 0 {
			return c > 0
		}
	}
	return false
}

func compareVersions(a, b string) int {
	va, ea := semver.NewVersion(a)
	vb, eb := semver.NewVersion(b)
	if ea == nil && eb == nil {
		return va.Compare(vb)
	}
	return strings.Compare(a, b)
}
