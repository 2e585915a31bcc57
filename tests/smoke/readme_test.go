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

	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/smoke/kind"
)

// shellCommand is one command line of a README code block.
type shellCommand struct {
	args   []string
	pipe   []string
	stdout string // FILE of > FILE
	vars   string // VAR of VAR=$(...)
	line   string
}

// readmeCommands extracts the commands of the shell code blocks of the
// markdown section that starts with heading (python blocks are skipped).
func readmeCommands(t *testing.T, markdown, heading string) []shellCommand {
	t.Helper()
	lines, err := testutil.ShellLines(markdown, heading)
	if err != nil {
		t.Fatalf("README: %v", err)
	}
	var cmds []shellCommand
	for _, l := range lines {
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
	if n := len(words); n >= 2 && words[n-2] == ">" {
		c.stdout, words = words[n-1], words[:n-2]
	}
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

// manualHeading is the section of docs/inject.md that gives the manual
// steps, the alternative to imagectl debug, which the kind harness runs.
const manualHeading = "## The manual steps: kubectl and the kubectl ray plugin"

// userOnly are commands of the manual steps the harness has its own
// equivalent for, and why.
var userOnly = []struct {
	prefix []string
	pipe   []string // the pipe the command must have, if any
	why    string
}{
	{[]string{"pip", "install"}, nil, "the Ray CLI: smoke.yml installs it the same way, at the Ray version under test (TestSmokeWorkflow)"},
	{[]string{"kubectl", "port-forward"}, nil, "for a browser; the harness attaches from inside the sidecar (imagectl smoke attach)"},
	{[]string{"kubectl", "get", "secret", "-n", "$NS", "code-server-password", "-o", "jsonpath={.data.password}"}, []string{"base64", "-d"}, "the password for a browser; the harness attaches from inside the sidecar"},
}

// nsAssign is the line that sets the manual steps' namespace; the harness
// takes its kubeconfig context's namespace as $NS instead.
var nsAssign = regexp.MustCompile(`^NS=[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// TestReadmeGuideIsWhatTheHarnessRuns: docs/inject.md's manual steps give
// the harness's commands (kind.Guide for the pinned newest KubeRay), in its
// order, argument for argument; every other command there is one the
// harness has a stated equivalent for. README's "Debug a RayJob on
// KubeRay" starts with imagectl debug and points at them.
func TestReadmeGuideIsWhatTheHarnessRuns(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	manual, err := os.ReadFile("../../docs/inject.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range guideProblems(t, string(manual), kind.Guide(kind.KubeRayNewest)) {
		t.Error(p)
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
	section := readmeSection(t, string(readme), "## Debug a RayJob on KubeRay")
	flat := strings.Join(strings.Fields(section), " ")
	for _, s := range []string{
		"Already have a RayJob and want to keep your own tools? `imagectl inject -f job.yaml --secret-file secret.yaml > job-debug.yaml`",
		"(docs/inject.md#the-manual-steps-kubectl-and-the-kubectl-ray-plugin)", "(docs/debug.md)",
		"**Post-mortem**", `RAY_DEBUG_POST_MORTEM: "1"`, "`--post-mortem`", "submissionMode: InteractiveMode",
		"No `kubectl`, no kubectl ray plugin and no Ray CLI on your machine", "A paused driver",
	} {
		if !strings.Contains(flat, s) {
			t.Errorf("README's debug section does not say %q", s)
		}
	}
	if strings.Contains(section, "kubectl ray job submit") || strings.Contains(section, "pip install") {
		t.Error("README's debug section still runs the plugin or installs the Ray CLI: those are docs/inject.md's manual steps")
	}
	// What the user of the manual steps must know about each plugin
	// version, and the head Pod of this RayJob's own RayCluster.
	steps := strings.Join(strings.Fields(readmeSection(t, string(manual), manualHeading)), " ")
	for _, s := range []string{
		"**120 s**", "**deletes the RayJob**", "examples/prepull.yaml", "a longer-lived cluster",
		"**Ray CLI on your machine**", `pip install "ray[default]==`,
		"submissionMode: InteractiveMode", "first document", "http://127.0.0.1:8443",
		"v1.4 to v1.6 create it in `default` too but port-forward to the dashboard in the kubeconfig context's namespace",
		"v1.3.2 with **no** `runtimeEnvYAML`", "`--runtime-env-json null`", "`TypeError`",
		"a fixed port", "not any head Pod of the namespace",
		"A paused **driver** (a `breakpoint()` in the entrypoint script) is listed too",
		"`ray.util.rpdb._driver_set_trace`",
	} {
		if !strings.Contains(steps, s) {
			t.Errorf("docs/inject.md's manual steps do not say %q", s)
		}
	}
	if strings.Contains(string(readme)+string(manual), "the driver is not listed") {
		t.Error(`the docs say "the driver is not listed": Ray lists a paused driver`)
	}
	plain, err := kind.RenderPlain(kind.Params{Name: "x", RayVersion: "2.46.0", Python: "3.12"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(plain), `      RAY_DEBUG_POST_MORTEM: "1"`+"\n") || !strings.Contains(string(plain), "submissionMode: InteractiveMode\n") {
		t.Errorf("the smoke RayJob does not run the README's flow (InteractiveMode, RAY_DEBUG_POST_MORTEM):\n%s", plain)
	}
	// The Ray CLI the manual steps install is the Ray of the example RayJob.
	example, err := os.ReadFile("../../examples/rayjob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`pip install "ray\[default\]==(\d+\.\d+\.\d+)"`).FindStringSubmatch(steps)
	if m == nil || !strings.Contains(string(example), "rayVersion: \""+m[1]+"\"\n") {
		t.Errorf("docs/inject.md installs the Ray CLI %v, not the Ray version of examples/rayjob.yaml", m)
	}
}

// guideProblems compares the manual steps of markdown with guide: the
// harness's commands in order, argument for argument, and nothing else but
// userOnly commands and the namespace's assignment.
func guideProblems(t *testing.T, markdown string, guide []kind.Command) []string {
	t.Helper()
	var probs []string
	next := 0
	for _, c := range readmeCommands(t, markdown, manualHeading) {
		if next < len(guide) {
			g := guide[next]
			if cmp.Equal(c.args, g.Args) && cmp.Equal(c.pipe, g.Pipe, cmpEmpty) && c.stdout == g.Stdout && c.vars == g.Var {
				next++
				continue
			}
		}
		known := c.vars == "" && c.pipe == nil && c.stdout == "" && len(c.args) == 1 && nsAssign.MatchString(c.args[0])
		for _, u := range userOnly {
			if len(c.args) >= len(u.prefix) && cmp.Equal(c.args[:len(u.prefix)], u.prefix) && cmp.Equal(c.pipe, u.pipe, cmpEmpty) && c.stdout == "" && c.vars == "" {
				known = true
			}
		}
		if !known {
			want := "(all of the harness's commands came before it)"
			if next < len(guide) {
				want = fmt.Sprintf("the harness's next command is\n  %s", guide[next])
			}
			probs = append(probs, fmt.Sprintf("docs/inject.md runs\n  %s\nwhich the harness does not; %s", c.line, want))
		}
	}
	if next < len(guide) {
		probs = append(probs, fmt.Sprintf("docs/inject.md lacks the harness's command\n  %s\n(or gives it in another form or order)", guide[next]))
	}
	return probs
}

// readmeSection is the markdown section that starts with heading.
func readmeSection(t *testing.T, markdown, heading string) string {
	t.Helper()
	i := strings.Index(markdown, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README has no %q section", heading)
	}
	section := markdown[i+1:]
	if j := strings.Index(section[len(heading):], "\n## "); j >= 0 {
		section = section[:len(heading)+j]
	}
	return section
}

// TestPrepullExampleIsTheHarnesss: examples/prepull.yaml, which the docs
// tell users to apply, is the DaemonSet the harness writes for
// examples/rayjob.yaml (kind.Prepull, which the harness applies with the
// images under test).
func TestPrepullExampleIsTheHarnesss(t *testing.T) {
	b, err := os.ReadFile("../../examples/prepull.yaml")
	if err != nil {
		t.Fatal(err)
	}
	job, err := os.ReadFile("../../examples/rayjob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	harness, err := kind.Prepull(job, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(harness), string(b)); diff != "" {
		t.Errorf("examples/prepull.yaml differs from the harness's DaemonSet for examples/rayjob.yaml (-harness +example):\n%s", diff)
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

// TestReadmeCheckCatchesDrift proves the manual steps' check can fail: the
// parser reads the doc's forms as the harness's commands, and a doc that
// drops a -n "$NS", looks up any head Pod of the namespace or pipes where
// the harness does not is reported.
func TestReadmeCheckCatchesDrift(t *testing.T) {
	md := manualHeading + "\n```\n" +
		"kubectl apply --server-side -k 'github.com/ray-project/kuberay/ray-operator/config/default?ref=v1.4.2'\n" +
		"CLUSTER=$(kubectl get -n \"$NS\" -f rayjob-debug.yaml -o jsonpath='{.status.rayClusterName}')\n" +
		"HEAD=$(kubectl get pod -n \"$NS\" -l \"ray.io/cluster=$CLUSTER,ray.io/node-type=head\" -o jsonpath='{.items[0].metadata.name}')\n" +
		"kubectl wait -n \"$NS\" --for=condition=Ready \"pod/$HEAD\" \\\n  --timeout=20m\n" +
		"imagectl inject -f rayjob.yaml --secret-file secret.yaml\n" +
		"imagectl inject -f rayjob.yaml --secret-file secret.yaml > rayjob-debug.yaml\n```\n```python\nprint(1)\n```\n## Next\n```\nkubectl nothing\n```\n"
	got := readmeCommands(t, md, manualHeading)
	if len(got) != 6 {
		t.Fatalf("%d commands: %+v", len(got), got)
	}
	guide := kind.Guide(kind.KubeRayNewest)
	if cmp.Equal(got[0].args, guide[0].Args) {
		t.Error("a doc installing KubeRay 1.4.2 matches the harness's install")
	}
	cluster, head, wait, inject := guide[len(guide)-3], guide[len(guide)-2], guide[len(guide)-1], guide[2]
	if !cmp.Equal(got[1].args, cluster.Args) || got[1].vars != "CLUSTER" {
		t.Errorf("CLUSTER line parsed as %+v, want %v", got[1], cluster)
	}
	if !cmp.Equal(got[2].args, head.Args) || got[2].vars != "HEAD" {
		t.Errorf("HEAD line parsed as %+v, want %v", got[2], head)
	}
	if !cmp.Equal(got[3].args, wait.Args) {
		t.Errorf("continued line parsed as %q, want %q", got[3].args, wait.Args)
	}
	if !cmp.Equal(got[4].args, inject.Args) || got[4].stdout == inject.Stdout {
		t.Errorf("inject without > %s: %+v vs %v", inject.Stdout, got[4], inject)
	}
	if !cmp.Equal(got[5].args, inject.Args) || got[5].stdout != inject.Stdout {
		t.Errorf("inject with > %s parsed as %+v", inject.Stdout, got[5])
	}

	// The committed doc passes; each edit of it is reported.
	b, err := os.ReadFile("../../docs/inject.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if p := guideProblems(t, doc, guide); len(p) != 0 {
		t.Fatalf("the committed docs/inject.md: %q", p)
	}
	for _, e := range []struct{ name, old, new, want string }{
		{"no -n on the Secret", `kubectl apply --server-side -n "$NS" -f secret.yaml`, "kubectl apply --server-side -f secret.yaml", "kubectl apply --server-side -f secret.yaml\nwhich the harness does not"},
		{"any head Pod of the namespace", `-l "ray.io/cluster=$CLUSTER,ray.io/node-type=head"`, "-l ray.io/node-type=head", "ray.io/node-type=head -o jsonpath"},
		{"plugin without -n", `kubectl ray job submit -n "$NS" -f`, "kubectl ray job submit -f", "kubectl ray job submit -f rayjob-debug.yaml"},
		{"password read without -n", `kubectl get secret -n "$NS" code-server-password`, "kubectl get secret code-server-password", "kubectl get secret code-server-password"},
		{"a namespace the harness cannot take", "NS=default\n", "NS=$(whoami)\n", "NS=$(whoami)"},
	} {
		if !strings.Contains(doc, e.old) {
			t.Fatalf("%s: docs/inject.md has no %q", e.name, e.old)
		}
		p := strings.Join(guideProblems(t, strings.Replace(doc, e.old, e.new, 1), guide), "\n")
		if !strings.Contains(p, e.want) {
			t.Errorf("%s: problems %q do not name %q", e.name, p, e.want)
		}
	}
}

// TestSmokeWorkflow: the smoke workflow runs the oldest and the newest
// KubeRay the harness pins, each with the kubectl ray plugin of its release
// (pinned, checksummed) and the Ray CLI, fails on a skip, runs imagectl
// debug after the manual steps, and loads no image into kind.
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
	var ran, plugin, rayCLI bool
	for _, s := range job.Steps {
		if strings.Contains(s.Run, "kubectl-ray.tar.gz") {
			plugin = true
			for _, v := range job.Strategy.Matrix["kuberay"] {
				version, err := kind.KubeRayVersion(v)
				if err != nil {
					continue
				}
				rel, ok := kind.PluginReleases[version]
				if !ok {
					t.Errorf("no kubectl ray plugin pinned for KubeRay %s", version)
					continue
				}
				if want := v + ") url=" + rel.URL + " sum=" + rel.SHA256 + " ;;"; !strings.Contains(s.Run, want) {
					t.Errorf("the plugin step does not install %q", want)
				}
			}
			for _, want := range []string{`sha256sum -c -`, "install -m 0755"} {
				if !strings.Contains(s.Run, want) {
					t.Errorf("the plugin step does not run %q", want)
				}
			}
			if s.Env["KUBERAY"] != "${{ matrix.kuberay }}" {
				t.Errorf("the plugin step's KUBERAY is %q", s.Env["KUBERAY"])
			}
		}
		if strings.Contains(s.Run, `pip" install "ray[default]==$RAY"`) {
			rayCLI = s.Env["RAY"] == "${{ inputs.ray }}"
		}
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
			// The harness runs imagectl debug after the manual steps.
			if s.Env["IMAGECTL_SMOKE_DEBUG"] != "1" {
				t.Errorf("TestSmoke step env %v: want IMAGECTL_SMOKE_DEBUG=1 (the harness then runs imagectl debug too)", s.Env)
			}
		}
	}
	if !ran {
		t.Error("no step runs TestSmoke")
	}
	if !plugin {
		t.Error("no step installs the kubectl ray plugin")
	}
	if !rayCLI {
		t.Error(`no step installs the Ray CLI with pip install "ray[default]==$RAY" at RAY=${{ inputs.ray }}`)
	}
	for version, rel := range kind.PluginReleases {
		if want := "/v" + version + "/kubectl-ray_v" + version + "_linux_amd64.tar.gz"; rel.Version != "v"+version || !strings.HasSuffix(rel.URL, want) ||
			!regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(rel.SHA256) {
			t.Errorf("plugin pin for KubeRay %s: %+v", version, rel)
		}
	}
}
