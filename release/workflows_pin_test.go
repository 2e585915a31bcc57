package release

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

var (
	// fullSHA is a full 40-hex commit id: a tag or branch can be moved, a
	// commit cannot.
	fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)
	// tagComment is the release tag the SHA was taken from, kept beside it
	// so that a reader (and Dependabot) sees which version is pinned.
	tagComment = regexp.MustCompile(`^#\s*v?\d+(\.\d+)*(-[0-9A-Za-z.]+)?$`)
)

// checkActionPin reports why a `uses:` reference is not pinned by commit,
// or nil when it is. Local actions and reusable workflows of this
// repository (./...) are pinned by the commit that runs them.
func checkActionPin(uses, comment string) error {
	if strings.HasPrefix(uses, "./") {
		return nil
	}
	if strings.HasPrefix(uses, "docker://") {
		if !strings.Contains(uses, "@sha256:") {
			return fmt.Errorf("%s: a docker action must name its image by digest (docker://IMAGE@sha256:...)", uses)
		}
		return nil
	}
	action, ref, ok := strings.Cut(uses, "@")
	if !ok || action == "" {
		return fmt.Errorf("%s: no @ref; want OWNER/REPO@<40-hex commit> # <tag>", uses)
	}
	if !fullSHA.MatchString(ref) {
		return fmt.Errorf("%s: ref %q is not a full 40-hex commit SHA; want %s@<commit> # %s", uses, ref, action, ref)
	}
	if !tagComment.MatchString(strings.TrimSpace(comment)) {
		return fmt.Errorf("%s: no tag comment (got %q); want `uses: %s@%s # vX.Y.Z`", uses, comment, action, ref)
	}
	return nil
}

// usesNodes walks a decoded YAML document and returns every scalar value
// of a `uses` key, with its line comment.
func usesNodes(n *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			out = append(out, usesNodes(c)...)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "uses" && v.Kind == yaml.ScalarNode {
				out = append(out, v)
				continue
			}
			out = append(out, usesNodes(v)...)
		}
	}
	return out
}

func TestCheckActionPin(t *testing.T) {
	for _, tc := range []struct {
		uses, comment string
		ok            bool
	}{
		{"actions/checkout@11d5960a326750d5838078e36cf38b85af677262", "# v4.4.0", true},
		{"docker/login-action@c94ce9fb468520275223c153574b00df6fe4bcc9", "#v3.7.0", true},
		{"./.github/workflows/release.yml", "", true},
		{"docker://alpine@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "", true},
		{"actions/checkout@v4", "", false},
		{"actions/checkout@v4", "# v4", false},
		{"actions/checkout@11d5960a326750d5838078e36cf38b85af677262", "", false},
		{"actions/checkout@11d5960a326750d5838078e36cf38b85af677262", "# pinned", false},
		{"actions/checkout@11d5960a", "# v4.4.0", false},
		{"actions/checkout@11D5960A326750D5838078E36CF38B85AF677262", "# v4.4.0", false},
		{"actions/checkout", "# v4.4.0", false},
		{"docker://alpine:3.20", "", false},
	} {
		err := checkActionPin(tc.uses, tc.comment)
		if (err == nil) != tc.ok {
			t.Errorf("checkActionPin(%q, %q) = %v, want ok=%v", tc.uses, tc.comment, err, tc.ok)
		}
	}
}

// TestWorkflowActionsPinnedByCommit checks every `uses:` of every workflow:
// third-party actions by full commit SHA with the tag in a comment.
func TestWorkflowActionsPinnedByCommit(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(workflowDir, "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no workflows under %s", workflowDir)
	}
	seen := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, n := range usesNodes(&doc) {
			seen++
			if err := checkActionPin(n.Value, n.LineComment); err != nil {
				t.Errorf("%s:%d: %v", filepath.Base(f), n.Line, err)
			}
		}
	}
	if seen == 0 {
		t.Error("found no uses: in any workflow; the walk is broken")
	}
}
