package workflowstest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/semver"
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
		{"actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1", "# v7.0.1", true},
		{"docker/login-action@4907a6ddec9925e35a0a9e82d7399ccc52663121", "#v4.1.0", true},
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

// actionUse is one `uses:` of a workflow file.
type actionUse struct {
	file    string
	line    int
	uses    string
	comment string
}

// workflowUses returns every `uses:` of every workflow, in file order.
func workflowUses(t *testing.T) []actionUse {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(workflowDir, "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no workflows under %s", workflowDir)
	}
	var out []actionUse
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
			out = append(out, actionUse{file: filepath.Base(f), line: n.Line, uses: n.Value, comment: n.LineComment})
		}
	}
	if len(out) == 0 {
		t.Fatal("found no uses: in any workflow; the walk is broken")
	}
	return out
}

// TestWorkflowActionsPinnedByCommit checks every `uses:` of every workflow:
// third-party actions by full commit SHA with the tag in a comment.
func TestWorkflowActionsPinnedByCommit(t *testing.T) {
	for _, u := range workflowUses(t) {
		if err := checkActionPin(u.uses, u.comment); err != nil {
			t.Errorf("%s:%d: %v", u.file, u.line, err)
		}
	}
}

// pinConflicts reports every action that uses pins at more than one
// commit, or at one commit under more than one tag comment: each action
// runs at one version across all workflows.
func pinConflicts(uses []actionUse) []string {
	type pin struct{ ref, tag string }
	first := map[string]pin{}
	where := map[string]string{}
	var out []string
	for _, u := range uses {
		action, ref, ok := strings.Cut(u.uses, "@")
		if !ok || strings.HasPrefix(u.uses, "./") || strings.HasPrefix(u.uses, "docker://") {
			continue
		}
		p := pin{ref, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(u.comment), "#"))}
		at := fmt.Sprintf("%s:%d", u.file, u.line)
		prev, seen := first[action]
		if !seen {
			first[action], where[action] = p, at
			continue
		}
		if prev != p {
			out = append(out, fmt.Sprintf("%s pins %s@%s # %s, %s pins it @%s # %s", at, action, p.ref, p.tag, where[action], prev.ref, prev.tag))
		}
	}
	return out
}

func TestPinConflicts(t *testing.T) {
	const (
		a = "1111111111111111111111111111111111111111"
		b = "2222222222222222222222222222222222222222"
	)
	for _, tc := range []struct {
		name string
		uses []actionUse
		want []string
	}{
		{
			name: "same pin everywhere",
			uses: []actionUse{{"ci.yml", 1, "actions/checkout@" + a, "# v7.0.1"}, {"release.yml", 5, "actions/checkout@" + a, "# v7.0.1"}},
		},
		{
			name: "another commit",
			uses: []actionUse{{"ci.yml", 1, "actions/checkout@" + a, "# v7.0.1"}, {"release.yml", 5, "actions/checkout@" + b, "# v7.0.1"}},
			want: []string{"release.yml:5 pins actions/checkout@" + b + " # v7.0.1, ci.yml:1 pins it @" + a + " # v7.0.1"},
		},
		{
			name: "same commit, another tag comment",
			uses: []actionUse{{"ci.yml", 1, "actions/checkout@" + a, "# v7.0.1"}, {"ci.yml", 9, "actions/checkout@" + a, "# v7.0.0"}},
			want: []string{"ci.yml:9 pins actions/checkout@" + a + " # v7.0.0, ci.yml:1 pins it @" + a + " # v7.0.1"},
		},
		{
			name: "different actions, local workflows",
			uses: []actionUse{{"ci.yml", 1, "actions/checkout@" + a, "# v7.0.1"}, {"ci.yml", 2, "actions/setup-go@" + b, "# v7.0.0"}, {"rebuild.yml", 3, "./.github/workflows/release.yml", ""}, {"smoke.yml", 4, "./.github/workflows/release.yml", ""}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, pinConflicts(tc.uses)); diff != "" {
				t.Errorf("pinConflicts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWorkflowActionsPinnedOnce checks that no two steps pin the same
// action at different commits.
func TestWorkflowActionsPinnedOnce(t *testing.T) {
	for _, c := range pinConflicts(workflowUses(t)) {
		t.Error(c)
	}
}

// node24Since is, for every action the workflows use, its first release
// whose action.yml says `runs.using: node24` (or composite or docker), read
// from the action's repository at that tag. GitHub retires the node20
// runtime; an action pinned below this version runs on node20 or older. An
// action added to a workflow is added here after reading its action.yml.
var node24Since = map[string]string{
	"actions/checkout":                "v5.0.0",
	"actions/setup-go":                "v6.2.0", // v6.0.0 and v6.1.0 still run node20
	"actions/cache":                   "v5.0.0",
	"actions/upload-artifact":         "v6.0.0",
	"actions/download-artifact":       "v7.0.0",
	"docker/login-action":             "v4.0.0",
	"docker/setup-qemu-action":        "v4.0.0",
	"peter-evans/create-pull-request": "v8.0.0",
}

// checkNode24 reports why a pinned `uses:` runs on a retired Node.js
// runtime, or nil when its tag comment names a release at or after the
// first node24 one.
func checkNode24(uses, comment string) error {
	if strings.HasPrefix(uses, "./") || strings.HasPrefix(uses, "docker://") {
		return nil
	}
	action, _, _ := strings.Cut(uses, "@")
	since, ok := node24Since[action]
	if !ok {
		return fmt.Errorf("%s: no node24 release recorded for %s; read runs.using in its action.yml at the pinned tag and add it to node24Since", uses, action)
	}
	tag := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(comment), "#"))
	if !semver.IsValid(tag) {
		return fmt.Errorf("%s: tag comment %q is not a version (want # vX.Y.Z)", uses, comment)
	}
	if semver.Compare(tag, since) < 0 {
		return fmt.Errorf("%s: %s %s runs on node20 or older; want %s or newer (runs.using: node24)", uses, action, tag, since)
	}
	return nil
}

func TestCheckNode24(t *testing.T) {
	const sha = "@1111111111111111111111111111111111111111"
	for _, tc := range []struct {
		uses, comment string
		ok            bool
	}{
		{"actions/checkout" + sha, "# v7.0.1", true},
		{"actions/checkout" + sha, "# v5.0.0", true},
		{"actions/checkout" + sha, "# v4.4.0", false},
		{"actions/setup-go" + sha, "# v6.1.0", false},
		{"actions/setup-go" + sha, "# v6.2.0", true},
		{"peter-evans/create-pull-request" + sha, "# v7.0.11", false},
		{"someone/unknown-action" + sha, "# v9.0.0", false},
		{"actions/checkout" + sha, "# latest", false},
		{"./.github/workflows/smoke.yml", "", true},
	} {
		err := checkNode24(tc.uses, tc.comment)
		if (err == nil) != tc.ok {
			t.Errorf("checkNode24(%q, %q) = %v, want ok=%v", tc.uses, tc.comment, err, tc.ok)
		}
	}
}

// TestWorkflowActionsOffNode20 checks that every action of every workflow
// is pinned at a release that runs on node24.
func TestWorkflowActionsOffNode20(t *testing.T) {
	for _, u := range workflowUses(t) {
		if err := checkNode24(u.uses, u.comment); err != nil {
			t.Errorf("%s:%d: %v", u.file, u.line, err)
		}
	}
}
