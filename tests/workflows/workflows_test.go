package workflowstest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// workflow is the part of a GitHub Actions workflow the checks read.
type workflow struct {
	Name        string         `yaml:"name"`
	On          map[string]any `yaml:"on"`
	Permissions map[string]any `yaml:"permissions"`
	Env         map[string]any `yaml:"env"`
	Jobs        map[string]job `yaml:"jobs"`
}

type job struct {
	RunsOn      any               `yaml:"runs-on"`
	Uses        string            `yaml:"uses"`
	Needs       any               `yaml:"needs"`
	If          string            `yaml:"if"`
	Permissions map[string]any    `yaml:"permissions"`
	With        map[string]any    `yaml:"with"`
	Secrets     any               `yaml:"secrets"`
	Strategy    map[string]any    `yaml:"strategy"`
	Outputs     map[string]string `yaml:"outputs"`
	Steps       []step            `yaml:"steps"`
}

type step struct {
	ID   string            `yaml:"id"`
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	If   string            `yaml:"if"`
	With map[string]any    `yaml:"with"`
	Env  map[string]string `yaml:"env"`
}

const workflowDir = "../../.github/workflows"

func loadWorkflow(t *testing.T, file string) workflow {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(workflowDir, file))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	// Not KnownFields: the workflow schema is far larger than what is read here.
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return w
}

func (j job) needs() []string {
	switch n := j.Needs.(type) {
	case string:
		return []string{n}
	case []any:
		var out []string
		for _, v := range n {
			out = append(out, v.(string))
		}
		return out
	}
	return nil
}

var (
	secretInRun = regexp.MustCompile(`\$\{\{\s*secrets\.`)
	echoSecret  = regexp.MustCompile(`(?i)(echo|printf|cat)\b[^\n]*(TOKEN|PASSWORD|SECRET|COSIGN_KEY)`)
)

// TestWorkflows decodes every workflow strictly and checks the invariants
// release depends on.
func TestWorkflows(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(workflowDir, "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ci.yml", "release.yml", "rebuild.yml"} {
		if _, err := os.Stat(filepath.Join(workflowDir, want)); err != nil {
			t.Errorf("missing workflow %s", want)
		}
	}
	for _, f := range files {
		file := filepath.Base(f)
		t.Run(file, func(t *testing.T) {
			w := loadWorkflow(t, file)
			if len(w.On) == 0 {
				t.Error("no triggers (on:)")
			}
			if len(w.Jobs) == 0 {
				t.Fatal("no jobs")
			}
			if w.Permissions == nil {
				t.Error("no top-level permissions: the default token would be read-write")
			}
			for name, j := range w.Jobs {
				if (j.RunsOn == nil) == (j.Uses == "") {
					t.Errorf("job %s: needs exactly one of runs-on and uses", name)
				}
				for _, n := range j.needs() {
					if _, ok := w.Jobs[n]; !ok {
						t.Errorf("job %s needs unknown job %s", name, n)
					}
				}
				if j.Uses != "" && strings.HasPrefix(j.Uses, "./") {
					if _, err := os.Stat(filepath.Join("../..", j.Uses)); err != nil {
						t.Logf("job %s calls %s, not written yet: %v", name, j.Uses, err)
					}
				}
				for i, s := range j.Steps {
					if (s.Run == "") == (s.Uses == "") {
						t.Errorf("job %s step %d: needs exactly one of run and uses", name, i)
					}
					if secretInRun.MatchString(s.Run) {
						t.Errorf("job %s step %q: a secret expanded into a shell script (pass it through env)", name, s.Name)
					}
					if echoSecret.MatchString(s.Run) {
						t.Errorf("job %s step %q: prints something secret-looking", name, s.Name)
					}
					if strings.Contains(s.Run, "--keyless") && !idTokenWrite(w.Permissions, j.Permissions) {
						t.Errorf("job %s signs keylessly without permissions id-token: write", name)
					}
				}
			}
		})
	}
}

func idTokenWrite(workflowPerms, jobPerms map[string]any) bool {
	if jobPerms != nil {
		return jobPerms["id-token"] == "write"
	}
	return workflowPerms["id-token"] == "write"
}

// TestReleaseWorkflowGatesFloatingTags checks the promotion order: floating
// tags move in a job that needs the smoke test and the build, with the
// build's digest as the only acceptable one.
func TestReleaseWorkflowGatesFloatingTags(t *testing.T) {
	w := loadWorkflow(t, "release.yml")
	for _, trig := range []string{"push", "workflow_dispatch", "workflow_call"} {
		if _, ok := w.On[trig]; !ok {
			t.Errorf("release.yml lacks trigger %s", trig)
		}
	}
	build, smoke, promote := w.Jobs["build"], w.Jobs["smoke"], w.Jobs["promote"]
	if smoke.Uses != "./.github/workflows/smoke.yml" || smoke.With["image"] == nil {
		t.Errorf("smoke job = %+v: want uses ./.github/workflows/smoke.yml with the image input", smoke)
	}
	if !strings.Contains(smoke.With["image"].(string), "needs.build.outputs.image") {
		t.Errorf("smoke tests %v, want the pushed digest (needs.build.outputs.image)", smoke.With["image"])
	}
	if _, err := os.Stat(filepath.Join(workflowDir, "smoke.yml")); err == nil {
		sm := loadWorkflow(t, "smoke.yml")
		call, _ := sm.On["workflow_call"].(map[string]any)
		inputs, _ := call["inputs"].(map[string]any)
		if _, ok := inputs["image"]; !ok {
			t.Errorf("smoke.yml has no workflow_call input image (release.yml passes the pushed digest there)")
		}
		for in, spec := range inputs {
			if m, _ := spec.(map[string]any); m["required"] == true && smoke.With[in] == nil {
				t.Errorf("smoke.yml requires input %s, which release.yml does not pass", in)
			}
		}
	}
	needs := strings.Join(promote.needs(), ",")
	for _, n := range []string{"build", "smoke"} {
		if !strings.Contains(needs, n) {
			t.Errorf("promote needs %s, want it to need %s", needs, n)
		}
	}
	var buildRun, promoteRun string
	for _, s := range build.Steps {
		if strings.Contains(s.Run, "imagectl release") {
			buildRun = s.Run
		}
	}
	for _, s := range promote.Steps {
		if strings.Contains(s.Run, "imagectl release") {
			promoteRun = s.Run
		}
	}
	if !strings.Contains(buildRun, "--no-floating") {
		t.Errorf("build's release step does not hold back floating tags:\n%s", buildRun)
	}
	if !strings.Contains(promoteRun, "--expect-digest") || strings.Contains(promoteRun, "--no-floating") {
		t.Errorf("promote's release step must move floating tags to the tested digest only:\n%s", promoteRun)
	}
	if !strings.Contains(build.RunsOn.(string), "ubuntu") {
		t.Errorf("build runs on %v", build.RunsOn)
	}
	if !strings.Contains(w.Jobs["arm64"].RunsOn.(string), "arm") {
		t.Errorf("arm64 job runs on %v, want a native arm64 runner", w.Jobs["arm64"].RunsOn)
	}
}

func TestRebuildWorkflow(t *testing.T) {
	w := loadWorkflow(t, "rebuild.yml")
	if _, ok := w.On["schedule"]; !ok {
		t.Error("rebuild.yml has no schedule")
	}
	plan, rel := w.Jobs["plan"], w.Jobs["release"]
	var runs string
	for _, s := range plan.Steps {
		runs += s.Run + "\n"
	}
	for _, want := range []string{"imagectl matrix refresh", "imagectl plan --output github", "GITHUB_OUTPUT"} {
		if !strings.Contains(runs, want) {
			t.Errorf("plan job does not run %q", want)
		}
	}
	if plan.Outputs["matrix"] == "" {
		t.Error("plan job has no matrix output")
	}
	if m, _ := rel.Strategy["matrix"].(string); !strings.Contains(m, "fromJSON(needs.plan.outputs.matrix)") {
		t.Errorf("release matrix = %v, want fromJSON of the plan", rel.Strategy["matrix"])
	}
	if !strings.Contains(rel.If, "count") {
		t.Errorf("release job runs on an empty plan (if: %q); an empty matrix is an error on GitHub", rel.If)
	}
	if rel.Uses != "./.github/workflows/release.yml" || rel.Permissions["id-token"] != "write" {
		t.Errorf("release job = uses %q permissions %v: want release.yml with id-token: write", rel.Uses, rel.Permissions)
	}
}

// TestWorkflowsRequirePins checks that no workflow trusts an extension file
// on first use: every step that fetches or builds passes --require-pins, and
// the weekly refresh pins new files (reviewable in its catalog pull request)
// right after refreshing, before anything is planned or released.
func TestWorkflowsRequirePins(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(workflowDir, "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	fetching := regexp.MustCompile(`imagectl\s+(release|build|extensions\s+fetch)\b`)
	seen := 0
	for _, f := range files {
		w := loadWorkflow(t, filepath.Base(f))
		for name, j := range w.Jobs {
			for _, s := range j.Steps {
				if fetching.MatchString(s.Run) {
					seen++
					if !strings.Contains(s.Run, "--require-pins") {
						t.Errorf("%s job %s step %q fetches or builds without --require-pins:\n%s", filepath.Base(f), name, s.Name, s.Run)
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Error("no workflow step fetches or builds: nothing checked")
	}
	var order []string
	for _, s := range loadWorkflow(t, "rebuild.yml").Jobs["plan"].Steps {
		for _, cmd := range []string{"imagectl matrix refresh", "imagectl extensions pin", "imagectl plan"} {
			if strings.Contains(s.Run, cmd) && (len(order) == 0 || order[len(order)-1] != cmd) {
				order = append(order, cmd)
			}
		}
	}
	if want := "imagectl matrix refresh,imagectl extensions pin,imagectl plan"; strings.Join(order, ",") != want {
		t.Errorf("rebuild.yml plan job runs %v, want %s in that order", order, want)
	}
}

// The release workflow's build job runs smoke image (release's default)
// with Docker, after QEMU is set up for every run (the arm64 container is
// emulated even when arm64 is built natively), and nothing turns it off
// there.
func TestReleaseWorkflowSmokesImage(t *testing.T) {
	w := loadWorkflow(t, "release.yml")
	qemu, rel := -1, -1
	var run string
	for i, s := range w.Jobs["build"].Steps {
		if strings.HasPrefix(s.Uses, "docker/setup-qemu-action") {
			qemu = i
			if s.If != "" {
				t.Errorf("the QEMU step runs only if %q; smoke image's arm64 container always needs it", s.If)
			}
		}
		if strings.Contains(s.Run, "imagectl release") {
			rel, run = i, s.Run
		}
	}
	if qemu < 0 || rel < 0 || qemu > rel {
		t.Fatalf("build job: QEMU step %d, release step %d: want QEMU set up before release", qemu, rel)
	}
	if strings.Contains(run, "--smoke-image=false") || !strings.Contains(run, "--smoke-runtime docker") {
		t.Errorf("build's release step must run smoke image with Docker:\n%s", run)
	}
}
