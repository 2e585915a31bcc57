package inject

import (
	"github.com/pmezard/go-difflib/difflib"
)

// Diff is a unified diff of before and after, both named file (3 lines of
// context); "" when they are equal.
func Diff(file string, before, after []byte) (string, error) {
	if string(before) == string(after) {
		return "", nil
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(string(before)),
		B:        difflib.SplitLines(string(after)),
		FromFile: "a/" + file,
		ToFile:   "b/" + file,
		Context:  3,
	})
}
