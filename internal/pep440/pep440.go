package pep440

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	version "github.com/aquasecurity/go-pep440-version"
)

// Version is a parsed PEP 440 version.
type Version = version.Version

// Parse parses a PEP 440 version such as 2.46.0, 2.47.0rc1, 1.8.0.dev0,
// 1.8.0.post1, 1!2.0 or 1.2.3.4 (non-normalized spellings such as 1.0-beta2
// are accepted, as PEP 440 says).
func Parse(s string) (Version, error) {
	v, err := version.Parse(s)
	if err != nil {
		return Version{}, fmt.Errorf("version %q: not a PEP 440 version", s)
	}
	return v, nil
}

// Compare orders two version strings by PEP 440. It is a total order, so
// sorting is deterministic: unparseable strings sort first, by string, and
// equal versions spelled differently (1.8 and 1.8.0) by string.
func Compare(a, b string) int {
	va, ea := Parse(a)
	vb, eb := Parse(b)
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
	return strings.Compare(a, b)
}

// IsPreRelease reports whether v is a PEP 440 pre-release (a, b, rc or a
// dev release). Unparseable versions count as pre-releases.
func IsPreRelease(v string) bool {
	pv, err := Parse(v)
	return err != nil || pv.IsPreRelease()
}

// Any is the specifier matrix.yaml uses for "no constraint".
const Any = "*"

// clauseRE is one specifier clause: a PEP 440 operator and its operand.
var clauseRE = regexp.MustCompile(`^(===|~=|==|!=|<=|>=|<|>)\s*(\S+)$`)

// Specifier is a parsed PEP 440 version specifier such as ">=1.8.0" or
// ">=3.9,!=3.9.0,<3.14"; "*" matches every version.
type Specifier struct {
	raw     string
	clauses []clause
	set     version.Specifiers
	any     bool
	// pre is set when a clause names a pre-release: PEP 440 then admits
	// pre-releases (Allows).
	pre bool
}

type clause struct {
	op, ver string
	wild    bool
	// base is the normalized release of ver (3.12.1 for 3.12.1rc1).
	base string
	// final is set when ver is a plain release (no pre, post, dev or local).
	final bool
}

// ParseSpecifier parses a PEP 440 specifier: comma-separated clauses, each
// an operator (~= == != <= >= < > ===) and a version, == and != with an
// optional .* suffix; or "*" for any version. Anything else, including the
// "||" and operator-less forms the underlying library tolerates, is an error.
func ParseSpecifier(s string) (Specifier, error) {
	sp := Specifier{raw: s}
	if strings.TrimSpace(s) == Any {
		sp.any = true
		return sp, nil
	}
	for _, c := range strings.Split(s, ",") {
		c = strings.TrimSpace(c)
		m := clauseRE.FindStringSubmatch(c)
		if m == nil {
			return Specifier{}, fmt.Errorf("specifier %q: bad clause %q (want an operator ~= == != <= >= < > === and a version, clauses separated by commas)", s, c)
		}
		cl := clause{op: m[1], ver: m[2]}
		if cl.op != "===" {
			ver, wild := strings.CutSuffix(cl.ver, ".*")
			v, err := Parse(ver)
			if err != nil {
				return Specifier{}, fmt.Errorf("specifier %q: clause %q: %w", s, c, err)
			}
			cl.wild, cl.base, cl.final = wild, v.BaseVersion(), v.String() == v.BaseVersion()
			sp.pre = sp.pre || v.IsPreRelease()
		}
		sp.clauses = append(sp.clauses, cl)
	}
	set, err := version.NewSpecifiers(s)
	if err != nil {
		return Specifier{}, fmt.Errorf("specifier %q: %w", s, err)
	}
	sp.set = set
	return sp, nil
}

// String returns the specifier as written.
func (s Specifier) String() string { return s.raw }

// Contains reports whether v satisfies every clause.
func (s Specifier) Contains(v Version) bool { return s.any || s.set.Check(v) }

// Allows is Contains with PEP 440's default for pre-releases: a pre-release
// is admitted only when a clause names one (">=2.0rc1" admits 2.0rc2,
// ">=2.0" does not), and "*" admits none.
func (s Specifier) Allows(v Version) bool {
	return s.Contains(v) && (!v.IsPreRelease() || s.pre)
}

// PythonSatisfies reports whether the CPython minor version py ("3.12")
// satisfies the requires-python specifier spec: whether some final release
// 3.N.p does, since the minor stands for its whole series (">=3.9.5" and
// "!=3.9.0" admit 3.9, "<3.9" does not). The one reading beyond PEP 440:
// "!=3.N" excludes the whole series, as "!=3.N.*" does, since that is what
// its authors mean (PEP 440 reads it as !=3.N.0). An empty specifier is
// satisfied; an unparseable one is an error.
func PythonSatisfies(spec, py string) (bool, error) {
	minor, ok := strings.CutPrefix(py, "3.")
	n, err := strconv.Atoi(minor)
	if !ok || err != nil || n < 0 || strconv.Itoa(n) != minor {
		return false, fmt.Errorf("python %q: want 3.N", py)
	}
	if strings.TrimSpace(spec) == "" {
		return true, nil
	}
	s, err := ParseSpecifier(spec)
	if err != nil {
		return false, fmt.Errorf("requires-python: %w", err)
	}
	if s.any {
		return true, nil
	}
	series := fmt.Sprintf("3.%d", n)
	patches := map[int]bool{0: true}
	for _, c := range s.clauses {
		if c.op == "!=" && !c.wild && c.final && c.base == series {
			return false, nil
		}
		// Whether 3.N.p satisfies a clause changes only at the patch
		// numbers the clauses name: trying 0, each p and p+1 is enough.
		// 3.N itself is 3.N.0.
		if rest, ok := strings.CutPrefix(c.base+".0", series+"."); ok {
			if p, err := strconv.Atoi(strings.Split(rest, ".")[0]); err == nil {
				patches[p], patches[p+1] = true, true
			}
		}
	}
	for p := range patches {
		v, err := Parse(fmt.Sprintf("%s.%d", series, p))
		if err == nil && s.Contains(v) {
			return true, nil
		}
	}
	return false, nil
}

// Minor returns the MAJOR.MINOR of the release segment of version v
// ("2.46" for 2.46.0, 2.46.0rc1 and 2.46.0.post1; "2.0" for 2), with the
// epoch when there is one ("1!2.46"); ok is false when v is not PEP 440.
func Minor(v string) (minor string, ok bool) {
	pv, err := Parse(v)
	if err != nil {
		return "", false
	}
	base := pv.BaseVersion()
	epoch := ""
	if i := strings.Index(base, "!"); i >= 0 {
		epoch, base = base[:i+1], base[i+1:]
	}
	segs := append(strings.Split(base, "."), "0")
	return epoch + segs[0] + "." + segs[1], true
}
