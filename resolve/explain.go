package resolve

import (
	"fmt"
	"strings"
)

// Explanation says why each chosen version won and why each newer candidate
// lost.
type Explanation struct {
	Request   Request    `json:"request"`
	Decisions []Decision `json:"decisions"`
	// Notes are facts worth knowing that did not change the outcome, e.g.
	// unknown base digests or extension pack members left out.
	Notes []string `json:"notes,omitempty"`
}

// Decision is the choice made for one component.
type Decision struct {
	// Component is "ray", "python", "debugpy", "code-server" or an extension id.
	Component string `json:"component"`
	Chosen    string `json:"chosen"`
	Reason    string `json:"reason"`
	// Rejected are the newer candidates that lost, newest first.
	Rejected []Rejection `json:"rejected,omitempty"`
}

// Rejection is one candidate that lost and why.
type Rejection struct {
	Version string `json:"version"`
	Reason  string `json:"reason"`
}

func (e *Explanation) add(d Decision) { e.Decisions = append(e.Decisions, d) }

// String renders the explanation for a person, e.g.
//
//	ms-python.python 2025.10.0 chosen: newest release from marketplace ...
//	  ms-python.python 2025.22.0 rejected: engines ^1.104.0 not satisfied by VS Code 1.101.2
func (e *Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Resolving Ray %s for %s", e.Request.Ray, strings.Join(e.Request.Platforms, ", "))
	if e.Request.CodeServer != "" {
		fmt.Fprintf(&b, ", code-server %s", e.Request.CodeServer)
	}
	if e.Request.Python != "" {
		fmt.Fprintf(&b, ", Python %s", e.Request.Python)
	}
	b.WriteString(":\n")
	for _, d := range e.Decisions {
		fmt.Fprintf(&b, "  %s %s chosen: %s\n", d.Component, d.Chosen, d.Reason)
		for _, r := range d.Rejected {
			fmt.Fprintf(&b, "    %s %s rejected: %s\n", d.Component, r.Version, r.Reason)
		}
	}
	if len(e.Notes) > 0 {
		b.WriteString("Notes:\n")
		for _, n := range e.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	return b.String()
}
