package release

import (
	"fmt"
	"sort"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
)

// Target is one buildable set with its tags split by promise.
type Target struct {
	// Set has its Tags rendered (Targets).
	Set imagespec.Set
	// Inputs is the set's inputs digest, computed once by Targets; plan and
	// release use it from here.
	Inputs string
	// Versioned is the first immutable tag; it carries the inputs digest, so
	// the same inputs always give the same versioned tag and new inputs a new
	// one. Plan reads the image it names.
	Versioned string
	// Immutable are the other immutable tags (matrix.yaml templates after the
	// first that are not floating), in template order: release writes them
	// like Versioned, and never moves them. build --push writes the same
	// (imagespec.Tags.Immutable).
	Immutable []string
	// Floating are the movable tags rendered for the set, most specific first.
	Floating []string
}

// Name is the entry name: the combination
// <code-server>-ray<ray>-py<python>, which does not change when only the
// inputs do (--only accepts it or the versioned tag).
func (t Target) Name() string {
	return t.Set.CodeServer.Version + "-ray" + t.Set.Ray + "-py" + t.Set.Python
}

// Targets renders the tags of every set with resolve.RenderTags, from the
// set's inputs digest as d computes it (the definition build uses), and
// splits them by promise with imagespec.Tags, as build does: the first is
// the versioned tag, the others are immutable or floating as matrix.yaml
// marks them. A first template that is floating is an error: plan could not
// tell which tag is the promise that may never move.
func Targets(cfg *matrix.Config, sets []imagespec.Set, d InputsDigester) ([]Target, error) {
	if len(cfg.Tags) == 0 {
		return nil, fmt.Errorf("matrix: no tag templates (tags:), cannot name what to publish")
	}
	if cfg.Tags[0].Floating {
		return nil, fmt.Errorf("matrix: tags[0] %q is floating; the first tag must be the versioned, immutable one", cfg.Tags[0].Template)
	}
	out := make([]Target, 0, len(sets))
	for _, s := range sets {
		in, err := d.InputsDigest(s)
		if err != nil {
			return nil, fmt.Errorf("ray %s, code-server %s: inputs digest: %w", s.Ray, s.CodeServer.Version, err)
		}
		tags, err := resolve.RenderTags(cfg, s, in)
		if err != nil {
			return nil, fmt.Errorf("ray %s, code-server %s: %w", s.Ray, s.CodeServer.Version, err)
		}
		s.Tags = tags.Names()
		t := Target{Set: s, Inputs: in, Versioned: tags.Versioned(), Floating: tags.Floating()}
		if im := tags.Immutable(); len(im) > 1 {
			t.Immutable = im[1:]
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
	names := map[string]int{}
	for i, t := range ts {
		if t.Versioned == "" {
			return nil, fmt.Errorf("set %d (ray %s): empty versioned tag", i, t.Set.Ray)
		}
		if j, dup := seen[t.Versioned]; dup {
			return nil, fmt.Errorf("sets %d and %d both render the versioned tag %q; it must be unique per set", j, i, t.Versioned)
		}
		seen[t.Versioned] = i
		if j, dup := names[t.Name()]; dup {
			return nil, fmt.Errorf("sets %d and %d are both the combination %s", j, i, t.Name())
		}
		names[t.Name()] = i
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

// newer reports whether a sorts after b by Ray (PEP 440), code-server
// (semver), then Python (CPython minor).
func newer(a, b imagespec.Set) bool {
	for _, c := range []int{
		catalog.ComparePythonVersions(a.Ray, b.Ray),
		catalog.CompareVersions(a.CodeServer.Version, b.CodeServer.Version),
		catalog.ComparePythons(a.Python, b.Python),
	} {
		if c != 0 {
			return c > 0
		}
	}
	return false
}
