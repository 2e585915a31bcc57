package workflowstest

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// catalogState is what catalog.json in a job's workspace holds.
type catalogState string

const (
	noCatalog        catalogState = "no catalog.json"
	committedCatalog catalogState = "the committed catalog.json"
	refreshedCatalog catalogState = "a refreshed catalog.json whose new extension files are not pinned"
	pinnedCatalog    catalogState = "a catalog.json with its extension files pinned"
)

type uploaded struct {
	state catalogState
	// producer is file#job of the job that uploaded it: a job may use it
	// only when it needs that job.
	producer string
}

// releaseStep is one step that runs imagectl release, and the catalog it
// releases from.
type releaseStep struct {
	where string
	state catalogState
}

// workflowRun follows one run of a workflow under one trigger, through the
// reusable workflows it calls, and records what catalog every imagectl
// release step sees. It models only what decides that: checkout (the
// committed catalog), imagectl matrix refresh and extensions pin, and the
// upload and download of catalog.json as an artifact. Every job whose
// condition holds succeeds.
type workflowRun struct {
	load      func(file string) (workflow, error)
	artifacts map[string]uploaded
	releases  []releaseStep
}

// callInputs is the inputs context of a workflow run by trigger: the
// declared defaults (workflow_dispatch, workflow_call), overridden by what
// a caller passes. A required input the caller does not pass is an error.
func callInputs(w workflow, trigger string, with map[string]any) (map[string]any, error) {
	spec, _ := w.On[trigger].(map[string]any)
	declared, _ := spec["inputs"].(map[string]any)
	inputs := map[string]any{}
	for name, d := range declared {
		m, _ := d.(map[string]any)
		switch def, ok := m["default"]; {
		case ok:
			inputs[name] = def
		case m["type"] == "boolean":
			inputs[name] = false
		default:
			inputs[name] = ""
		}
		if _, passed := with[name]; trigger == "workflow_call" && m["required"] == true && !passed {
			return nil, fmt.Errorf("input %s is required and not passed", name)
		}
	}
	for name, v := range with {
		if _, ok := declared[name]; !ok {
			return nil, fmt.Errorf("input %s is passed but not declared under on.%s.inputs", name, trigger)
		}
		inputs[name] = v
	}
	return inputs, nil
}

// jobOrder returns the jobs of w so that each comes after the jobs it
// needs, and each job's transitive needs.
func jobOrder(w workflow) ([]string, map[string]map[string]bool, error) {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range w.Jobs {
			if !yield(n) {
				return
			}
		}
	})
	anc := map[string]map[string]bool{}
	var order []string
	for len(order) < len(names) {
		// One pass is one wave of jobs that may run in parallel: each needs
		// only jobs of earlier waves.
		var wave []string
		for _, n := range names {
			if anc[n] != nil {
				continue
			}
			ready := true
			for _, d := range w.Jobs[n].needs() {
				if anc[d] == nil {
					ready = false
				}
			}
			if ready {
				wave = append(wave, n)
			}
		}
		if len(wave) == 0 {
			return nil, nil, fmt.Errorf("jobs %v: a needs cycle or an unknown job", names)
		}
		for _, n := range wave {
			a := map[string]bool{}
			for _, d := range w.Jobs[n].needs() {
				a[d] = true
				for x := range anc[d] {
					a[x] = true
				}
			}
			anc[n] = a
			order = append(order, n)
		}
	}
	return order, anc, nil
}

var statusFuncs = []string{"success(", "failure(", "always(", "cancelled("}

// condition is the value of an if: as GitHub decides it: without a status
// function, success() && (expr).
func condition(expr string, env exprEnv) (bool, error) {
	if strings.TrimSpace(expr) == "" {
		return env.status["success"], nil
	}
	v, err := evalExpr(expr, env)
	if err != nil {
		return false, err
	}
	for _, f := range statusFuncs {
		if strings.Contains(expr, f) {
			return truthy(v), nil
		}
	}
	return env.status["success"] && truthy(v), nil
}

// simulate runs file with inputs. trail names the run for messages; outer
// are the jobs (file#job) that finished before the calling job started.
func (r *workflowRun) simulate(file string, inputs map[string]any, trail string, outer map[string]bool) error {
	w, err := r.load(file)
	if err != nil {
		return err
	}
	order, anc, err := jobOrder(w)
	if err != nil {
		return fmt.Errorf("%s: %w", trail, err)
	}
	results := map[string]jobRun{}
	for _, name := range order {
		j := w.Jobs[name]
		where := trail + " > job " + name
		env := exprEnv{inputs: inputs, needs: map[string]jobRun{}, status: map[string]bool{"success": true, "failure": false, "always": true, "cancelled": false}}
		for _, d := range j.needs() {
			env.needs[d] = results[d]
		}
		for a := range anc[name] {
			if results[a].result != "success" {
				env.status["success"] = false
			}
		}
		run, err := condition(j.If, env)
		if err != nil {
			return fmt.Errorf("%s: if: %w", where, err)
		}
		if !run {
			results[name] = jobRun{result: "skipped"}
			continue
		}
		done := copySet(outer)
		for a := range anc[name] {
			done[file+"#"+a] = true
		}
		key := file + "#" + name
		if j.Uses != "" {
			if err := r.call(j, env, where, key, done); err != nil {
				return err
			}
			results[name] = jobRun{result: "success", outputs: map[string]any{}}
			continue
		}
		if err := r.steps(j, env, where, key, done); err != nil {
			return err
		}
		outs := map[string]any{}
		for k, v := range j.Outputs {
			if outs[k], err = interpolate(v, env); err != nil {
				return fmt.Errorf("%s: output %s: %w", where, k, err)
			}
		}
		results[name] = jobRun{result: "success", outputs: outs}
	}
	return nil
}

func copySet(m map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// call runs the reusable workflow job j calls; the artifacts it uploads
// count as uploaded by the calling job.
func (r *workflowRun) call(j job, env exprEnv, where, key string, done map[string]bool) error {
	if !strings.HasPrefix(j.Uses, "./.github/workflows/") {
		return fmt.Errorf("%s calls %s: only this repository's workflows are followed", where, j.Uses)
	}
	file := strings.TrimPrefix(j.Uses, "./.github/workflows/")
	with := map[string]any{}
	for k, v := range j.With {
		var err error
		if with[k], err = interpolate(v, env); err != nil {
			return fmt.Errorf("%s: with.%s: %w", where, k, err)
		}
	}
	callee, err := r.load(file)
	if err != nil {
		return err
	}
	inputs, err := callInputs(callee, "workflow_call", with)
	if err != nil {
		return fmt.Errorf("%s calls %s: %w", where, file, err)
	}
	before := copySet(nil)
	for n := range r.artifacts {
		before[n] = true
	}
	if err := r.simulate(file, inputs, where+" > "+file, done); err != nil {
		return err
	}
	for n, a := range r.artifacts {
		if !before[n] {
			a.producer = key
			r.artifacts[n] = a
		}
	}
	return nil
}

// steps follows the steps of j that touch catalog.json.
func (r *workflowRun) steps(j job, env exprEnv, where, key string, done map[string]bool) error {
	state := noCatalog
	for i, s := range j.Steps {
		at := fmt.Sprintf("%s step %d %q", where, i, s.Name)
		action, _, _ := strings.Cut(s.Uses, "@")
		cmds := imagectlCommands(s.Run)
		touches := action == "actions/checkout" || action == "actions/download-artifact" ||
			action == "actions/upload-artifact" && s.With["path"] == "catalog.json" || len(cmds) > 0
		if !touches {
			continue
		}
		run, err := condition(s.If, env)
		if err != nil {
			return fmt.Errorf("%s: if: %w", at, err)
		}
		if !run {
			continue
		}
		switch action {
		case "actions/checkout":
			state = committedCatalog
			continue
		case "actions/download-artifact", "actions/upload-artifact":
			v, err := interpolate(s.With["name"], env)
			if err != nil {
				return fmt.Errorf("%s: name: %w", at, err)
			}
			name, _ := v.(string)
			if name == "" {
				return fmt.Errorf("%s: no artifact name", at)
			}
			if action == "actions/upload-artifact" {
				if _, dup := r.artifacts[name]; dup {
					return fmt.Errorf("%s: artifact %s is uploaded twice in one run", at, name)
				}
				r.artifacts[name] = uploaded{state: state, producer: key}
				continue
			}
			// A job sees an artifact only once the job that uploads it has
			// finished: it must need that job (or be called by one that does).
			a, ok := r.artifacts[name]
			if !ok || a.producer != "" && !done[a.producer] {
				return fmt.Errorf("%s downloads artifact %q, which no job it needs uploaded", at, name)
			}
			if p, _ := s.With["path"].(string); p == "." || p == "" {
				state = a.state
			}
			continue
		}
		for _, c := range cmds {
			switch {
			case c == "release":
				r.releases = append(r.releases, releaseStep{where: at, state: state})
			case state == noCatalog:
				return fmt.Errorf("%s runs imagectl %s before any checkout", at, c)
			case c == "matrix refresh":
				state = refreshedCatalog
			case c == "extensions pin":
				state = pinnedCatalog
			}
		}
	}
	return nil
}

// imagectlCommands returns the imagectl commands of a script that change
// or read the catalog's pins, in the order they appear.
func imagectlCommands(script string) []string {
	type at struct {
		pos int
		cmd string
	}
	var found []at
	for _, c := range []string{"matrix refresh", "extensions pin", "release"} {
		for off := 0; ; {
			i := strings.Index(script[off:], "imagectl "+c)
			if i < 0 {
				break
			}
			found = append(found, at{off + i, c})
			off += i + 1
		}
	}
	sort.Slice(found, func(a, b int) bool { return found[a].pos < found[b].pos })
	var out []string
	for _, f := range found {
		out = append(out, f.cmd)
	}
	return out
}

// releasePaths runs every trigger of every workflow (workflow_call through
// its callers) and returns, per run, the release steps it reaches.
func releasePaths(load func(string) (workflow, error), files []string) (map[string][]releaseStep, error) {
	out := map[string][]releaseStep{}
	for _, file := range files {
		w, err := load(file)
		if err != nil {
			return nil, err
		}
		for trigger := range w.On {
			if trigger == "workflow_call" {
				continue
			}
			inputs := map[string]any{}
			if trigger == "workflow_dispatch" {
				if inputs, err = callInputs(w, trigger, nil); err != nil {
					return nil, fmt.Errorf("%s (%s): %w", file, trigger, err)
				}
			}
			name := file + " (" + trigger + ")"
			r := &workflowRun{load: load, artifacts: map[string]uploaded{}}
			if err := r.simulate(file, inputs, name, nil); err != nil {
				return nil, err
			}
			out[name] = r.releases
		}
	}
	return out, nil
}

// TestEveryReleasePathHasPins follows every trigger of every workflow,
// through the reusable workflows it calls, to each step that runs imagectl
// release (which requires every extension file pinned): a tag, a manual
// dispatch and the weekly rebuild must each release from a catalog that was
// refreshed and pinned before it, never from the committed one.
func TestEveryReleasePathHasPins(t *testing.T) {
	load := func(file string) (workflow, error) { return loadWorkflow(t, file), nil }
	files, err := filepath.Glob(filepath.Join(workflowDir, "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	paths, err := releasePaths(load, names)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"release.yml (push)", "release.yml (workflow_dispatch)", "rebuild.yml (schedule)", "rebuild.yml (workflow_dispatch)"} {
		if len(paths[want]) == 0 {
			t.Errorf("%s reaches no imagectl release step", want)
		}
	}
	for _, steps := range paths {
		for _, s := range steps {
			if s.state != pinnedCatalog {
				t.Errorf("%s releases from %s", s.where, s.state)
				continue
			}
			t.Logf("%s releases from %s", s.where, s.state)
		}
	}
}

// TestReleasePathsModel checks the model on small workflows: each case is
// a set of files and the catalog every release step sees, or the error.
func TestReleasePathsModel(t *testing.T) {
	const (
		checkout = "actions/checkout@1111111111111111111111111111111111111111"
		up       = "actions/upload-artifact@2222222222222222222222222222222222222222"
		down     = "actions/download-artifact@3333333333333333333333333333333333333333"
	)
	release := step{Name: "release", Run: "bin/imagectl release --require-pins"}
	refresh := step{Name: "refresh", Run: "bin/imagectl matrix refresh"}
	pin := step{Name: "pin", Run: "bin/imagectl extensions pin"}
	upload := step{Name: "upload", Uses: up, With: map[string]any{"name": "catalog", "path": "catalog.json"}}
	download := func(name string) step {
		return step{Name: "download", Uses: down, With: map[string]any{"name": name, "path": "."}}
	}
	on := func(triggers ...string) map[string]any {
		m := map[string]any{}
		for _, tr := range triggers {
			m[tr] = nil
		}
		return m
	}
	callOn := map[string]any{
		"push": nil,
		"workflow_call": map[string]any{"inputs": map[string]any{
			"catalog-artifact": map[string]any{"required": false, "type": "string", "default": ""},
		}},
	}
	for _, tc := range []struct {
		name    string
		files   map[string]workflow
		want    map[string][]catalogState
		wantErr string
	}{
		{
			name: "release from the committed catalog",
			files: map[string]workflow{"a.yml": {On: on("push"), Jobs: map[string]job{
				"build": {Steps: []step{{Uses: checkout}, release}},
			}}},
			want: map[string][]catalogState{"a.yml (push)": {committedCatalog}},
		},
		{
			name: "refresh without pin",
			files: map[string]workflow{"a.yml": {On: on("push"), Jobs: map[string]job{
				"build": {Steps: []step{{Uses: checkout}, refresh, release}},
			}}},
			want: map[string][]catalogState{"a.yml (push)": {refreshedCatalog}},
		},
		{
			name: "refresh and pin in another job, passed as an artifact",
			files: map[string]workflow{"a.yml": {On: on("push"), Jobs: map[string]job{
				"catalog": {Steps: []step{{Uses: checkout}, refresh, pin, upload}},
				"build":   {Needs: "catalog", Steps: []step{{Uses: checkout}, download("${{ needs.catalog.outputs.name }}"), release}},
			}}},
			wantErr: "no artifact name",
		},
		{
			name: "the artifact of a job not needed",
			files: map[string]workflow{"a.yml": {On: on("push"), Jobs: map[string]job{
				"catalog": {Steps: []step{{Uses: checkout}, refresh, pin, upload}},
				"build":   {Steps: []step{{Uses: checkout}, download("catalog"), release}},
			}}},
			wantErr: "which no job it needs uploaded",
		},
		{
			name: "pinned artifact, and a checkout after it",
			files: map[string]workflow{"a.yml": {On: on("push"), Jobs: map[string]job{
				"catalog": {Outputs: map[string]string{"name": "catalog"}, Steps: []step{{Uses: checkout}, refresh, pin, upload}},
				"build":   {Needs: "catalog", Steps: []step{{Uses: checkout}, download("${{ needs.catalog.outputs.name }}"), release}},
				"late":    {Needs: []any{"catalog"}, Steps: []step{download("catalog"), {Uses: checkout}, release}},
			}}},
			want: map[string][]catalogState{"a.yml (push)": {pinnedCatalog, committedCatalog}},
		},
		{
			name: "a step condition on the caller's input",
			files: map[string]workflow{
				"caller.yml": {On: on("schedule"), Jobs: map[string]job{
					"plan":    {Steps: []step{{Uses: checkout}, refresh, pin, upload}},
					"release": {Needs: "plan", Uses: "./.github/workflows/rel.yml", With: map[string]any{"catalog-artifact": "catalog"}},
				}},
				"rel.yml": {On: callOn, Jobs: map[string]job{
					"build": {Steps: []step{{Uses: checkout}, {Name: "download", If: "${{ inputs.catalog-artifact != '' }}", Uses: down, With: map[string]any{"name": "${{ inputs.catalog-artifact }}", "path": "."}}, release}},
				}},
			},
			want: map[string][]catalogState{"caller.yml (schedule)": {pinnedCatalog}, "rel.yml (push)": {committedCatalog}},
		},
		{
			name: "a skipped job",
			files: map[string]workflow{"a.yml": {On: on("push"), Jobs: map[string]job{
				"catalog": {If: "${{ inputs.catalog-artifact != '' }}", Steps: []step{{Uses: checkout}, refresh, pin, upload}},
				"build":   {Needs: "catalog", Steps: []step{{Uses: checkout}, download("catalog"), release}},
			}}},
			want: map[string][]catalogState{"a.yml (push)": nil},
		},
		{
			name: "a required input not passed",
			files: map[string]workflow{
				"caller.yml": {On: on("schedule"), Jobs: map[string]job{
					"release": {Uses: "./.github/workflows/rel.yml"},
				}},
				"rel.yml": {On: map[string]any{"workflow_call": map[string]any{"inputs": map[string]any{
					"entry": map[string]any{"required": true, "type": "string"},
				}}}, Jobs: map[string]job{"build": {Steps: []step{{Uses: checkout}, release}}}},
			},
			wantErr: "input entry is required and not passed",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			load := func(file string) (workflow, error) {
				w, ok := tc.files[file]
				if !ok {
					return workflow{}, fmt.Errorf("no workflow %s", file)
				}
				return w, nil
			}
			got, err := releasePaths(load, slices.Sorted(func(yield func(string) bool) {
				for f := range tc.files {
					if !yield(f) {
						return
					}
				}
			}))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("releasePaths error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			states := map[string][]catalogState{}
			for run, steps := range got {
				states[run] = nil
				for _, s := range steps {
					states[run] = append(states[run], s.state)
				}
			}
			if diff := cmp.Diff(tc.want, states); diff != "" {
				t.Errorf("catalog per release step (-want +got):\n%s", diff)
			}
		})
	}
}
