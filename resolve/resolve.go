package resolve

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/vscode/engine"
)

// Request asks for one set. Ray is required; the rest narrow the choice.
type Request struct {
	// Ray is the exact Ray version, e.g. 2.46.0.
	Ray string `json:"ray"`
	// CodeServer pins code-server; empty means the newest compatible.
	CodeServer string `json:"codeServer,omitempty"`
	// Python pins the CPython minor version ("3.11"); empty applies the policy.
	Python string `json:"python,omitempty"`
	// Platforms are OCI platforms; empty means matrix.yaml platforms.
	Platforms []string `json:"platforms,omitempty"`
}

// UnknownRayError is returned for a Ray version the catalog does not know.
type UnknownRayError struct {
	Version string
	Known   []string // ascending
}

func (e *UnknownRayError) Error() string {
	known := "none (run imagectl matrix refresh)"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("unknown Ray version %q; known Ray versions: %s", e.Version, known)
}

// ConflictError says which component has no acceptable version and why each
// candidate was rejected.
type ConflictError struct {
	Component string
	Context   string // e.g. "Ray 2.46.0 on linux/amd64, linux/arm64"
	Rejected  []Rejection
	Detail    string
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no %s version fits %s", e.Component, e.Context)
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	const max = 8
	for i, r := range e.Rejected {
		if i == max {
			fmt.Fprintf(&b, "; and %d more", len(e.Rejected)-max)
			break
		}
		fmt.Fprintf(&b, "; %s %s", r.Version, r.Reason)
	}
	return b.String()
}

type resolver struct {
	cfg       *matrix.Config
	cat       *catalog.Catalog
	platforms []string
	ctx       string
}

// Resolve picks the newest compatible set for req from cfg and cat, and
// explains the choice. It never touches the network.
func Resolve(cfg *matrix.Config, cat *catalog.Catalog, req Request) (imagespec.Set, *Explanation, error) {
	norm, err := normalized(cat)
	if err != nil {
		return imagespec.Set{}, nil, err
	}
	return resolveNormalized(cfg, norm, req)
}

// normalized returns a deep copy of cat in catalog order (newest first), so
// the result never depends on the order of the input and cat is untouched.
func normalized(cat *catalog.Catalog) (*catalog.Catalog, error) {
	b, err := json.Marshal(cat)
	if err != nil {
		return nil, fmt.Errorf("copying catalog: %w", err)
	}
	var c catalog.Catalog
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("copying catalog: %w", err)
	}
	catalog.Normalize(&c)
	return &c, nil
}

func resolveNormalized(cfg *matrix.Config, cat *catalog.Catalog, req Request) (imagespec.Set, *Explanation, error) {
	platforms, err := normalizePlatforms(req.Platforms, cfg.Platforms)
	if err != nil {
		return imagespec.Set{}, nil, err
	}
	req.Platforms = platforms
	r := &resolver{cfg: cfg, cat: cat, platforms: platforms}
	ex := &Explanation{Request: req}

	ray, err := r.ray(req.Ray, ex)
	if err != nil {
		return imagespec.Set{}, ex, err
	}
	r.ctx = fmt.Sprintf("Ray %s on %s", ray.Version, strings.Join(platforms, ", "))
	rayPythons, python, err := r.python(ray, req.Python, ex)
	if err != nil {
		return imagespec.Set{}, ex, err
	}
	debugpy, err := r.debugpy(python, ex)
	if err != nil {
		return imagespec.Set{}, ex, err
	}
	cs, exts, err := r.codeServerAndExtensions(req.CodeServer, ex)
	if err != nil {
		return imagespec.Set{}, ex, err
	}

	locks, err := r.pythonLocks(ray.Version, debugpy, python, ex)
	if err != nil {
		return imagespec.Set{}, ex, err
	}

	set := imagespec.Set{
		ToolsImage:    r.toolsImage(ex),
		PythonRuntime: r.pythonRuntime(python, ex),
		PythonLocks:   locks,
		CodeServer:    cs,
		Ray:           ray.Version,
		Python:        python,
		RayPythons:    rayPythons,
		RayExtras:     slices.Clone(cfg.Components.Ray.Extras),
		Debugpy:       debugpy,
		Platforms:     platforms,
		Extensions:    exts,
	}
	return set, ex, nil
}

// toolsImage pins matrix.yaml's build.toolsImage with the digest the catalog
// records for exactly that reference. A reference that already carries a
// digest is used as is.
func (r *resolver) toolsImage(ex *Explanation) string {
	ref := r.cfg.Build.ToolsImage
	if ref == "" || strings.Contains(ref, "@") {
		return ref
	}
	t := r.cat.ToolsImage
	switch {
	case t == nil:
		ex.Notes = append(ex.Notes, fmt.Sprintf("tools image %s: digest unknown, the catalog records none; run imagectl matrix refresh to pin it (until then builds use whatever the tag names)", ref))
	case t.Ref != ref:
		ex.Notes = append(ex.Notes, fmt.Sprintf("tools image %s: digest unknown, the catalog records %s (matrix.yaml build.toolsImage changed since); run imagectl matrix refresh to pin it", ref, t.Ref))
	case t.Digest == "":
		ex.Notes = append(ex.Notes, fmt.Sprintf("tools image %s: digest unknown in the catalog; run imagectl matrix refresh to pin it (until then builds use whatever the tag names)", ref))
	default:
		return ref + "@" + t.Digest
	}
	return ref
}

// pythonRuntime returns the catalog's python-build-standalone runtime of
// python for matrix.yaml's build.standalone, when build.pythonRuntime is
// standalone; otherwise, or when the catalog has none, nil (with a note).
func (r *resolver) pythonRuntime(python string, ex *Explanation) *imagespec.PythonRuntime {
	if r.cfg.Build.PythonRuntime != matrix.PythonRuntimeStandalone {
		return nil
	}
	st := r.cfg.Build.Standalone
	var other []string
	for _, rt := range r.cat.PythonRuntimes {
		if rt.Python != python {
			continue
		}
		if rt.Repository != st.Repository || rt.Release != st.Release || rt.Flavor != st.Flavor {
			other = append(other, fmt.Sprintf("%s release %s (%s)", rt.Repository, rt.Release, rt.Flavor))
			continue
		}
		out := &imagespec.PythonRuntime{Version: rt.Version, Release: rt.Release, Files: map[string]imagespec.RuntimeFile{}}
		for p, f := range rt.Files {
			out.Files[p] = imagespec.RuntimeFile{URL: f.URL, SHA256: f.SHA256}
		}
		ex.add(Decision{Component: "python runtime", Chosen: rt.Version,
			Reason: fmt.Sprintf("python-build-standalone %s of %s release %s, as catalog.json locks it (sha256 linux/amd64 %s, linux/arm64 %s)",
				rt.Flavor, rt.Repository, rt.Release, short(rt.Files["linux/amd64"].SHA256), short(rt.Files["linux/arm64"].SHA256))})
		return out
	}
	note := fmt.Sprintf("python runtime: the catalog records no python-build-standalone runtime of Python %s for %s release %s (%s)", python, st.Repository, st.Release, st.Flavor)
	if len(other) > 0 {
		note += "; it records " + strings.Join(other, ", ") + " (matrix.yaml build.standalone changed since)"
	}
	ex.Notes = append(ex.Notes, note+"; run imagectl matrix refresh to lock it (a build fails until then)")
	return nil
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

func normalizePlatforms(req, def []string) ([]string, error) {
	if len(req) == 0 {
		req = def
	}
	if len(req) == 0 {
		return nil, errors.New("no platforms requested and none in matrix.yaml")
	}
	out := make([]string, 0, len(req))
	for _, p := range req {
		p = strings.TrimSpace(p)
		if !slices.Contains(imagespec.Platforms(), p) {
			return nil, fmt.Errorf("unsupported platform %q (want %s)", p, strings.Join(matrix.SupportedPlatforms(), " or "))
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func isExcluded(v string, excl []string) bool {
	for _, x := range excl {
		if catalog.CompareVersions(v, x) == 0 {
			return true
		}
		if a, err := catalog.ParseVersion(v); err == nil {
			if b, err := catalog.ParseVersion(x); err == nil && a.Equal(b) && a.Metadata() == b.Metadata() {
				return true
			}
		}
	}
	return false
}

// satisfies checks v against a semver constraint. Pre-release versions are
// checked against the constraint as if they were releases when allowPre is
// set (Masterminds would otherwise reject them outright).
func satisfies(constraint, v string, allowPre bool) (bool, error) {
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return false, fmt.Errorf("bad constraint %q: %w", constraint, err)
	}
	sv, err := catalog.ParseVersion(v)
	if err != nil {
		return false, err
	}
	if allowPre && sv.Prerelease() != "" {
		rel, _ := sv.SetPrerelease("")
		return c.Check(&rel), nil
	}
	return c.Check(sv), nil
}

func (r *resolver) ray(want string, ex *Explanation) (catalog.PythonPackage, error) {
	var known []string
	var found *catalog.PythonPackage
	for i, p := range r.cat.Ray {
		known = append(known, p.Version)
		if p.Version == want || (catalog.CompareVersions(p.Version, want) == 0) {
			found = &r.cat.Ray[i]
		}
	}
	slices.SortFunc(known, catalog.CompareVersions)
	if want == "" {
		return catalog.PythonPackage{}, fmt.Errorf("no Ray version given; known Ray versions: %s", strings.Join(known, ", "))
	}
	if found == nil {
		return catalog.PythonPackage{}, &UnknownRayError{Version: want, Known: known}
	}
	c := r.cfg.Components.Ray
	ok, err := satisfies(c.Constraint, found.Version, false)
	switch {
	case err != nil:
		return catalog.PythonPackage{}, fmt.Errorf("Ray %s: %w", found.Version, err)
	case !ok:
		return catalog.PythonPackage{}, fmt.Errorf("Ray %s is outside matrix.yaml components.ray.constraint %q", found.Version, c.Constraint)
	case isExcluded(found.Version, c.Exclude):
		return catalog.PythonPackage{}, fmt.Errorf("Ray %s is excluded in matrix.yaml components.ray.exclude", found.Version)
	case found.Yanked:
		return catalog.PythonPackage{}, fmt.Errorf("Ray %s is yanked on PyPI", found.Version)
	}
	ex.add(Decision{Component: "ray", Chosen: found.Version,
		Reason: fmt.Sprintf("requested; satisfies %s", c.Constraint)})
	return *found, nil
}

func (r *resolver) python(ray catalog.PythonPackage, pin string, ex *Explanation) ([]string, string, error) {
	pol := r.cfg.Components.Python
	// Common set across requested platforms.
	var common []string
	all := map[string]bool{}
	for i, p := range r.platforms {
		ps := ray.Pythons[p]
		for _, v := range ps {
			all[v] = true
		}
		if i == 0 {
			common = slices.Clone(ps)
			continue
		}
		common = slices.DeleteFunc(common, func(v string) bool { return !slices.Contains(ps, v) })
	}
	slices.SortFunc(common, catalog.ComparePythons)
	common = slices.Compact(common)
	if len(common) == 0 {
		var per []string
		for _, p := range r.platforms {
			per = append(per, fmt.Sprintf("%s: [%s]", p, strings.Join(ray.Pythons[p], ", ")))
		}
		return nil, "", &ConflictError{Component: "Python", Context: r.ctx,
			Detail: fmt.Sprintf("Ray %s ships no CPython wheel common to every platform (%s)", ray.Version, strings.Join(per, "; "))}
	}
	candidates := make([]string, 0, len(all))
	for v := range all {
		candidates = append(candidates, v)
	}
	slices.SortFunc(candidates, func(a, b string) int { return catalog.ComparePythons(b, a) })

	if pin != "" && !slices.Contains(common, pin) {
		var have []string
		for _, p := range r.platforms {
			if slices.Contains(ray.Pythons[p], pin) {
				have = append(have, p)
			}
		}
		where := "none of the requested platforms"
		if len(have) > 0 {
			where = "only " + strings.Join(have, ", ")
		}
		return nil, "", &ConflictError{Component: "Python", Context: r.ctx,
			Detail: fmt.Sprintf("--python %s: Ray %s ships wheels for it on %s (common to all: %s)", pin, ray.Version, where, strings.Join(common, ", "))}
	}
	var rejected []Rejection
	for _, v := range candidates {
		reason := ""
		n, ok := catalog.PythonMinor(v)
		switch {
		case !ok:
			reason = "not a CPython 3.N version"
		case !slices.Contains(common, v):
			var missing []string
			for _, p := range r.platforms {
				if !slices.Contains(ray.Pythons[p], v) {
					missing = append(missing, p)
				}
			}
			reason = fmt.Sprintf("no Ray %s wheel for %s", ray.Version, strings.Join(missing, ", "))
		case pol.Max != "" && n > mustMinor(pol.Max):
			reason = fmt.Sprintf("above the matrix.yaml python max %s", pol.Max)
		case pol.Min != "" && n < mustMinor(pol.Min):
			reason = fmt.Sprintf("below the matrix.yaml python min %s", pol.Min)
		case pin != "" && v != pin:
			reason = fmt.Sprintf("not the requested --python %s", pin)
		}
		if reason == "" {
			why := fmt.Sprintf("highest CPython with Ray %s wheels on %s (common: %s)", ray.Version, strings.Join(r.platforms, " and "), strings.Join(common, ", "))
			if pin != "" {
				why = fmt.Sprintf("requested; Ray %s ships wheels for it on %s", ray.Version, strings.Join(r.platforms, " and "))
			}
			if pol.Max != "" {
				why += ", capped at " + pol.Max
			}
			ex.add(Decision{Component: "python", Chosen: v, Reason: why, Rejected: rejected})
			return common, v, nil
		}
		rejected = append(rejected, Rejection{Version: v, Reason: reason})
	}
	return nil, "", &ConflictError{Component: "Python", Context: r.ctx, Rejected: rejected}
}

func mustMinor(v string) int {
	n, _ := catalog.PythonMinor(v)
	return n
}

func (r *resolver) debugpy(python string, ex *Explanation) (string, error) {
	c := r.cfg.Components.Debugpy
	var rejected []Rejection
	for _, p := range r.cat.Debugpy { // newest first (catalog.Normalize)
		reason := ""
		ok, err := satisfies(c.Constraint, p.Version, false)
		switch {
		case err != nil:
			reason = err.Error()
		case p.Yanked:
			reason = "yanked on PyPI"
		case catalog.IsPreRelease(p.Version) || p.PreRelease:
			reason = "pre-release"
		case !ok:
			reason = fmt.Sprintf("does not satisfy %s", c.Constraint)
		case isExcluded(p.Version, c.Exclude):
			reason = "excluded in matrix.yaml components.debugpy.exclude"
		default:
			reason = r.wheelProblem(p, python)
		}
		if reason == "" {
			ex.add(Decision{Component: "debugpy", Chosen: p.Version,
				Reason:   fmt.Sprintf("newest satisfying %s, not yanked, with a wheel for CPython %s on %s", c.Constraint, python, strings.Join(r.platforms, " and ")),
				Rejected: rejected})
			return p.Version, nil
		}
		rejected = append(rejected, Rejection{Version: p.Version, Reason: reason})
	}
	return "", &ConflictError{Component: "debugpy", Context: r.ctx + " with Python " + python, Rejected: rejected}
}

// wheelProblem says why release p has no wheel usable by CPython py on every
// platform, or "" if it has one.
func (r *resolver) wheelProblem(p catalog.PythonPackage, py string) string {
	if p.RequiresPython != "" {
		ok, err := pythonSatisfies(p.RequiresPython, py)
		if err != nil {
			return err.Error()
		}
		if !ok {
			return fmt.Sprintf("requires-python %s excludes %s", p.RequiresPython, py)
		}
	}
	if len(p.Pythons["any"]) > 0 {
		return ""
	}
	var missing []string
	for _, pl := range r.platforms {
		if !slices.Contains(p.Pythons[pl], py) {
			missing = append(missing, pl)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("no wheel for CPython %s on %s", py, strings.Join(missing, ", "))
	}
	return ""
}

func (r *resolver) codeServerAndExtensions(pin string, ex *Explanation) (imagespec.CodeServer, []imagespec.Extension, error) {
	c := r.cfg.Components.CodeServer
	var rejected []Rejection
	var lastErr error
	for _, cs := range r.cat.CodeServer { // newest first
		if pin != "" && catalog.CompareVersions(cs.Version, pin) != 0 {
			continue
		}
		reason := ""
		ok, err := satisfies(c.Constraint, cs.Version, false)
		switch {
		case err != nil:
			reason = err.Error()
		case catalog.IsPreRelease(cs.Version):
			reason = "pre-release"
		case !ok:
			reason = fmt.Sprintf("does not satisfy %s", c.Constraint)
		case isExcluded(cs.Version, c.Exclude):
			reason = "excluded in matrix.yaml components.codeServer.exclude"
		}
		if reason == "" && len(cs.Platforms) > 0 {
			var missing []string
			for _, p := range r.platforms {
				if cs.Platforms[p] == "" {
					missing = append(missing, p)
				}
			}
			if len(missing) > 0 {
				reason = fmt.Sprintf("base image %s:%s has no %s manifest", r.cfg.Base.Image, tagOf(cs), strings.Join(missing, ", "))
			}
		}
		vscode := cs.VSCode
		if reason == "" && vscode == "" {
			if vscode, err = catalog.VSCodeFor(cs.Version, r.cfg.Base.VSCodeOverrides); err != nil {
				reason = err.Error()
			}
		}
		if reason != "" {
			rejected = append(rejected, Rejection{Version: cs.Version, Reason: reason})
			continue
		}
		sub := &Explanation{}
		exts, err := r.extensions(vscode, sub)
		if err != nil {
			lastErr = err
			rejected = append(rejected, Rejection{Version: cs.Version, Reason: fmt.Sprintf("(VS Code %s) %v", vscode, err)})
			continue
		}
		why := fmt.Sprintf("newest satisfying %s whose bundled VS Code %s accepts every extension", c.Constraint, vscode)
		if pin != "" {
			why = fmt.Sprintf("requested; bundles VS Code %s, which accepts every extension", vscode)
		}
		out := imagespec.CodeServer{
			Version: cs.Version, VSCode: vscode,
			Base:        r.cfg.Base.Image + ":" + tagOf(cs),
			IndexDigest: cs.IndexDigest,
		}
		if len(cs.Platforms) > 0 {
			out.Platforms = map[string]string{}
			for _, p := range r.platforms {
				out.Platforms[p] = cs.Platforms[p]
			}
			why += "; base digests known for " + strings.Join(r.platforms, ", ")
		} else {
			ex.Notes = append(ex.Notes, fmt.Sprintf("base image digests for %s:%s are unknown in the catalog (refresh with registry access records them); the build must pin them", r.cfg.Base.Image, tagOf(cs)))
		}
		if cs.IndexDigest != "" {
			out.Base += "@" + cs.IndexDigest
		}
		ex.add(Decision{Component: "code-server", Chosen: cs.Version, Reason: why, Rejected: rejected})
		ex.Decisions = append(ex.Decisions, sub.Decisions...)
		ex.Notes = append(ex.Notes, sub.Notes...)
		return out, exts, nil
	}
	detail := ""
	if pin != "" && !slices.ContainsFunc(r.cat.CodeServer, func(cs catalog.CodeServer) bool { return catalog.CompareVersions(cs.Version, pin) == 0 }) {
		var known []string
		for _, cs := range r.cat.CodeServer {
			known = append(known, cs.Version)
		}
		slices.SortFunc(known, catalog.CompareVersions)
		detail = fmt.Sprintf("code-server %s is not in the catalog (known: %s)", pin, strings.Join(known, ", "))
	}
	if len(rejected) == 1 && lastErr != nil {
		// One candidate failed on its extensions: that conflict is the story.
		return imagespec.CodeServer{}, nil, fmt.Errorf("code-server %s: %w", rejected[0].Version, lastErr)
	}
	return imagespec.CodeServer{}, nil, &ConflictError{Component: "code-server", Context: r.ctx, Detail: detail, Rejected: rejected}
}

func tagOf(cs catalog.CodeServer) string {
	if cs.Tag != "" {
		return cs.Tag
	}
	return cs.Version
}

// extensions resolves every matrix.yaml extension against VS Code vscode and
// orders dependencies before dependents.
func (r *resolver) extensions(vscode string, ex *Explanation) ([]imagespec.Extension, error) {
	chosen := map[string]imagespec.Extension{}
	meta := map[string]catalog.ExtensionVersion{}
	for _, want := range r.cfg.Extensions {
		rec := r.record(want)
		if rec == nil {
			return nil, fmt.Errorf("extension %s (source %s) is not in the catalog; run imagectl matrix refresh", want.ID, want.Source)
		}
		e, v, err := r.extension(want, rec, vscode, ex)
		if err != nil {
			return nil, err
		}
		chosen[strings.ToLower(want.ID)] = e
		meta[strings.ToLower(want.ID)] = v
	}
	// Dependencies must be in the set; pack members need not be.
	for _, want := range r.cfg.Extensions {
		v := meta[strings.ToLower(want.ID)]
		for _, d := range v.Dependencies {
			if _, ok := chosen[strings.ToLower(d)]; !ok {
				return nil, fmt.Errorf("%s %s depends on %s, which is not in matrix.yaml extensions (add it)", want.ID, v.Version, d)
			}
		}
		var absent []string
		for _, p := range v.ExtensionPack {
			if _, ok := chosen[strings.ToLower(p)]; !ok {
				absent = append(absent, p)
			}
		}
		if len(absent) > 0 {
			ex.Notes = append(ex.Notes, fmt.Sprintf("%s %s lists %s in its extensionPack; not in the set, so not installed (pack members are optional)", want.ID, v.Version, strings.Join(absent, ", ")))
		}
	}
	// Order: dependencies first, otherwise matrix.yaml order.
	var out []imagespec.Extension
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(id string, chain []string) error
	visit = func(id string, chain []string) error {
		key := strings.ToLower(id)
		switch state[key] {
		case 2:
			return nil
		case 1:
			return fmt.Errorf("extension dependency cycle: %s -> %s", strings.Join(chain, " -> "), id)
		}
		state[key] = 1
		for _, d := range meta[key].Dependencies {
			if err := visit(chosen[strings.ToLower(d)].ID, append(chain, id)); err != nil {
				return err
			}
		}
		state[key] = 2
		out = append(out, chosen[key])
		return nil
	}
	for _, want := range r.cfg.Extensions {
		if err := visit(want.ID, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *resolver) record(want matrix.Extension) *catalog.ExtensionRecord {
	for i, rec := range r.cat.Extensions {
		if strings.EqualFold(rec.ID, want.ID) && rec.Source == want.Source {
			return &r.cat.Extensions[i]
		}
	}
	return nil
}

func (r *resolver) extension(want matrix.Extension, rec *catalog.ExtensionRecord, vscode string, ex *Explanation) (imagespec.Extension, catalog.ExtensionVersion, error) {
	var rejected []Rejection
	for _, v := range rec.Versions { // newest first
		reason := ""
		ok, err := satisfies(want.Constraint, v.Version, want.PreRelease)
		switch {
		case err != nil:
			reason = err.Error()
		case isExcluded(v.Version, want.Exclude):
			reason = "excluded in matrix.yaml"
		case v.PreRelease && !want.PreRelease:
			reason = "pre-release (matrix.yaml does not allow pre-releases for it)"
		case !want.PreRelease && catalog.IsPreRelease(v.Version):
			reason = "pre-release version (matrix.yaml does not allow pre-releases for it)"
		case !ok:
			reason = fmt.Sprintf("does not satisfy %s", want.Constraint)
		}
		if reason == "" {
			acc, err := engine.Accepts(v.Engine, vscode)
			switch {
			case err != nil:
				reason = err.Error()
			case !acc:
				reason = fmt.Sprintf("engines %s not satisfied by VS Code %s", v.Engine, vscode)
			}
		}
		var files map[string]imagespec.File
		if reason == "" {
			files, reason = r.files(v)
		}
		if reason != "" {
			rejected = append(rejected, Rejection{Version: v.Version, Reason: reason})
			continue
		}
		var targets []string
		for _, p := range r.platforms {
			targets = append(targets, p+"="+files[p].TargetPlatform)
		}
		constraint := ""
		if want.Constraint != matrix.DefaultAnyConstraint {
			constraint = " satisfying " + want.Constraint
		}
		ex.add(Decision{Component: want.ID, Chosen: v.Version, Rejected: rejected,
			Reason: fmt.Sprintf("newest %s on %s%s; engines %s accepts VS Code %s; files %s",
				stabilityOf(v), want.Source, constraint, v.Engine, vscode, strings.Join(targets, ", "))})
		return imagespec.Extension{ID: want.ID, Version: v.Version, Source: want.Source, Engine: v.Engine, Files: files}, v, nil
	}
	return imagespec.Extension{}, catalog.ExtensionVersion{}, &ConflictError{
		Component: want.ID, Context: fmt.Sprintf("VS Code %s on %s", vscode, strings.Join(r.platforms, ", ")), Rejected: rejected}
}

func stabilityOf(v catalog.ExtensionVersion) string {
	if v.PreRelease {
		return "pre-release"
	}
	return "release"
}

// files picks, per requested platform, the platform build or else the
// universal one.
func (r *resolver) files(v catalog.ExtensionVersion) (map[string]imagespec.File, string) {
	out := map[string]imagespec.File{}
	var missing []string
	for _, p := range r.platforms {
		// r.platforms are imagespec.Platforms (normalizePlatforms), which all
		// have a target.
		target, _ := imagespec.VSCodeTarget(p)
		if f, ok := v.Files[target]; ok {
			out[p] = imagespec.File{TargetPlatform: target, URL: f.URL, SHA256: f.SHA256}
			continue
		}
		if f, ok := v.Files[imagespec.VSCodeUniversal]; ok {
			out[p] = imagespec.File{TargetPlatform: imagespec.VSCodeUniversal, URL: f.URL, SHA256: f.SHA256}
			continue
		}
		missing = append(missing, target)
	}
	if len(missing) > 0 {
		have := make([]string, 0, len(v.Files))
		for t := range v.Files {
			have = append(have, t)
		}
		slices.Sort(have)
		return nil, fmt.Sprintf("no %s or universal build (has: %s)", strings.Join(missing, ", "), strings.Join(have, ", "))
	}
	return out, ""
}
