package catalog

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/imagectl/imagectl/internal/pep440"
)

// ParseVersion parses a semver version: code-server and extension versions
// (strict semver first, then Masterminds' lenient form such as v1.2 or
// 1.2). Python package versions (Ray, debugpy) are PEP 440: see
// ComparePythonVersions and internal/pep440.
func ParseVersion(v string) (*semver.Version, error) {
	if sv, err := semver.StrictNewVersion(v); err == nil {
		return sv, nil
	}
	sv, err := semver.NewVersion(v)
	if err != nil {
		return nil, fmt.Errorf("version %q: not semver: %w", v, err)
	}
	return sv, nil
}

// IsPreRelease reports whether the semver version v (code-server, an
// extension) is a pre-release. Unparseable versions count as pre-releases.
func IsPreRelease(v string) bool {
	sv, err := ParseVersion(v)
	return err != nil || sv.Prerelease() != ""
}

// CompareVersions orders two semver versions (code-server, extensions);
// unparseable versions sort first, by string, so sorting is total and
// deterministic.
func CompareVersions(a, b string) int {
	va, ea := ParseVersion(a)
	vb, eb := ParseVersion(b)
	switch {
	case ea != nil && eb != nil:
		return strings.Compare(a, b)
	case ea != nil:
		return -1
	case eb != nil:
		return 1
	}
	if c := va.Compare(vb); c != 0 {
		return c
	}
	return strings.Compare(a, b) // e.g. 1.2.3 vs 1.2.3+build
}

// ComparePythonVersions orders two Python package versions (Ray, debugpy)
// by PEP 440 (pep440.Compare): 1.8.0.dev0 < 1.8.0a1 < 1.8.0 < 1.8.0.post1.
func ComparePythonVersions(a, b string) int { return pep440.Compare(a, b) }

// IsPythonPreRelease reports whether the Python package version v is a PEP
// 440 pre-release (a, b, rc or dev). Unparseable versions count as
// pre-releases.
func IsPythonPreRelease(v string) bool { return pep440.IsPreRelease(v) }

// VSCodeFor returns the VS Code version bundled with code-server version cs:
// overrides[cs] if present, else 4.X.Y -> 1.X.Y.
func VSCodeFor(cs string, overrides map[string]string) (string, error) {
	if v, ok := overrides[cs]; ok {
		return v, nil
	}
	sv, err := semver.StrictNewVersion(cs)
	if err != nil {
		return "", fmt.Errorf("code-server version %q: %w", cs, err)
	}
	if sv.Major() != 4 || sv.Prerelease() != "" {
		return "", fmt.Errorf("code-server version %q: only 4.X.Y maps to VS Code 1.X.Y; add it to base.vscodeOverrides", cs)
	}
	return fmt.Sprintf("1.%d.%d", sv.Minor(), sv.Patch()), nil
}
