package catalog

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// pep440RE matches the public PEP 440 version grammar (normalized or not).
var pep440RE = regexp.MustCompile(`(?i)^v?(\d+(?:\.\d+)*)` +
	`(?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?(\d*))?` +
	`(?:(?:[-_.]?(post|rev|r)[-_.]?(\d*))|-(\d+))?` +
	`(?:[-_.]?(dev)[-_.]?(\d*))?` +
	`(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?$`)

// ParseVersion parses a version from any upstream: semver (code-server,
// extensions) or PEP 440 (Ray, debugpy: 2.46.0, 2.47.0rc1, 1.8.0.dev0,
// 1.8.0.post1). PEP 440 pre-releases map to semver pre-releases (a.N, b.N,
// rc.N, dev.N) so that semver constraints and ordering apply; a post-release
// maps to build metadata, which orders equal to its release.
func ParseVersion(v string) (*semver.Version, error) {
	if sv, err := semver.StrictNewVersion(v); err == nil {
		return sv, nil
	}
	m := pep440RE.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		if sv, err := semver.NewVersion(v); err == nil {
			return sv, nil
		}
		return nil, fmt.Errorf("version %q: neither semver nor PEP 440", v)
	}
	parts := strings.Split(m[1], ".")
	if len(parts) > 3 {
		return nil, fmt.Errorf("version %q: more than three release numbers", v)
	}
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	s := strings.Join(parts, ".")
	var pre []string
	if m[2] != "" {
		kind := strings.ToLower(m[2])
		switch kind {
		case "alpha":
			kind = "a"
		case "beta":
			kind = "b"
		case "c", "pre", "preview":
			kind = "rc"
		}
		pre = append(pre, kind, numOr0(m[3]))
	}
	if m[7] != "" {
		pre = append(pre, "dev", numOr0(m[8]))
	}
	if len(pre) > 0 {
		s += "-" + strings.Join(pre, ".")
	}
	var meta []string
	if m[4] != "" || m[6] != "" {
		n := m[5]
		if m[6] != "" {
			n = m[6]
		}
		meta = append(meta, "post", numOr0(n))
	}
	if m[9] != "" {
		meta = append(meta, strings.ToLower(strings.NewReplacer("_", ".", "-", ".").Replace(m[9])))
	}
	if len(meta) > 0 {
		s += "+" + strings.Join(meta, ".")
	}
	sv, err := semver.StrictNewVersion(s)
	if err != nil {
		return nil, fmt.Errorf("version %q: %w", v, err)
	}
	return sv, nil
}

func numOr0(s string) string {
	s = strings.TrimLeft(s, "0")
	if s == "" {
		return "0"
	}
	return s
}

// IsPreRelease reports whether v is a pre-release (PEP 440 a/b/rc/dev or a
// semver pre-release). Unparseable versions count as pre-releases.
func IsPreRelease(v string) bool {
	sv, err := ParseVersion(v)
	return err != nil || sv.Prerelease() != ""
}

// CompareVersions orders two versions; unparseable versions sort first, by
// string, so sorting is total and deterministic.
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
	return strings.Compare(a, b) // e.g. 1.8.0 vs 1.8.0.post1
}

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
