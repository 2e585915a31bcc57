package resolve

import (
	"fmt"

	"github.com/Masterminds/semver/v3"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/internal/pep440"
)

// Two version schemes: code-server and extensions are semver, checked
// against Masterminds constraints; Ray and debugpy are Python packages,
// PEP 440 versions checked against PEP 440 specifiers (internal/pep440).

// satisfies checks the semver version v against a semver constraint.
// Pre-release versions are checked against the constraint as if they were
// releases when allowPre is set (Masterminds would otherwise reject them
// outright).
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

// isExcluded reports whether the semver version v is one of excl.
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

// pySatisfies checks the PEP 440 version v against the PEP 440 specifier
// spec, with PEP 440's default for pre-releases (admitted only when the
// specifier names one).
func pySatisfies(spec, v string) (bool, error) {
	s, err := pep440.ParseSpecifier(spec)
	if err != nil {
		return false, fmt.Errorf("bad constraint %q: %w", spec, err)
	}
	pv, err := pep440.Parse(v)
	if err != nil {
		return false, err
	}
	return s.Allows(pv), nil
}

// isPyExcluded reports whether the PEP 440 version v equals one of excl
// (1.8 and 1.8.0 are equal; 1.8.0.post1 is not 1.8.0).
func isPyExcluded(v string, excl []string) bool {
	pv, err := pep440.Parse(v)
	for _, x := range excl {
		if x == v {
			return true
		}
		if px, errX := pep440.Parse(x); err == nil && errX == nil && pv.Equal(px) {
			return true
		}
	}
	return false
}

// pythonSatisfies reports whether CPython minor py ("3.12") satisfies a
// requires-python (pep440.PythonSatisfies: catalog.Load rejects one it
// cannot parse, so loading and resolution agree).
func pythonSatisfies(spec, py string) (bool, error) { return pep440.PythonSatisfies(spec, py) }
