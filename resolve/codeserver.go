package resolve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
)

// codeServerAndExtensions picks the newest code-server (or the pinned one)
// that satisfies matrix.yaml, has a base image manifest for every requested
// platform (when the catalog knows the digests), and whose bundled VS Code
// accepts every extension; the extensions are resolved for that VS Code.
func (r *resolver) codeServerAndExtensions(pin string, ex *Explanation) (imagespec.CodeServer, []imagespec.Extension, error) {
	c := r.cfg.Components.CodeServer
	candidates := r.codeServers
	if pin != "" {
		candidates = slices.DeleteFunc(slices.Clone(candidates), func(cs catalog.CodeServer) bool {
			return catalog.CompareVersions(cs.Version, pin) != 0
		})
	}
	// The last two checks work out what a candidate that passes needs: its
	// VS Code, then its extensions (with their own explanation).
	var (
		vscode  string
		exts    []imagespec.Extension
		sub     *Explanation
		lastErr error
	)
	sat := func(cs catalog.CodeServer) (bool, error) { return satisfies(c.Constraint, cs.Version, false) }
	i, rejected := first(candidates, func(cs catalog.CodeServer) string { return cs.Version },
		rejectErr(func(cs catalog.CodeServer) error { _, err := sat(cs); return err }),
		rejectIf(func(cs catalog.CodeServer) bool { return catalog.IsPreRelease(cs.Version) }, "pre-release"),
		rejectIf(func(cs catalog.CodeServer) bool { ok, _ := sat(cs); return !ok }, "does not satisfy "+c.Constraint),
		rejectIf(func(cs catalog.CodeServer) bool { return isExcluded(cs.Version, c.Exclude) }, "excluded in matrix.yaml components.codeServer.exclude"),
		r.missingBaseManifests,
		rejectErr(func(cs catalog.CodeServer) (err error) {
			vscode, err = r.vscodeOf(cs)
			return err
		}),
		func(cs catalog.CodeServer) string {
			sub = &Explanation{}
			var err error
			if exts, err = r.extensions(vscode, sub); err != nil {
				lastErr = err
				return fmt.Sprintf("(VS Code %s) %v", vscode, err)
			}
			return ""
		},
	)
	if i < 0 {
		return imagespec.CodeServer{}, nil, r.codeServerConflict(pin, rejected, lastErr)
	}
	cs := candidates[i]
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

// missingBaseManifests says which requested platforms the base image of cs
// has no manifest for, when the catalog knows its digests; "" otherwise.
func (r *resolver) missingBaseManifests(cs catalog.CodeServer) string {
	if len(cs.Platforms) == 0 {
		return ""
	}
	var missing []string
	for _, p := range r.platforms {
		if cs.Platforms[p] == "" {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("base image %s:%s has no %s manifest", r.cfg.Base.Image, tagOf(cs), strings.Join(missing, ", "))
	}
	return ""
}

// vscodeOf is the VS Code version code-server cs bundles.
func (r *resolver) vscodeOf(cs catalog.CodeServer) (string, error) {
	if cs.VSCode != "" {
		return cs.VSCode, nil
	}
	return catalog.VSCodeFor(cs.Version, r.cfg.Base.VSCodeOverrides)
}

// codeServerConflict explains why no code-server fits. When the only
// candidate failed on its extensions, that failure is the story.
func (r *resolver) codeServerConflict(pin string, rejected []Rejection, lastErr error) error {
	detail := ""
	if pin != "" && !slices.ContainsFunc(r.codeServers, func(cs catalog.CodeServer) bool { return catalog.CompareVersions(cs.Version, pin) == 0 }) {
		var known []string
		for _, cs := range r.codeServers {
			known = append(known, cs.Version)
		}
		slices.SortFunc(known, catalog.CompareVersions)
		detail = fmt.Sprintf("code-server %s is not in the catalog (known: %s)", pin, strings.Join(known, ", "))
	}
	if len(rejected) == 1 && lastErr != nil {
		return fmt.Errorf("code-server %s: %w", rejected[0].Version, lastErr)
	}
	return &ConflictError{Component: "code-server", Context: r.ctx, Detail: detail, Rejected: rejected}
}

func tagOf(cs catalog.CodeServer) string {
	if cs.Tag != "" {
		return cs.Tag
	}
	return cs.Version
}
