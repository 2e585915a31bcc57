package docsurl

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// anchor is GitHub's anchor of a Markdown heading: lower case, spaces to
// hyphens, punctuation but hyphens and underscores dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Every link a message prints names a page of docs/ and one of its
// headings.
func TestLinksResolve(t *testing.T) {
	if got := anchor("The password Secret (`--secret-file`)"); got != "the-password-secret---secret-file" {
		t.Fatalf("anchor() = %q: not GitHub's rule", got)
	}
	heading := regexp.MustCompile(`(?m)^#{1,6} +(.+)$`)
	for _, link := range []string{InjectHardenedPods, InjectTokenAuth, CLIRenamedFlags} {
		rest, ok := strings.CutPrefix(link, Home+"/blob/main/docs/")
		if !ok {
			t.Errorf("%s is not a page of %s/blob/main/docs/", link, Home)
			continue
		}
		page, want, _ := strings.Cut(rest, "#")
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", page))
		if err != nil {
			t.Errorf("%s: %v", link, err)
			continue
		}
		found := want == ""
		for _, m := range heading.FindAllStringSubmatch(string(b), -1) {
			found = found || anchor(m[1]) == want
		}
		if !found {
			t.Errorf("%s: docs/%s has no heading with the anchor %q", link, page, want)
		}
	}
}
