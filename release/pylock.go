package release

import (
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/pylock"
)

// diffPythonLocks explains how the locked Python closures of a published
// set and the new one differ: that one side is not locked at all, or one
// reason per distribution (pylock.Diff).
func diffPythonLocks(old, cur imagespec.Set) []Reason {
	switch {
	case len(old.PythonLocks) == 0 && len(cur.PythonLocks) == 0:
		return nil
	case len(old.PythonLocks) == 0:
		return []Reason{{KindPythonDep, "closure now locked (" + pylock.Sizes(cur.PythonLocks) + "); the published image was built unlocked"}}
	case len(cur.PythonLocks) == 0:
		return []Reason{{KindPythonDep, "closure no longer locked (the catalog records none); the published image had " + pylock.Sizes(old.PythonLocks)}}
	}
	var rs []Reason
	for _, d := range pylock.Diff(old.PythonLocks, cur.PythonLocks) {
		rs = append(rs, Reason{KindPythonDep, d})
	}
	return rs
}

// shortHex abbreviates a hex digest for messages.
func shortHex(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
