package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Masterminds/semver/v3"

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

// PythonRuntimeSource lists the python-build-standalone runtimes of one
// release (upstream/github): for each CPython minor version keep accepts, the
// newest patch with a tarball for every platform, each with its sha256.
type PythonRuntimeSource interface {
	PythonRuntimes(ctx context.Context, st matrix.Standalone, keep func(minor string) bool) ([]PythonRuntime, error)
}

// Sources are the upstreams Refresh queries.
type Sources struct {
	// Images, if set, resolves matrix.yaml's build.toolsImage to the digest
	// recorded under toolsImage; nil records no toolsImage at all.
	Images ImageDigester
	PyPI   PythonSource
	// PythonRuntimes, if set, locks matrix.yaml's build.standalone release
	// under pythonRuntimes when build.pythonRuntime is standalone; nil
	// records none.
	PythonRuntimes PythonRuntimeSource
	CodeServer     CodeServerSource
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
	if src.PythonRuntimes != nil && cfg.Build.PythonRuntime == matrix.PythonRuntimeStandalone {
		st := cfg.Build.Standalone
		keep := pythonKeeper(cfg.Components.Python)
		rs, err := src.PythonRuntimes.PythonRuntimes(ctx, st, keep)
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
		}
		if len(rs) == 0 {
			return nil, fmt.Errorf("build.standalone %s release %s: no CPython version allowed by components.python has %s tarballs for linux/amd64 and linux/arm64", st.Repository, st.Release, st.Flavor)
		}
		c.PythonRuntimes = rs
	}
	Normalize(c)
	return c, nil
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
