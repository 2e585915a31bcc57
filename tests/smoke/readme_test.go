package smoketest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/imagectl/imagectl/smoke/kind"
)

// shellCommand is one command line of a README code block.
type shellCommand struct {
	args []string
	pipe []string
	vars string // VAR of VAR=$(...)
	line string
}

// readmeCommands extracts the commands of the shell code blocks of the
// markdown section that starts with heading (python blocks are skipped).
func readmeCommands(t *testing.T, markdown, heading string) []shellCommand {
	t.Helper()
	markdown = "\n" + markdown
	i := strings.Index(markdown, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README has no %q section", heading)
	}
	section := markdown[i+1:]
	if j := strings.Index(section[len(heading):], "\n## "); j >= 0 {
		section = section[:len(heading)+j]
	}
	var cmds []shellCommand
	inBlock, shell := false, false
	var pending string
	for _, raw := range strings.Split(section, "\n") {
		l := strings.TrimSpace(raw)
		if strings.HasPrefix(l, "```") {
			if !inBlock {
				lang := strings.TrimPrefix(l, "```")
				inBlock, shell = true, lang == "" || lang == "sh" || lang == "shell" || lang == "bash"
			} else {
				inBlock = false
			}
			continue
		}
		if !inBlock || !shell || l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			pending += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		l, pending = pending+l, ""
		cmds = append(cmds, parseShell(t, l))
	}
	return cmds
}

var assignRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=\$\((.*)\)$`)

func parseShell(t *testing.T, line string) shellCommand {
	t.Helper()
	c := shellCommand{line: line}
	if m := assignRE.FindStringSubmatch(line); m != nil {
		c.vars, line = m[1], m[2]
	}
	words := shellWords(t, line)
	for i, w := range words {
		if w == "|" {
			c.args, c.pipe = words[:i], words[i+1:]
			return c
		}
	}
	c.args = words
	return c
}

// shellWords splits a line as sh does for the quoting the README uses:
// '...' literal, "..." with $VAR and $(...) kept as text, bare words.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; {
		case ch == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				t.Fatalf("unbalanced ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '"':
			j := strings.IndexByte(line[i+1:], '"')
			if j < 0 {
				t.Fatalf("unbalanced \" in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// userOnly are README commands the harness has its own equivalent for, and
// why.
var userOnly = []struct {
	prefix []string
	why    string
}{
	{[]string{"kubectl", "create", "secret", "generic", "code-server-password"}, "the alternative to --create-secret, which the harness uses"},
	{[]string{"kubectl", "ray", "job", "submit"}, "InteractiveMode; the harness's RayJob is K8sJobMode, so KubeRay submits it"},
	{[]string{"kubectl", "port-forward"}, "for a browser; the harness attaches from inside the sidecar (imagectl smoke attach)"},
}

// TestReadmeGuideIsWhatTheHarnessRuns: README's "Debug a RayJob on
// KubeRay" gives the harness's commands (kind.Guide for the pinned newest
// KubeRay), in its order, argument for argument; every other command there
// is one the harness has a stated equivalent for.
func TestReadmeGuideIsWhatTheHarnessRuns(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	got := readmeCommands(t, string(readme), "## Debug a RayJob on KubeRay")
	guide := kind.Guide(kind.KubeRayNewest)
	next := 0
	for _, c := range got {
		if next < len(guide) {
			g := guide[next]
			if cmp.Equal(c.args, g.Args) && cmp.Equal(c.pipe, g.Pipe, cmpEmpty) && c.vars == g.Var {
				next++
				continue
			}
		}
		known := false
		for _, u := range userOnly {
			if len(c.args) >= len(u.prefix) && cmp.Equal(c.args[:len(u.prefix)], u.prefix) && c.pipe == nil {
				known = true
			}
		}
		if !known {
			want := "(all of the harness's commands came before it)"
			if next < len(guide) {
				want = fmt.Sprintf("the harness's next command is\n  %s", guide[next])
			}
			t.Errorf("README runs\n  %s\nwhich the harness does not; %s", c.line, want)
		}
	}
	if next < len(guide) {
		t.Errorf("README lacks the harness's command\n  %s\n(or gives it in another form or order)", guide[next])
	}

	// No other KubeRay version, no namespace the harness does not use, and
	// the URL code-server really serves.
	for _, f := range append([]string{"../../README.md"}, mustGlob(t, "../../docs/*.md")...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"ray-system", "https://127.0.0.1:8443", "https://localhost:8443", "kind load", "docker save"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s says %q", filepath.Base(f), bad)
			}
		}
		for _, m := range regexp.MustCompile(`(?:ref=v|kuberay-operator --version |KubeRay )(\d+\.\d+\.\d+)`).FindAllStringSubmatch(string(b), -1) {
			if m[1] != kind.KubeRayNewest && m[1] != kind.KubeRayOldest {
				t.Errorf("%s names KubeRay %s; the harness pins %s (newest) and %s (oldest)", filepath.Base(f), m[1], kind.KubeRayNewest, kind.KubeRayOldest)
			}
		}
	}
	if !strings.Contains(string(readme), "http://127.0.0.1:8443") {
		t.Error("README does not say http://127.0.0.1:8443")
	}
	if !strings.Contains(string(readme), "Already have a RayJob? `imagectl inject -f job.yaml | kubectl apply -f -`") {
		t.Error("README lacks the one-line inject pitch")
	}
}

var cmpEmpty = cmp.Comparer(func(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") })

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) == 0 {
		t.Fatalf("glob %s: %v %v", pattern, m, err)
	}
	return m
}

// TestReadmeCheckCatchesDrift proves the README check can fail.
func TestReadmeCheckCatchesDrift(t *testing.T) {
	md := "## Debug a RayJob on KubeRay\n```\n" +
		"kubectl apply --server-side -k 'github.com/ray-project/kuberay/ray-operator/config/default?ref=v1.4.2'\n" +
		"HEAD=$(kubectl get pod -l ray.io/node-type=head -o jsonpath='{.items[0].metadata.name}')\n" +
		"kubectl wait --for=condition=Ready \"pod/$HEAD\" \\\n  --timeout=20m\n" +
		"imagectl inject -f rayjob.yaml | kubectl apply -f -\n```\n```python\nprint(1)\n```\n## Next\n```\nkubectl nothing\n```\n"
	got := readmeCommands(t, md, "## Debug a RayJob on KubeRay")
	if len(got) != 4 {
		t.Fatalf("%d commands: %+v", len(got), got)
	}
	guide := kind.Guide(kind.KubeRayNewest)
	if cmp.Equal(got[0].args, guide[0].Args) {
		t.Error("a README installing KubeRay 1.4.2 matches the harness's install")
	}
	if !cmp.Equal(got[1].args, guide[3].Args) || got[1].vars != "HEAD" {
		t.Errorf("HEAD line parsed as %+v, want %v", got[1], guide[3])
	}
	if !cmp.Equal(got[2].args, guide[4].Args) {
		t.Errorf("continued line parsed as %q, want %q", got[2].args, guide[4].Args)
	}
	if cmp.Equal(got[3].args, guide[2].Args) || !cmp.Equal(got[3].pipe, guide[2].Pipe) {
		t.Errorf("inject without --create-secret: %+v vs %v", got[3], guide[2])
	}
}

// TestSmokeWorkflow: the smoke workflow runs the oldest and the newest
// KubeRay the harness pins, fails on a skip, and loads no image into kind.
func TestSmokeWorkflow(t *testing.T) {
	b, err := os.ReadFile("../../.github/workflows/smoke.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Strategy struct {
				Matrix map[string][]string `json:"matrix"`
			} `json:"strategy"`
			Steps []struct {
				Run string            `json:"run"`
				Env map[string]string `json:"env"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	job, ok := wf.Jobs["smoke"]
	if !ok {
		t.Fatal("smoke.yml has no smoke job")
	}
	if got := job.Strategy.Matrix["kuberay"]; !cmp.Equal(got, []string{"oldest", "newest"}) {
		t.Errorf("matrix kuberay %q, want [oldest newest]", got)
	}
	for _, v := range job.Strategy.Matrix["kuberay"] {
		if _, err := kind.KubeRayVersion(v); err != nil {
			t.Error(err)
		}
	}
	var ran bool
	for _, s := range job.Steps {
		for _, bad := range []string{"docker pull", "docker save", "kind load"} {
			if strings.Contains(s.Run, bad) {
				t.Errorf("a step runs %q: nothing is loaded into kind", bad)
			}
		}
		if strings.Contains(s.Run, "TestSmoke") {
			ran = true
			if s.Env["IMAGECTL_SMOKE_REQUIRE"] != "1" || s.Env["IMAGECTL_SMOKE_KUBERAY"] != "${{ matrix.kuberay }}" {
				t.Errorf("TestSmoke step env %v: want IMAGECTL_SMOKE_REQUIRE=1 and the matrix's KubeRay", s.Env)
			}
		}
	}
	if !ran {
		t.Error("no step runs TestSmoke")
	}
}
