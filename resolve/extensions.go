package resolve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/vscode/engine"
)

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
	if err := r.checkDependencies(chosen, meta, ex); err != nil {
		return nil, err
	}
	return r.installOrder(chosen, meta)
}

// checkDependencies requires every dependency of a chosen version in the
// set; pack members need not be (a note lists the ones left out).
func (r *resolver) checkDependencies(chosen map[string]imagespec.Extension, meta map[string]catalog.ExtensionVersion, ex *Explanation) error {
	for _, want := range r.cfg.Extensions {
		v := meta[strings.ToLower(want.ID)]
		for _, d := range v.Dependencies {
			if _, ok := chosen[strings.ToLower(d)]; !ok {
				return fmt.Errorf("%s %s depends on %s, which is not in matrix.yaml extensions (add it)", want.ID, v.Version, d)
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
	return nil
}

// installOrder lists the chosen extensions dependencies first, otherwise in
// matrix.yaml order; a dependency cycle is an error.
func (r *resolver) installOrder(chosen map[string]imagespec.Extension, meta map[string]catalog.ExtensionVersion) ([]imagespec.Extension, error) {
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

// extension picks the newest version of rec that matrix.yaml allows, whose
// engines.vscode accepts VS Code vscode, with a file for every requested
// platform. The version it returns has its dependencies and pack members
// sorted (as catalog.Normalize sorts them; rec is not modified).
func (r *resolver) extension(want matrix.Extension, rec *catalog.ExtensionRecord, vscode string, ex *Explanation) (imagespec.Extension, catalog.ExtensionVersion, error) {
	versions := slices.SortedStableFunc(slices.Values(rec.Versions), catalog.NewestExtensionVersionFirst)
	sat := func(v catalog.ExtensionVersion) (bool, error) {
		return satisfies(want.Constraint, v.Version, want.PreRelease)
	}
	var files map[string]imagespec.File // of the last candidate that got as far as its files
	i, rejected := first(versions, func(v catalog.ExtensionVersion) string { return v.Version },
		rejectErr(func(v catalog.ExtensionVersion) error { _, err := sat(v); return err }),
		rejectIf(func(v catalog.ExtensionVersion) bool { return isExcluded(v.Version, want.Exclude) }, "excluded in matrix.yaml"),
		rejectIf(func(v catalog.ExtensionVersion) bool { return v.PreRelease && !want.PreRelease }, "pre-release (matrix.yaml does not allow pre-releases for it)"),
		rejectIf(func(v catalog.ExtensionVersion) bool { return !want.PreRelease && catalog.IsPreRelease(v.Version) }, "pre-release version (matrix.yaml does not allow pre-releases for it)"),
		rejectIf(func(v catalog.ExtensionVersion) bool { ok, _ := sat(v); return !ok }, "does not satisfy "+want.Constraint),
		func(v catalog.ExtensionVersion) string { return engineProblem(v, vscode) },
		func(v catalog.ExtensionVersion) (reason string) {
			files, reason = r.files(v)
			return reason
		},
	)
	if i < 0 {
		return imagespec.Extension{}, catalog.ExtensionVersion{}, &ConflictError{
			Component: want.ID, Context: fmt.Sprintf("VS Code %s on %s", vscode, strings.Join(r.platforms, ", ")), Rejected: rejected}
	}
	v := versions[i]
	v.Dependencies = slices.Sorted(slices.Values(v.Dependencies))
	v.ExtensionPack = slices.Sorted(slices.Values(v.ExtensionPack))
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

// engineProblem says why v's engines.vscode does not accept VS Code vscode,
// or "".
func engineProblem(v catalog.ExtensionVersion, vscode string) string {
	acc, err := engine.Accepts(v.Engine, vscode)
	switch {
	case err != nil:
		return err.Error()
	case !acc:
		return fmt.Sprintf("engines %s not satisfied by VS Code %s", v.Engine, vscode)
	}
	return ""
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
