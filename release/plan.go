package release

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/sync/errgroup"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/registry"
)

// InputsDigester computes the digest of every input of a set's build (the
// value build writes into the dev.imagectl.inputs.digest label). The build
// package provides the real one.
type InputsDigester interface {
	InputsDigest(set imagespec.Set) (string, error)
}

// DigestFunc adapts a function to InputsDigester.
type DigestFunc func(imagespec.Set) (string, error)

// InputsDigest calls f.
func (f DigestFunc) InputsDigest(s imagespec.Set) (string, error) { return f(s) }

// Kind classifies why an entry needs work.
type Kind string

// Reasons, most specific first. A plan entry may carry several.
const (
	KindNotPublished  Kind = "not published yet"
	KindNewRay        Kind = "new Ray release"
	KindNewCodeServer Kind = "new code-server release"
	KindBaseRebuilt   Kind = "base rebuilt upstream"
	KindToolsRebuilt  Kind = "tools image rebuilt"
	KindExtensionBump Kind = "extension bump"
	KindComponentBump Kind = "component bump"
	KindPythonDep     Kind = "python dependency bump"
	KindDefinition    Kind = "definition change"
	KindInputs        Kind = "inputs digest differs"
	KindTagMissing    Kind = "immutable tag missing"
	KindFloatingStale Kind = "floating tag behind"
)

// Reason is one cause, with a human detail such as "ms-python.python
// 2025.10.0 -> 2025.12.0".
type Reason struct {
	Kind   Kind   `json:"kind"`
	Detail string `json:"detail,omitempty"`
}

func (r Reason) String() string {
	if r.Detail == "" {
		return string(r.Kind)
	}
	return string(r.Kind) + ": " + r.Detail
}

// Action is what release does for an entry.
type Action string

const (
	// ActionBuild builds, pushes by digest, signs, verifies and tags.
	ActionBuild Action = "build"
	// ActionPromote only verifies the published versioned image and moves
	// floating tags that lag behind it.
	ActionPromote Action = "promote"
)

// Entry is one set that needs work.
type Entry struct {
	Name    string   `json:"name"`
	Action  Action   `json:"action"`
	Reasons []Reason `json:"reasons"`
	// InputsDigest is the digest the new build will carry.
	InputsDigest string `json:"inputsDigest"`
	// Versioned is the first immutable tag, Immutable the other immutable
	// tags; Floating the tags this entry owns.
	Versioned string   `json:"versioned"`
	Immutable []string `json:"immutable,omitempty"`
	Floating  []string `json:"floating,omitempty"`
	// Published is the digest the versioned tag names today, if any.
	Published string `json:"published,omitempty"`
	// Blocked says why release will refuse this entry (the versioned tag
	// already holds a different build and is never overwritten).
	Blocked string        `json:"blocked,omitempty"`
	Set     imagespec.Set `json:"set"`
}

// Plan is the outcome: Entries need work, UpToDate names the others.
type Plan struct {
	Repository string   `json:"repository"`
	Entries    []Entry  `json:"entries"`
	UpToDate   []string `json:"upToDate"`
	// current maps each up-to-date entry to the digest its versioned tag
	// names, versioned to that tag.
	current   map[string]string
	versioned map[string]string
}

// Only keeps the entries named (entry names, <code-server>-ray<ray>-py<python>,
// or their versioned tags). Naming an up-to-date entry is fine (it has nothing
// to do); naming an unknown one is an error listing the known names.
func (p *Plan) Only(names []string) (*Plan, error) {
	if len(names) == 0 {
		return p, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := &Plan{Repository: p.Repository, Entries: []Entry{}, UpToDate: []string{}, current: map[string]string{}, versioned: map[string]string{}}
	for _, e := range p.Entries {
		if want[e.Name] || want[e.Versioned] {
			out.Entries = append(out.Entries, e)
			delete(want, e.Name)
			delete(want, e.Versioned)
		}
	}
	for _, n := range p.UpToDate {
		v := p.versioned[n]
		if want[n] || (v != "" && want[v]) {
			out.UpToDate = append(out.UpToDate, n)
			out.current[n] = p.current[n]
			out.versioned[n] = v
			delete(want, n)
			delete(want, v)
		}
	}
	if len(want) > 0 {
		var unknown, known []string
		for n := range want {
			unknown = append(unknown, n)
		}
		for _, e := range p.Entries {
			known = append(known, e.Name)
		}
		known = append(known, p.UpToDate...)
		sort.Strings(unknown)
		sort.Strings(known)
		return nil, fmt.Errorf("unknown entries %s; the matrix has: %s", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return out, nil
}

// NeedsBuild reports whether an entry must be built (not only promoted).
func (p *Plan) NeedsBuild() bool {
	for _, e := range p.Entries {
		if e.Action == ActionBuild {
			return true
		}
	}
	return false
}

// Empty reports whether nothing needs to be done.
func (p *Plan) Empty() bool { return len(p.Entries) == 0 }

// Planner compares targets (their inputs digests computed by Targets) with
// what a repository publishes.
type Planner struct {
	reg      *registry.Registry
	repo     name.Repository
	parallel int
}

// PlanOption configures a Planner.
type PlanOption func(*Planner)

// WithParallelism bounds concurrent registry reads (default 8).
func WithParallelism(n int) PlanOption {
	return func(p *Planner) {
		if n > 0 {
			p.parallel = n
		}
	}
}

// NewPlanner returns a Planner reading repo through reg.
func NewPlanner(reg *registry.Registry, repo name.Repository, opts ...PlanOption) *Planner {
	p := &Planner{reg: reg, repo: repo, parallel: 8}
	for _, o := range opts {
		o(p)
	}
	return p
}

type observed struct {
	inputs    string
	versioned *registry.Published
	immutable map[string]string   // tag -> digest, for Target.Immutable ("" when absent)
	floating  map[string]string   // tag -> digest ("" when absent)
	previous  *registry.Published // image at the first existing floating tag, when versioned is absent
}

// Plan compares every target with the repository. Targets should already have
// their floating tags resolved with OwnFloating.
//
// An entry is built when its versioned tag exists and names an image whose
// inputs label equals the fresh inputs digest: the versioned tag carries the
// digest's first 12 hex digits, so its existence alone already says "these
// inputs were published", and the label check guards against a prefix
// collision or another tag scheme. It is up to date when, in addition, every
// other immutable tag and every floating tag it owns names that image;
// otherwise it is promoted (verify, write the missing immutable tags, move
// the lagging floating tags). The versioned tag, not a floating one, is the
// test because it is the one that can never move: a floating tag may lag
// after a promotion failed, which is exactly the promote case.
//
// Per target it costs the versioned tag's manifest and config (three GETs)
// plus one HEAD per other immutable tag and per owned floating tag; a target
// whose inputs were not published yet instead reads its first existing
// floating tag (the combination tag, the previous build of this line) to
// explain what changed.
func (p *Planner) Plan(ctx context.Context, targets []Target) (*Plan, error) {
	obs := make([]observed, len(targets))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.parallel)
	for i := range targets {
		g.Go(func() error {
			o, err := p.observe(gctx, targets[i])
			if err != nil {
				return fmt.Errorf("%s: %w", targets[i].Name(), err)
			}
			obs[i] = o
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	publishedRay := map[string]bool{}
	publishedCS := map[string]bool{}
	for _, o := range obs {
		for _, pub := range []*registry.Published{o.versioned, o.previous} {
			if pub != nil && pub.Lock != nil {
				publishedRay[pub.Lock.Ray] = true
				publishedCS[pub.Lock.CodeServer.Version] = true
			}
		}
	}
	plan := &Plan{Repository: p.repo.String(), Entries: []Entry{}, UpToDate: []string{}, current: map[string]string{}, versioned: map[string]string{}}
	for i, t := range targets {
		o := obs[i]
		e := Entry{Name: t.Name(), InputsDigest: o.inputs, Versioned: t.Versioned, Immutable: t.Immutable, Floating: t.Floating, Set: t.Set}
		switch {
		case o.versioned != nil && o.versioned.Inputs == o.inputs:
			e.Published = o.versioned.Digest.String()
			e.checkTags(t, o)
		case o.versioned != nil:
			e.Published = o.versioned.Digest.String()
			e.Action = ActionBuild
			e.Reasons = explain(o.versioned, t.Set)
			e.Blocked = fmt.Sprintf("versioned tag %s already names %s built from inputs %s, not %s; versioned tags are never overwritten (the tag's {{.Inputs}} prefix collides, or the image was published by another tag scheme)",
				t.Versioned, short(e.Published), orNone(short(o.versioned.Inputs)), short(o.inputs))
		case o.previous != nil && o.previous.Lock != nil:
			e.Action = ActionBuild
			e.Reasons = explain(o.previous, t.Set)
		default:
			e.Action = ActionBuild
			switch {
			case len(publishedRay) == 0:
				e.Reasons = []Reason{{KindNotPublished, t.Versioned}}
			case !publishedRay[t.Set.Ray]:
				e.Reasons = []Reason{{KindNewRay, "ray " + t.Set.Ray}}
			case !publishedCS[t.Set.CodeServer.Version]:
				e.Reasons = []Reason{{KindNewCodeServer, "code-server " + t.Set.CodeServer.Version}}
			default:
				e.Reasons = []Reason{{KindNotPublished, t.Versioned}}
			}
		}
		if e.Action == "" {
			plan.UpToDate = append(plan.UpToDate, e.Name)
			plan.current[e.Name] = e.Published
			plan.versioned[e.Name] = e.Versioned
			continue
		}
		plan.Entries = append(plan.Entries, e)
	}
	return plan, nil
}

// checkTags makes e, published with the target's inputs, a promotion when
// one of its immutable or floating tags does not name it, blocked when an
// immutable tag names another image.
func (e *Entry) checkTags(t Target, o observed) {
	for _, im := range t.Immutable {
		switch have := o.immutable[im]; have {
		case e.Published:
		case "":
			e.Action = ActionPromote
			e.Reasons = append(e.Reasons, Reason{KindTagMissing, im})
		default:
			e.Action = ActionPromote
			e.Reasons = append(e.Reasons, Reason{KindTagMissing, fmt.Sprintf("%s names %s, want %s", im, short(have), short(e.Published))})
			e.Blocked = fmt.Sprintf("immutable tag %s already names %s, not %s; immutable tags are never overwritten", im, short(have), short(e.Published))
		}
	}
	for _, f := range t.Floating {
		if have := o.floating[f]; have != e.Published {
			e.Action = ActionPromote
			e.Reasons = append(e.Reasons, Reason{KindFloatingStale, fmt.Sprintf("%s -> %s, want %s", f, orNone(have), short(e.Published))})
		}
	}
}

func (p *Planner) observe(ctx context.Context, t Target) (observed, error) {
	o := observed{inputs: t.Inputs}
	if o.inputs == "" {
		return o, fmt.Errorf("no inputs digest (Targets computes it)")
	}
	if _, err := name.NewTag("example.com/x:"+t.Versioned, name.StrictValidation); err != nil {
		return o, fmt.Errorf("versioned tag %q: %w", t.Versioned, err)
	}
	// repo.Tag keeps the repository's options (an insecure registry).
	vt := p.repo.Tag(t.Versioned)
	var err error
	if o.versioned, err = p.reg.Inspect(ctx, vt); err != nil {
		return o, err
	}
	o.immutable = map[string]string{}
	for _, im := range t.Immutable {
		if _, err := name.NewTag("example.com/x:"+im, name.StrictValidation); err != nil {
			return o, fmt.Errorf("immutable tag %q: %w", im, err)
		}
		if o.versioned == nil {
			continue
		}
		d, err := p.reg.Head(ctx, p.repo.Tag(im))
		if err != nil {
			return o, err
		}
		if d != nil {
			o.immutable[im] = d.Digest.String()
		}
	}
	o.floating = map[string]string{}
	for _, f := range t.Floating {
		if _, err := name.NewTag("example.com/x:"+f, name.StrictValidation); err != nil {
			return o, fmt.Errorf("floating tag %q: %w", f, err)
		}
		ft := p.repo.Tag(f)
		if o.versioned == nil {
			// Not built yet: the image a floating tag names now is the
			// previous build of this line, which explains what changed.
			if o.previous == nil {
				pub, err := p.reg.Inspect(ctx, ft)
				if err != nil {
					return o, err
				}
				o.previous = pub
			}
			continue
		}
		d, err := p.reg.Head(ctx, ft)
		if err != nil {
			return o, err
		}
		if d != nil {
			o.floating[f] = d.Digest.String()
		}
	}
	return o, nil
}

// explain compares the lock recorded in a published image with the new set.
func explain(pub *registry.Published, s imagespec.Set) []Reason {
	if pub.Lock == nil {
		return []Reason{{KindInputs, fmt.Sprintf("%s -> new inputs (no readable lock label on %s)", orNone(short(pub.Inputs)), short(pub.Digest.String()))}}
	}
	rs := diffSets(*pub.Lock, s)
	if len(rs) == 0 {
		rs = []Reason{{KindDefinition, "same versions and files; the image definition or imagectl version changed"}}
	}
	return rs
}

func diffSets(old, s imagespec.Set) []Reason {
	var rs []Reason
	if old.Ray != s.Ray {
		rs = append(rs, Reason{KindNewRay, fmt.Sprintf("ray %s -> %s", old.Ray, s.Ray)})
	}
	if old.CodeServer.Version != s.CodeServer.Version {
		rs = append(rs, Reason{KindNewCodeServer, fmt.Sprintf("code-server %s -> %s", old.CodeServer.Version, s.CodeServer.Version)})
	} else {
		var base []string
		for _, pl := range unionKeys(s.CodeServer.Platforms, old.CodeServer.Platforms) {
			if a, b := old.CodeServer.Platforms[pl], s.CodeServer.Platforms[pl]; a != b {
				base = append(base, fmt.Sprintf("%s %s -> %s", pl, orNone(short(a)), orNone(short(b))))
			}
		}
		if len(base) == 0 && old.CodeServer.IndexDigest != s.CodeServer.IndexDigest {
			base = append(base, fmt.Sprintf("index %s -> %s", orNone(short(old.CodeServer.IndexDigest)), orNone(short(s.CodeServer.IndexDigest))))
		}
		if len(base) > 0 || old.CodeServer.Base != s.CodeServer.Base {
			if old.CodeServer.Base != s.CodeServer.Base {
				base = append([]string{fmt.Sprintf("%s -> %s", old.CodeServer.Base, s.CodeServer.Base)}, base...)
			}
			rs = append(rs, Reason{KindBaseRebuilt, s.CodeServer.Base + ": " + strings.Join(base, ", ")})
		}
	}
	if r, ok := diffTools(old.ToolsImage, s.ToolsImage); ok {
		rs = append(rs, r)
	}
	if old.Python != s.Python {
		rs = append(rs, Reason{KindComponentBump, fmt.Sprintf("python %s -> %s", old.Python, s.Python)})
	}
	if old.Debugpy != s.Debugpy {
		rs = append(rs, Reason{KindComponentBump, fmt.Sprintf("debugpy %s -> %s", old.Debugpy, s.Debugpy)})
	}
	if r, ok := diffRuntime(old.PythonRuntime, s.PythonRuntime); ok {
		rs = append(rs, r)
	}
	rs = append(rs, diffPythonLocks(old, s)...)
	oldExt := map[string]imagespec.Extension{}
	for _, e := range old.Extensions {
		oldExt[strings.ToLower(e.ID)] = e
	}
	newIDs := map[string]bool{}
	for _, e := range s.Extensions {
		id := strings.ToLower(e.ID)
		newIDs[id] = true
		o, ok := oldExt[id]
		switch {
		case !ok:
			rs = append(rs, Reason{KindExtensionBump, fmt.Sprintf("%s %s added", e.ID, e.Version)})
		case o.Version != e.Version:
			rs = append(rs, Reason{KindExtensionBump, fmt.Sprintf("%s %s -> %s", e.ID, o.Version, e.Version)})
		default:
			for _, pl := range unionKeys(e.Files, o.Files) {
				if o.Files[pl] != e.Files[pl] {
					rs = append(rs, Reason{KindExtensionBump, fmt.Sprintf("%s %s: %s file changed (%s -> %s)", e.ID, e.Version, pl,
						orNone(short(o.Files[pl].SHA256)), orNone(short(e.Files[pl].SHA256)))})
				}
			}
		}
	}
	for _, e := range old.Extensions {
		if !newIDs[strings.ToLower(e.ID)] {
			rs = append(rs, Reason{KindExtensionBump, fmt.Sprintf("%s %s removed", e.ID, e.Version)})
		}
	}
	if strings.Join(old.Platforms, ",") != strings.Join(s.Platforms, ",") {
		rs = append(rs, Reason{KindDefinition, fmt.Sprintf("platforms %v -> %v", old.Platforms, s.Platforms)})
	}
	if strings.Join(old.RayExtras, ",") != strings.Join(s.RayExtras, ",") {
		rs = append(rs, Reason{KindDefinition, fmt.Sprintf("ray extras %v -> %v", old.RayExtras, s.RayExtras)})
	}
	return rs
}

// diffTools explains a change of the tools image reference between the
// published lock and the new set: the same name with another digest is the
// tag moved upstream (tools image rebuilt); anything else is a definition
// change.
func diffTools(old, cur string) (Reason, bool) {
	if old == cur {
		return Reason{}, false
	}
	oldName, oldDigest := splitDigest(old)
	curName, curDigest := splitDigest(cur)
	switch {
	case old == "":
		return Reason{KindDefinition, fmt.Sprintf("tools image %s (the published lock records none)", cur)}, true
	case oldName == curName && oldDigest != "" && curDigest != "":
		return Reason{KindToolsRebuilt, fmt.Sprintf("%s: %s -> %s", curName, short(oldDigest), short(curDigest))}, true
	case oldName == curName && curDigest != "":
		return Reason{KindDefinition, fmt.Sprintf("tools image %s now pinned to %s", curName, short(curDigest))}, true
	}
	return Reason{KindDefinition, fmt.Sprintf("tools image %s -> %s", old, cur)}, true
}

// diffRuntime explains a change of the python-build-standalone runtime
// between the published lock and the new set: another release or CPython
// patch (refresh proposes newer releases), or the same one with other
// tarballs.
func diffRuntime(old, cur *imagespec.PythonRuntime) (Reason, bool) {
	desc := func(r *imagespec.PythonRuntime) string {
		if r == nil {
			return "(none)"
		}
		return fmt.Sprintf("%s (python-build-standalone %s)", r.Version, r.Release)
	}
	switch {
	case old == nil && cur == nil:
		return Reason{}, false
	case old == nil || cur == nil || old.Version != cur.Version || old.Release != cur.Release:
		return Reason{KindComponentBump, "python runtime " + desc(old) + " -> " + desc(cur)}, true
	}
	var changed []string
	for _, pl := range unionKeys(old.Files, cur.Files) {
		if old.Files[pl] != cur.Files[pl] {
			changed = append(changed, fmt.Sprintf("%s %s -> %s", pl, orNone(shortHex(old.Files[pl].SHA256)), orNone(shortHex(cur.Files[pl].SHA256))))
		}
	}
	if len(changed) == 0 {
		return Reason{}, false
	}
	return Reason{KindComponentBump, "python runtime " + desc(cur) + " tarballs changed: " + strings.Join(changed, ", ")}, true
}

// splitDigest splits a reference pinned by digest (name[:tag]@digest) into
// its name with the tag and its digest; anything else (no digest, or not a
// reference) is all name. go-containerregistry's name.Digest keeps no tag,
// so the name is the reference without "@digest".
func splitDigest(ref string) (string, string) {
	d, err := name.NewDigest(ref)
	if err != nil {
		return ref, ""
	}
	return strings.TrimSuffix(ref, "@"+d.DigestStr()), d.DigestStr()
}

// unionKeys returns the sorted union of the maps' keys.
func unionKeys[V any](ms ...map[string]V) []string {
	u := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			u[k] = true
		}
	}
	return slices.Sorted(maps.Keys(u))
}

// short abbreviates a digest for messages: sha256:0123456789ab.
func short(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
