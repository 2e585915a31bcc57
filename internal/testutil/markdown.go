package testutil

import (
	"fmt"
	"strings"
)

// ShellLines returns the shell command lines of the Markdown section that
// starts with the line heading (for example "## Install"), up to the next
// "## " heading: the lines of its code blocks fenced as sh, shell, bash or
// with no language, in order, without blank and comment lines, with
// backslash continuations joined. Other blocks (python, yaml) are skipped.
func ShellLines(markdown, heading string) ([]string, error) {
	md := "\n" + markdown
	i := strings.Index(md, "\n"+heading+"\n")
	if i < 0 {
		return nil, fmt.Errorf("no %q section", heading)
	}
	sec := md[i+1:]
	if j := strings.Index(sec[len(heading):], "\n## "); j >= 0 {
		sec = sec[:len(heading)+j]
	}
	var lines []string
	in, shell, pending := false, false, ""
	for _, raw := range strings.Split(sec, "\n") {
		l := strings.TrimSpace(raw)
		if strings.HasPrefix(l, "```") {
			if !in {
				lang := strings.TrimPrefix(l, "```")
				shell = lang == "" || lang == "sh" || lang == "shell" || lang == "bash"
			}
			in = !in
			continue
		}
		if !in || !shell || l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			pending += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		lines, pending = append(lines, pending+l), ""
	}
	return lines, nil
}
