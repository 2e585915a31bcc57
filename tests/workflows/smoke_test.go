package workflowstest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/release"
)

// exprPath returns the dotted path of a value that is exactly one
// expression naming a context property (`${{ needs.build.outputs.ray }}`
// gives [needs build outputs ray]), or nil.
func exprPath(v any) []string {
	s, _ := v.(string)
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "${{") || !strings.HasSuffix(s, "}}") {
		return nil
	}
	inner := strings.TrimSpace(s[len("${{") : len(s)-len("}}")])
	parts := strings.Split(inner, ".")
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, " \t()'\"|&!=<>[]") {
			return nil
		}
	}
	return parts
}

// stepOutput is where a called workflow's input comes from: output key of
// the step with id step in job job of the caller.
type stepOutput struct {
	job, step, key string
}

// traceCallInput follows the input `in` of the call made by job caller of
// w: the call must pass it as `${{ needs.J.outputs.O }}` of a job J it
// needs, and J must set O from `${{ steps.S.outputs.K }}` of one of its own
// steps.
func traceCallInput(w workflow, caller, in string) (stepOutput, error) {
	c := w.Jobs[caller]
	p := exprPath(c.With[in])
	if len(p) != 4 || p[0] != "needs" || p[2] != "outputs" {
		return stepOutput{}, fmt.Errorf("job %s passes input %s as %v, want ${{ needs.<job>.outputs.<name> }}", caller, in, c.With[in])
	}
	if !strings.Contains(","+strings.Join(c.needs(), ",")+",", ","+p[1]+",") {
		return stepOutput{}, fmt.Errorf("job %s passes %s from job %s, which it does not need", caller, in, p[1])
	}
	producer, ok := w.Jobs[p[1]]
	if !ok {
		return stepOutput{}, fmt.Errorf("job %s passes %s from unknown job %s", caller, in, p[1])
	}
	q := exprPath(producer.Outputs[p[3]])
	if len(q) != 4 || q[0] != "steps" || q[2] != "outputs" {
		return stepOutput{}, fmt.Errorf("job %s output %s = %q, want ${{ steps.<id>.outputs.<name> }}", p[1], p[3], producer.Outputs[p[3]])
	}
	for _, s := range producer.Steps {
		if s.ID == q[1] {
			return stepOutput{job: p[1], step: q[1], key: q[3]}, nil
		}
	}
	return stepOutput{}, fmt.Errorf("job %s output %s names step %s, which the job does not have", p[1], p[3], q[1])
}

// TestReleaseSmokesTheEntryAtItsRayAndPython follows release.yml's call of
// smoke.yml: every input smoke.yml declares is passed from an output of the
// build job, Ray and Python from the step that picks the entry the build
// releases, and that step, run on a catalog of two sets, gives the Ray and
// Python of the entry it was asked for: the entry rebuild.yml passes from
// its plan's matrix, the newest (a tag) or the newest of a Ray (dispatch).
func TestReleaseSmokesTheEntryAtItsRayAndPython(t *testing.T) {
	w := loadWorkflow(t, "release.yml")
	sm := loadWorkflow(t, "smoke.yml")
	var caller string
	for name, j := range w.Jobs {
		if j.Uses == "./.github/workflows/smoke.yml" {
			caller = name
		}
	}
	if caller == "" {
		t.Fatal("release.yml calls no ./.github/workflows/smoke.yml")
	}
	call, _ := sm.On["workflow_call"].(map[string]any)
	inputs, _ := call["inputs"].(map[string]any)
	for _, in := range []string{"image", "ray", "python"} {
		if _, ok := inputs[in]; !ok {
			t.Errorf("smoke.yml has no workflow_call input %s", in)
		}
	}
	from := map[string]stepOutput{}
	for in := range inputs {
		src, err := traceCallInput(w, caller, in)
		if err != nil {
			t.Errorf("smoke input %s: %v", in, err)
			continue
		}
		from[in] = src
	}
	// The smoke job reads the inputs it is given.
	var smokeText strings.Builder
	for _, j := range sm.Jobs {
		for _, s := range j.Steps {
			smokeText.WriteString(s.Run)
			for _, v := range s.Env {
				smokeText.WriteString(v + "\n")
			}
		}
	}
	for _, in := range []string{"ray", "python"} {
		if !strings.Contains(smokeText.String(), "inputs."+in) {
			t.Errorf("no step of smoke.yml reads inputs.%s", in)
		}
	}
	ray, python := from["ray"], from["python"]
	if ray.step == "" || python.step == "" {
		t.FailNow()
	}
	if ray.job != python.job || ray.step != python.step {
		t.Fatalf("Ray comes from %+v, Python from %+v: want one step that picks the entry", ray, python)
	}
	pick := findStep(t, w.Jobs[ray.job], ray.step)
	// The release step of the same job releases the entry that step picked.
	var released bool
	for _, s := range w.Jobs[ray.job].Steps {
		if strings.Contains(s.Run, "imagectl release") {
			released = true
			if got := exprPath(s.Env["ENTRY"]); !cmp.Equal(got, []string{"steps", ray.step, "outputs", "entry"}) || !strings.Contains(s.Run, `--only "$ENTRY"`) {
				t.Errorf("job %s step %q releases ENTRY=%q: want --only \"$ENTRY\" with ENTRY=${{ steps.%s.outputs.entry }}", ray.job, s.Name, s.Env["ENTRY"], ray.step)
			}
		}
	}
	if !released {
		t.Errorf("job %s, which gives smoke its Ray and Python, releases nothing", ray.job)
	}
	if got := exprPath(pick.Env["ENTRY"]); !cmp.Equal(got, []string{"inputs", "entry"}) {
		t.Errorf("step %s takes ENTRY from %q, want ${{ inputs.entry }} (the entry rebuild.yml asks for)", ray.step, pick.Env["ENTRY"])
	}

	sets := []imagespec.Set{
		{CodeServer: imagespec.CodeServer{Version: "4.103.1"}, Ray: "2.52.0", Python: "3.13"},
		{CodeServer: imagespec.CodeServer{Version: "4.103.1"}, Ray: "2.48.0", Python: "3.11"},
	}
	// rebuild.yml calls release.yml once per entry of its plan's matrix,
	// with that entry's name: what `imagectl plan --output github` writes
	// under "entry".
	rb := loadWorkflow(t, "rebuild.yml")
	for name, j := range rb.Jobs {
		if j.Uses != "./.github/workflows/release.yml" {
			continue
		}
		if got := exprPath(j.With["entry"]); !cmp.Equal(got, []string{"matrix", "entry"}) {
			t.Errorf("rebuild.yml job %s passes entry %q, want ${{ matrix.entry }}", name, j.With["entry"])
		}
		if m, _ := j.Strategy["matrix"].(string); !strings.Contains(m, "fromJSON(needs.") {
			t.Errorf("rebuild.yml job %s matrix = %q, want fromJSON of the plan job's output", name, j.Strategy["matrix"])
		}
	}
	var matrix strings.Builder
	plan := &release.Plan{Entries: []release.Entry{{Name: release.Target{Set: sets[1]}.Name(), Action: release.ActionBuild, Set: sets[1]}}}
	if err := plan.Write(&matrix, release.OutputGitHub); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Include []map[string]any `json:"include"`
	}
	if err := json.Unmarshal([]byte(matrix.String()), &m); err != nil || len(m.Include) != 1 {
		t.Fatalf("plan --output github wrote %q (%v), want one include", matrix.String(), err)
	}
	planEntry, _ := m.Include[0]["entry"].(string)

	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq not installed: the entry step's script is not run")
	}
	for _, tc := range []struct {
		name, entry, ray string
		want             map[string]string
	}{
		{
			name:  "entry of the plan (rebuild.yml)",
			entry: planEntry,
			want:  map[string]string{"entry": release.Target{Set: sets[1]}.Name(), ray.key: "2.48.0", python.key: "3.11"},
		},
		{
			name: "newest entry (tag)",
			want: map[string]string{"entry": release.Target{Set: sets[0]}.Name(), ray.key: "2.52.0", python.key: "3.13"},
		},
		{
			name: "a Ray version (dispatch)",
			ray:  "2.48.0",
			want: map[string]string{"entry": release.Target{Set: sets[1]}.Name(), ray.key: "2.48.0", python.key: "3.11"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runPickStep(t, pick.Run, sets, map[string]string{"ENTRY": tc.entry, "RAY": tc.ray})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("step %s outputs (-want +got):\n%s", ray.step, diff)
			}
		})
	}
	t.Run("unknown entry", func(t *testing.T) {
		if got, err := runPickStep(t, pick.Run, sets, map[string]string{"ENTRY": "4.103.1-ray9.9.9-py3.12"}); err == nil {
			t.Errorf("step %s accepted an entry the catalog does not have: %v", ray.step, got)
		}
	})
}

func findStep(t *testing.T, j job, id string) step {
	t.Helper()
	for _, s := range j.Steps {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no step with id %s", id)
	return step{}
}

// runPickStep runs script with bash -e (GitHub's default shell) in a
// directory whose bin/imagectl answers `matrix list --output json` with
// sets, and returns what it wrote to $GITHUB_OUTPUT.
func runPickStep(t *testing.T, script string, sets []imagespec.Set, env map[string]string) (map[string]string, error) {
	t.Helper()
	dir := t.TempDir()
	list, err := json.Marshal(struct {
		Sets []imagespec.Set `json:"sets"`
	}{sets})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sets.json"), list, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\n" +
		`if [ "$*" = "matrix list --output json" ]; then exec cat "$(dirname "$0")/../sets.json"; fi` + "\n" +
		`echo "unexpected: imagectl $*" >&2; exit 2` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "imagectl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "github_output")
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GITHUB_OUTPUT="+out)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, b)
	}
	f, err := os.Open(out)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	got := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			return nil, fmt.Errorf("$GITHUB_OUTPUT line %q is not key=value", sc.Text())
		}
		got[k] = v
	}
	return got, sc.Err()
}
