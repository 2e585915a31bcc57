package imagespec

import (
	"regexp"
	"strings"
)

var distNameRuns = regexp.MustCompile(`[-_.]+`)

// NormalizeName is the PEP 503 normalized form of a Python distribution
// name: re.sub(r"[-_.]+", "-", name).lower(). The lock, the build, the SBOM
// reader, release and verify all compare distribution names through it.
func NormalizeName(name string) string {
	return strings.ToLower(distNameRuns.ReplaceAllString(name, "-"))
}
