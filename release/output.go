package release

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Output formats of a plan.
const (
	OutputText   = "text"
	OutputJSON   = "json"
	OutputGitHub = "github"
)

// GitHubEntry is one element of the GitHub Actions matrix include list.
type GitHubEntry struct {
	Entry      string `json:"entry"`
	Action     Action `json:"action"`
	Ray        string `json:"ray"`
	CodeServer string `json:"codeServer"`
	Python     string `json:"python"`
	Reasons    string `json:"reasons"`
}

// GitHubMatrix is a strategy.matrix value for fromJSON.
type GitHubMatrix struct {
	Include []GitHubEntry `json:"include"`
}

// Write renders p in format (text, json or github).
func (p *Plan) Write(w io.Writer, format string) error {
	switch format {
	case OutputText, "":
		return p.writeText(w)
	case OutputJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	case OutputGitHub:
		m := GitHubMatrix{Include: []GitHubEntry{}}
		for _, e := range p.Entries {
			var rs []string
			for _, r := range e.Reasons {
				rs = append(rs, r.String())
			}
			m.Include = append(m.Include, GitHubEntry{
				Entry: e.Name, Action: e.Action, Ray: e.Set.Ray, CodeServer: e.Set.CodeServer.Version,
				Python: e.Set.Python, Reasons: strings.Join(rs, "; "),
			})
		}
		// One line: it is written to $GITHUB_OUTPUT as matrix=<json>.
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	default:
		return fmt.Errorf("unknown output format %q (want text, json or github)", format)
	}
}

func (p *Plan) writeText(w io.Writer) error {
	var b strings.Builder
	if p.Empty() {
		fmt.Fprintf(&b, "nothing to do: %d entries of %s are up to date\n", len(p.UpToDate), p.Repository)
	} else {
		fmt.Fprintf(&b, "%d of %d entries of %s need work:\n", len(p.Entries), len(p.Entries)+len(p.UpToDate), p.Repository)
		for _, e := range p.Entries {
			fmt.Fprintf(&b, "  %s  %s (ray %s, code-server %s, python %s)\n", e.Action, e.Name, e.Set.Ray, e.Set.CodeServer.Version, e.Set.Python)
			for _, r := range e.Reasons {
				fmt.Fprintf(&b, "      - %s\n", r)
			}
			if e.Blocked != "" {
				fmt.Fprintf(&b, "      ! blocked: %s\n", e.Blocked)
			}
		}
		if len(p.UpToDate) > 0 {
			fmt.Fprintf(&b, "up to date: %s\n", strings.Join(p.UpToDate, ", "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
