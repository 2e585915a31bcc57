package catalog

import (
	"fmt"
	"strconv"
	"strings"
)

// PythonSatisfies reports whether CPython minor version py ("3.12") satisfies
// a PEP 440 requires-python specifier such as ">=3.8" or ">=3.9,!=3.9.0,<3.14".
// The minor version stands for its whole series: a clause excludes it only if
// it excludes every 3.N.x (so "!=3.9.0" keeps 3.9, "<3.12.1" keeps 3.12). An
// empty specifier is satisfied. An unparseable one is an error.
func PythonSatisfies(spec, py string) (bool, error) {
	n, ok := PythonMinor(py)
	if !ok {
		return false, fmt.Errorf("python %q: want 3.N", py)
	}
	for _, clause := range strings.Split(spec, ",") {
		clause = strings.TrimSpace(clause)
		if clause == "" {
			continue
		}
		op, ver := splitOp(clause)
		if op == "" {
			return false, fmt.Errorf("requires-python %q: bad clause %q", spec, clause)
		}
		wild := strings.HasSuffix(ver, ".*")
		ver = strings.TrimSuffix(ver, ".*")
		parts := strings.Split(ver, ".")
		nums := make([]int, 0, 3)
		for _, p := range parts {
			x, err := strconv.Atoi(p)
			if err != nil || x < 0 || strings.ContainsAny(p, "+-") {
				return false, fmt.Errorf("requires-python %q: bad version in %q", spec, clause)
			}
			nums = append(nums, x)
		}
		for len(nums) < 3 {
			nums = append(nums, 0)
		}
		major, minor, patch := nums[0], nums[1], nums[2]
		// The series 3.n.* as an interval [lo, hi): compare (major, minor).
		cmp := func() int { // sign of (3, n) - (major, minor)
			if 3 != major {
				return 3 - major
			}
			return n - minor
		}()
		var pass bool
		switch op {
		case ">=":
			pass = cmp >= 0 // when equal, some 3.n.x >= major.minor.patch exists
		case ">":
			pass = cmp >= 0 // when equal, 3.n.(patch+1) exists
		case "<=":
			pass = cmp <= 0
		case "<":
			pass = cmp < 0 || (cmp == 0 && patch > 0)
		case "==", "===":
			if wild {
				pass = len(parts) == 1 && major == 3 || len(parts) >= 2 && cmp == 0
			} else {
				pass = cmp == 0
			}
		case "!=":
			// Excludes the whole series only as "!=3.n.*" or "!=3.n".
			if wild {
				pass = !(len(parts) == 1 && major == 3 || len(parts) >= 2 && cmp == 0)
			} else {
				pass = !(cmp == 0 && len(parts) == 2)
			}
		case "~=":
			// ~=3.8 means >=3.8,==3.*; ~=3.8.1 means >=3.8.1,==3.8.*.
			if len(parts) == 2 {
				pass = major == 3 && n >= minor
			} else {
				pass = cmp == 0
			}
		}
		if !pass {
			return false, nil
		}
	}
	return true, nil
}

func splitOp(clause string) (op, ver string) {
	for _, o := range []string{"===", "~=", "==", "!=", "<=", ">=", "<", ">"} {
		if v, ok := strings.CutPrefix(clause, o); ok {
			return o, strings.TrimSpace(v)
		}
	}
	return "", ""
}
