package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/pep440"
	"github.com/imagectl/imagectl/matrix"
)

// PythonSource lists the releases of a PyPI project (upstream/pypi).
type PythonSource interface {
	Releases(ctx context.Context, project string) ([]PythonPackage, error)
}

// CodeServerSource lists code-server versions for which keep returns true
// (upstream/registry or upstream/github).
type CodeServerSource interface {
	CodeServers(ctx context.Context, keep func(version string) bool) ([]CodeServer, error)
}

// ExtensionSource lists every version of an extension (extensions/marketplace,
// extensions/openvsx).
type ExtensionSource interface {
	Versions(ctx context.Context, id string) ([]ExtensionVersion, error)
}

// ImageDigester returns the digest an image reference names now
// (upstream/registry.Images).
type ImageDigester interface {
	Digest(ctx context.Context, ref string) (string, error)
}

// PythonRuntimeSource reads python-build-standalone releases
// (upstream/github).
type PythonRuntimeSource interface {
	// PythonRuntimes lists the runtimes of release st.Release: for each
	// CPython minor version keep accepts, the newest patch with a tarball
	// for every platform, each with its sha256.
	PythonRuntimes(ctx context.Context, st matrix.Standalone, keep func(minor string) bool) ([]PythonRuntime, error)
	// CheckedPythonRuntimes is PythonRuntimes where every sha256 must come
	// from the release's SHA256SUMS; anything less is an error wrapping
	// ErrUnchecked.
	CheckedPythonRuntimes(ctx context.Context, st matrix.Standalone, keep func(minor string) bool) ([]PythonRuntime, error)
	// NewerReleases lists the published release tags of st.Repository
	// later than st.Release, newest first.
	NewerReleases(ctx context.Context, st matrix.Standalone) ([]string, error)
}

// ErrUnchecked marks a python-build-standalone tarball whose sha256 the
// release's SHA256SUMS does not give (or contradicts): Refresh does not
// propose that release.
var ErrUnchecked = errors.New("not checked against SHA256SUMS")

// maxNewerReleases bounds how many releases later than
// build.standalone.release Refresh examines, newest first (each costs about
// 16 API requests).
const maxNewerReleases = 5

// Sources are the upstreams Refresh queries.
type Sources struct {
	// Images, if set, resolves matrix.yaml's build.toolsImage to the digest
	// recorded under toolsImage; nil records no toolsImage at all.
	Images ImageDigester
	PyPI   PythonSource
	// PythonRuntimes, if set, locks a python-build-standalone release
	// under pythonRuntimes when build.pythonRuntime is standalone: the
	// newest release not older than matrix.yaml's build.standalone.release
	// that has every CPython minor of PythonMinors for linux/amd64 and
	// linux/arm64, checked against its SHA256SUMS, else
	// build.standalone.release itself; nil records none.
	PythonRuntimes PythonRuntimeSource
	// PythonMinors returns the CPython minor versions ("3.12") the sets
	// resolved from c use, the ones a newer release must have (the command
	// gives resolve.All's). Nil stands for every minor that
	// build.standalone.release itself has.
	PythonMinors func(c *Catalog) ([]string, error)
	// Notes, if set, receives a line for each newer python-build-standalone
	// release examined and not proposed, with the reason.
	Notes      io.Writer
	CodeServer CodeServerSource
	// Extensions maps a matrix.yaml source name (marketplace, openvsx) to
	// its client.
	Extensions map[string]ExtensionSource
	// Now gives the Describes date (default time.Now).
	Now func() time.Time
}

// How many versions of each extension Refresh keeps, newest first: enough to
// fall back across several code-server releases, small enough to review.
const (
	keepExtensionReleases    = 20
	keepExtensionPreReleases = 5
)

// Refresh queries the upstreams for what resolving cfg needs and returns a
// new catalog. Only versions the matrix can pick are kept (constraints
// applied; yanked releases kept and flagged). It writes nothing: callers
// Write the result, so a failed refresh leaves the old snapshot untouched.
func Refresh(ctx context.Context, cfg *matrix.Config, src Sources) (*Catalog, error) {
	if src.PyPI == nil || src.CodeServer == nil {
		return nil, errors.New("refresh: PyPI and code-server sources are required")
	}
	now := time.Now
	if src.Now != nil {
		now = src.Now
	}
	c := &Catalog{
		SchemaVersion: SchemaVersion,
		Describes:     now().UTC().Format("2006-01-02"),
		Origin:        "imagectl matrix refresh",
	}
	k := cfg.Components
	csKeep, err := keeper(k.CodeServer.Constraint)
	if err != nil {
		return nil, fmt.Errorf("components.codeServer.constraint: %w", err)
	}
	if c.CodeServer, err = src.CodeServer.CodeServers(ctx, csKeep); err != nil {
		return nil, fmt.Errorf("code-server versions: %w", err)
	}
	if c.Ray, err = pythonReleases(ctx, src.PyPI, "ray", k.Ray.Constraint); err != nil {
		return nil, err
	}
	if c.Debugpy, err = pythonReleases(ctx, src.PyPI, "debugpy", k.Debugpy.Constraint); err != nil {
		return nil, err
	}
	for _, e := range cfg.Extensions {
		s := src.Extensions[e.Source]
		if s == nil {
			return nil, fmt.Errorf("extension %s: no client for source %q", e.ID, e.Source)
		}
		vs, err := s.Versions(ctx, e.ID)
		if err != nil {
			return nil, fmt.Errorf("extension %s from %s: %w", e.ID, e.Source, err)
		}
		c.Extensions = append(c.Extensions, ExtensionRecord{ID: e.ID, Source: e.Source, Versions: trimExtension(vs, e)})
	}
	if src.Images != nil && cfg.Build.ToolsImage != "" {
		ref := cfg.Build.ToolsImage
		d, err := src.Images.Digest(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("build.toolsImage %s: %w", ref, err)
		}
		if !validDigest(d) {
			return nil, fmt.Errorf("build.toolsImage %s: registry answered digest %q, want sha256:<64 hex digits>", ref, d)
		}
		c.ToolsImage = &ToolsImage{Ref: ref, Digest: d}
	}
	if src.PythonRuntimes != nil && cfg.Build.PythonRuntime == imagespec.PythonRuntimeStandalone {
		Normalize(c) // PythonMinors resolves sets from it
		if c.PythonRuntimes, err = lockRuntimes(ctx, cfg, c, src); err != nil {
			return nil, err
		}
	}
	Normalize(c)
	return c, nil
}

// lockRuntimes returns the runtimes of the newest python-build-standalone
// release, not older than build.standalone.release, that has every
// CPython minor the sets use (src.PythonMinors) for both platforms, each
// tarball checked against the release's SHA256SUMS; else those of
// build.standalone.release.
func lockRuntimes(ctx context.Context, cfg *matrix.Config, c *Catalog, src Sources) ([]PythonRuntime, error) {
	st := cfg.Build.Standalone
	keep := pythonKeeper(cfg.Components.Python)
	read := func(st matrix.Standalone, checked bool) ([]PythonRuntime, error) {
		f := src.PythonRuntimes.PythonRuntimes
		if checked {
			f = src.PythonRuntimes.CheckedPythonRuntimes
		}
		rs, err := f(ctx, st, keep)
		if err != nil {
			return nil, fmt.Errorf("build.standalone %s release %s: %w", st.Repository, st.Release, err)
		}
		for i, r := range rs {
			if err := r.check(); err != nil {
				return nil, fmt.Errorf("build.standalone %s release %s: runtime %d: %w", st.Repository, st.Release, i, err)
			}
			if !keep(r.Python) {
				return nil, fmt.Errorf("build.standalone %s release %s: source returned Python %s, outside components.python", st.Repository, st.Release, r.Python)
			}
			if r.Repository != st.Repository || r.Release != st.Release || r.Flavor != st.Flavor {
				return nil, fmt.Errorf("build.standalone %s release %s: source returned runtime %s of %s release %s (%s)", st.Repository, st.Release, r.Version, r.Repository, r.Release, r.Flavor)
			}
		}
		return rs, nil
	}
	pinned := func() ([]PythonRuntime, error) {
		rs, err := read(st, false)
		if err == nil && len(rs) == 0 {
			err = fmt.Errorf("build.standalone %s release %s: no CPython version allowed by components.python has %s tarballs for linux/amd64 and linux/arm64", st.Repository, st.Release, st.Flavor)
		}
		return rs, err
	}
	var need []string
	var pinnedRS []PythonRuntime
	var err error
	if src.PythonMinors != nil {
		if need, err = src.PythonMinors(c); err != nil {
			return nil, fmt.Errorf("build.standalone: the CPython versions the sets use: %w", err)
		}
	} else {
		if pinnedRS, err = pinned(); err != nil {
			return nil, err
		}
		for _, r := range pinnedRS {
			need = append(need, r.Python)
		}
	}
	notef := func(format string, args ...any) {
		if src.Notes != nil {
			fmt.Fprintf(src.Notes, "note: "+format+"\n", args...)
		}
	}
	newer, err := src.PythonRuntimes.NewerReleases(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("build.standalone %s: releases after %s: %w", st.Repository, st.Release, err)
	}
	for i, tag := range newer {
		if i == maxNewerReleases {
			notef("python-build-standalone %s: %d releases after %s not examined (only the newest %d are)", st.Repository, len(newer)-i, tag, maxNewerReleases)
			break
		}
		cand := st
		cand.Release = tag
		rs, err := read(cand, true)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			// A candidate that cannot be read (unchecked, a bad SHA256SUMS,
			// an upstream error) is not proposed: the pinned release
			// still serves.
			notef("python-build-standalone %s release %s not proposed: %v", st.Repository, tag, err)
			continue
		}
		have := map[string]bool{}
		for _, r := range rs {
			have[r.Python] = true
		}
		var missing []string
		for _, m := range need {
			if !have[m] {
				missing = append(missing, m)
			}
		}
		if len(rs) == 0 || len(missing) > 0 {
			what := "of CPython " + strings.Join(missing, ", ")
			if len(missing) == 0 {
				what = "of any CPython version allowed by components.python"
			}
			notef("python-build-standalone %s release %s not proposed: no %s tarballs %s for both linux/amd64 and linux/arm64", st.Repository, tag, st.Flavor, what)
			continue
		}
		return rs, nil
	}
	if pinnedRS == nil {
		return pinned()
	}
	return pinnedRS, nil
}

// pythonKeeper accepts the CPython minor versions ("3.N") within the
// policy's min and max (each optional).
func pythonKeeper(p matrix.PythonPolicy) func(string) bool {
	lo, hasLo := PythonMinor(p.Min)
	hi, hasHi := PythonMinor(p.Max)
	return func(v string) bool {
		n, ok := PythonMinor(v)
		return ok && (!hasLo || n >= lo) && (!hasHi || n <= hi)
	}
}

func keeper(constraint string) (func(string) bool, error) {
	con, err := semver.NewConstraint(constraint)
	if err != nil {
		return nil, err
	}
	return func(v string) bool {
		sv, err := ParseVersion(v)
		return err == nil && con.Check(sv)
	}, nil
}

// pep440Keeper accepts the versions a PEP 440 specifier allows (a
// pre-release only when the specifier names one).
func pep440Keeper(spec string) (func(string) bool, error) {
	s, err := pep440.ParseSpecifier(spec)
	if err != nil {
		return nil, err
	}
	return func(v string) bool {
		pv, err := pep440.Parse(v)
		return err == nil && s.Allows(pv)
	}, nil
}

func pythonReleases(ctx context.Context, s PythonSource, project, constraint string) ([]PythonPackage, error) {
	keep, err := pep440Keeper(constraint)
	if err != nil {
		return nil, fmt.Errorf("%s constraint: %w", project, err)
	}
	all, err := s.Releases(ctx, project)
	if err != nil {
		return nil, fmt.Errorf("%s releases: %w", project, err)
	}
	var out []PythonPackage
	for _, p := range all {
		if keep(p.Version) {
			out = append(out, p)
		}
	}
	return out, nil
}

func trimExtension(vs []ExtensionVersion, e matrix.Extension) []ExtensionVersion {
	con, err := semver.NewConstraint(e.Constraint)
	if err != nil {
		return nil
	}
	tmp := &Catalog{Extensions: []ExtensionRecord{{Versions: vs}}}
	Normalize(tmp)
	var out []ExtensionVersion
	rel, pre := 0, 0
	for _, v := range tmp.Extensions[0].Versions {
		sv, err := ParseVersion(v.Version)
		if err != nil {
			continue
		}
		if sv.Prerelease() != "" {
			r, _ := sv.SetPrerelease("")
			sv = &r
		}
		if !con.Check(sv) {
			continue
		}
		if v.PreRelease {
			if !e.PreRelease || pre >= keepExtensionPreReleases {
				continue
			}
			pre++
		} else {
			if rel >= keepExtensionReleases {
				continue
			}
			rel++
		}
		out = append(out, v)
	}
	return out
}
