package engine

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var (
	versionRE   = regexp.MustCompile(`^(\^|>=)?(\d+|x)\.(\d+|x)\.(\d+|x)(-.*)?$`)
	notBeforeRE = regexp.MustCompile(`^-(\d{4})(\d{2})(\d{2})$`)
)

// Range is a parsed, normalized engines.vscode value.
type Range struct {
	raw string
	any bool // "*"

	major, minor, patch                   int
	majorMustEq, minorMustEq, patchMustEq bool
	isMinimum                             bool
	notBefore                             time.Time // zero if none
}

// String returns the range as written.
func (r Range) String() string { return r.raw }

// ParseRange parses an engines.vscode value. It rejects what VS Code rejects:
// a value not matching the grammar, or one not specific enough (for 1.x and
// later the major must be given; for 0.x major and minor).
func ParseRange(s string) (Range, error) {
	s = strings.TrimSpace(s)
	if s == "*" {
		return Range{raw: s, any: true}, nil
	}
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return Range{}, fmt.Errorf("engines.vscode %q: cannot parse, want e.g. ^1.22.0, >=1.22.0, 1.22.x or *", s)
	}
	r := Range{raw: s, isMinimum: m[1] == ">="}
	var err error
	if r.major, r.majorMustEq, err = part(m[2]); err != nil {
		return Range{}, fmt.Errorf("engines.vscode %q: %w", s, err)
	}
	if r.minor, r.minorMustEq, err = part(m[3]); err != nil {
		return Range{}, fmt.Errorf("engines.vscode %q: %w", s, err)
	}
	if r.patch, r.patchMustEq, err = part(m[4]); err != nil {
		return Range{}, fmt.Errorf("engines.vscode %q: %w", s, err)
	}
	// Specificity, as VS Code's isVersionValid enforces it (before caret
	// normalization).
	if r.major == 0 {
		if !r.majorMustEq || !r.minorMustEq {
			return Range{}, fmt.Errorf("engines.vscode %q: not specific enough: for versions before 1.0.0 give at least major and minor, e.g. ^0.10.0", s)
		}
	} else if !r.majorMustEq {
		return Range{}, fmt.Errorf("engines.vscode %q: not specific enough: give at least the major version, e.g. ^1.10.0 or 1.x.x", s)
	}
	if m[1] == "^" {
		if r.major == 0 {
			r.patchMustEq = false
		} else {
			r.minorMustEq, r.patchMustEq = false, false
		}
	}
	if nb := notBeforeRE.FindStringSubmatch(m[5]); nb != nil {
		y, _ := strconv.Atoi(nb[1])
		mo, _ := strconv.Atoi(nb[2])
		d, _ := strconv.Atoi(nb[3])
		// Date.UTC semantics: out-of-range months/days roll over, as in JS.
		r.notBefore = time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC)
	}
	return r, nil
}

func part(s string) (n int, mustEqual bool, err error) {
	if s == "x" {
		return 0, false, nil
	}
	n, err = strconv.Atoi(s)
	if err != nil {
		return 0, false, fmt.Errorf("version part %q out of range", s)
	}
	return n, true, nil
}

// Version is a parsed VS Code product version such as 1.101.2.
type Version struct{ Major, Minor, Patch int }

// ParseVersion parses a VS Code product version "MAJOR.MINOR.PATCH" with an
// optional "-suffix" (ignored, as VS Code ignores the product's suffix).
func ParseVersion(s string) (Version, error) {
	m := versionRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || m[1] != "" || m[2] == "x" || m[3] == "x" || m[4] == "x" {
		return Version{}, fmt.Errorf("VS Code version %q: want MAJOR.MINOR.PATCH, e.g. 1.101.2", s)
	}
	var v Version
	var err error
	for i, p := range []*int{&v.Major, &v.Minor, &v.Patch} {
		if *p, err = strconv.Atoi(m[i+2]); err != nil {
			return Version{}, fmt.Errorf("VS Code version %q: part %q out of range", s, m[i+2])
		}
	}
	return v, nil
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Accepts reports whether VS Code vscodeVersion satisfies engineRange. The
// range's not-before date is ignored (the product date is unknown); use
// AcceptsAt when it is known. An unparseable range or version is an error.
func Accepts(engineRange, vscodeVersion string) (bool, error) {
	return AcceptsAt(engineRange, vscodeVersion, time.Time{})
}

// AcceptsAt is Accepts with the VS Code build date; a zero date means unknown.
func AcceptsAt(engineRange, vscodeVersion string, productDate time.Time) (bool, error) {
	r, err := ParseRange(engineRange)
	if err != nil {
		return false, err
	}
	v, err := ParseVersion(vscodeVersion)
	if err != nil {
		return false, err
	}
	return r.Accepts(v, productDate), nil
}

// Accepts reports whether v (built on productDate; zero = unknown) satisfies r.
func (r Range) Accepts(v Version, productDate time.Time) bool {
	if r.any {
		return true
	}
	tooEarly := func() bool {
		return !productDate.IsZero() && !r.notBefore.IsZero() && productDate.Before(r.notBefore)
	}
	major, minor, patch := r.major, r.minor, r.patch
	majorEq, minorEq, patchEq := r.majorMustEq, r.minorMustEq, r.patchMustEq
	if r.isMinimum {
		switch {
		case v.Major > major:
			return true
		case v.Major < major:
			return false
		case v.Minor > minor:
			return true
		case v.Minor < minor:
			return false
		case tooEarly():
			return false
		}
		return v.Patch >= patch
	}
	// Anything < 1.0.0 is compatible with >= 1.0.0, except exact matches.
	if v.Major == 1 && major == 0 && (!majorEq || !minorEq || !patchEq) {
		major, minor, patch = 1, 0, 0
		majorEq, minorEq, patchEq = true, false, false
	}
	switch {
	case v.Major < major:
		return false
	case v.Major > major:
		return !majorEq
	case v.Minor < minor:
		return false
	case v.Minor > minor:
		return !minorEq
	case v.Patch < patch:
		return false
	case v.Patch > patch:
		return !patchEq
	}
	return !tooEarly()
}

// Explain returns VS Code's wording for a mismatch:
// "Extension is not compatible with Code X. Extension requires: Y."
func Explain(engineRange, vscodeVersion string) string {
	return fmt.Sprintf("Extension is not compatible with Code %s. Extension requires: %s.", vscodeVersion, engineRange)
}
