package verify

import (
	"fmt"

	"github.com/imagectl/imagectl/imagespec"
)

// Lock reads the resolved set from an image config's labels exactly as
// Image does, and returns every disagreement between the labels (a missing
// label, a lock that does not parse, a label that disagrees with the lock),
// one message each ("label <name>: ..."). The set is nil when the lock label
// is missing or does not parse.
func Lock(labels map[string]string) (*imagespec.Set, []string) {
	var problems []string
	set := checkLabels(labels, func(where, format string, args ...any) {
		problems = append(problems, where+": "+fmt.Sprintf(format, args...))
	})
	return set, problems
}
