package pylock

import (
	"fmt"
	"regexp"
	"strings"
)

// Mismatch is one entry of pip's hash-mismatch report.
type Mismatch struct {
	// Requirement is what the requirements file said, e.g. click==8.1.8.
	Requirement string
	// URL is the file pip downloaded.
	URL string
	// Expected are the sha256 the requirements file allows; Got is the
	// downloaded file's.
	Expected []string
	Got      string
}

var (
	mismatchHeader = regexp.MustCompile(`THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE`)
	mismatchFrom   = regexp.MustCompile(`^\s+(\S+) from (\S+?)(?:#\S*)?(?: \(.*\))?:\s*$`)
	// pip writes "Expected sha256 X", then "Expected     or Y" for each
	// further allowed hash.
	mismatchExp = regexp.MustCompile(`^\s+Expected\s+(?:sha256|or)\s+([0-9a-f]{64})\s*$`)
	mismatchGot = regexp.MustCompile(`^\s+Got\s+([0-9a-f]{64})\s*$`)
)

// HashMismatches reads pip's output for its hash-mismatch report
// ("THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE", then
// per file "REQ from URL:", "Expected sha256 X", "Got Y").
func HashMismatches(out string) []Mismatch {
	if !mismatchHeader.MatchString(out) {
		return nil
	}
	var ms []Mismatch
	var cur *Mismatch
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		if m := mismatchFrom.FindStringSubmatch(line); m != nil {
			ms = append(ms, Mismatch{Requirement: m[1], URL: m[2]})
			cur = &ms[len(ms)-1]
			continue
		}
		if cur == nil {
			continue
		}
		if m := mismatchExp.FindStringSubmatch(line); m != nil {
			cur.Expected = append(cur.Expected, m[1])
		} else if m := mismatchGot.FindStringSubmatch(line); m != nil {
			cur.Got = m[1]
		}
	}
	return ms
}

// HashMismatchError is a locked wheel whose sha256 is not the lock's: the
// index served other bytes under the locked name and version since
// imagectl matrix refresh recorded it. Its message is one line naming the
// distribution, the platform and both hashes.
type HashMismatchError struct {
	Platform   string
	Mismatches []Mismatch
}

func (e *HashMismatchError) Error() string {
	parts := make([]string, 0, len(e.Mismatches))
	for _, m := range e.Mismatches {
		name, version, _ := strings.Cut(m.Requirement, "==")
		parts = append(parts, fmt.Sprintf("%s %s on %s: locked sha256 %s, the index served sha256 %s (%s)",
			name, version, e.Platform, strings.Join(m.Expected, " or "), m.Got, m.URL))
	}
	return "python lock: wheel hash mismatch: " + strings.Join(parts, "; ")
}
