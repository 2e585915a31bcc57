package resolve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
)

// Explanation says why each chosen version won and why each newer candidate
// lost.
type Explanation struct {
	Request   Request    `json:"request"`
	Decisions []Decision `json:"decisions"`
	// Notes are facts worth knowing that did not change the outcome, e.g.
	// unknown base digests or extension pack members left out.
	Notes []string `json:"notes,omitempty"`
}

// Decision is the choice made for one component.
type Decision struct {
	// Component is "ray", "python", "debugpy", "code-server" or an extension id.
	Component string `json:"component"`
	Chosen    string `json:"chosen"`
	Reason    string `json:"reason"`
	// Rejected are the newer candidates that lost, newest first.
	Rejected []Rejection `json:"rejected,omitempty"`
}

// Rejection is one candidate that lost and why.
type Rejection struct {
	Version string `json:"version"`
	Reason  string `json:"reason"`
}

func (e *Explanation) add(d Decision) { e.Decisions = append(e.Decisions, d) }

// String renders the explanation for a person, e.g.
//
//	ms-python.python 2025.10.0 chosen: newest release from marketplace ...
//	  ms-python.python 2025.22.0 rejected: engines ^1.104.0 not satisfied by VS Code 1.101.2
func (e *Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Resolving Ray %s for %s", e.Request.Ray, strings.Join(e.Request.Platforms, ", "))
	if e.Request.CodeServer != "" {
		fmt.Fprintf(&b, ", code-server %s", e.Request.CodeServer)
	}
	if e.Request.Python != "" {
		fmt.Fprintf(&b, ", Python %s", e.Request.Python)
	}
	b.WriteString(":\n")
	for _, d := range e.Decisions {
		fmt.Fprintf(&b, "  %s %s chosen: %s\n", d.Component, d.Chosen, d.Reason)
		for _, r := range d.Rejected {
			fmt.Fprintf(&b, "    %s %s rejected: %s\n", d.Component, r.Version, r.Reason)
		}
	}
	if len(e.Notes) > 0 {
		b.WriteString("Notes:\n")
		for _, n := range e.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	return b.String()
}

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
	cat, err = normalized(cat)
	if err != nil {
		return nil, nil, err
	}
	c := cfg.Components.Ray
	var rays []string
	for _, p := range cat.Ray {
		ok, err := satisfies(c.Constraint, p.Version, false)
		if err != nil || !ok || p.Yanked || p.PreRelease || catalog.IsPreRelease(p.Version) || isExcluded(p.Version, c.Exclude) {
			continue
		}
		rays = append(rays, p.Version)
	}
	slices.SortFunc(rays, func(a, b string) int { return catalog.CompareVersions(b, a) })
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
	for _, v := range rays {
		set, _, err := resolveNormalized(cfg, cat, Request{Ray: v, Platforms: platforms})
		if err != nil {
			skipped = append(skipped, Skipped{Ray: v, Reason: err.Error()})
			continue
		}
		sets = append(sets, set)
	}
	return sets, skipped, nil
}
