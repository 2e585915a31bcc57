package release

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
)

// The matrix the plan tests start from: two Ray lines on code-server 4.101.2
// and an older one on 4.96.4.
func baseSets() (a, b, c imagespec.Set) {
	return newSet("4.101.2", "2.46.0", "3.12"), newSet("4.101.2", "2.45.0", "3.12"), newSet("4.96.4", "2.44.1", "3.11")
}

type summary struct {
	Name    string
	Action  Action
	Reasons []Reason
}

func summarize(p *Plan) []summary {
	var out []summary
	for _, e := range p.Entries {
		out = append(out, summary{e.Name, e.Action, e.Reasons})
	}
	return out
}

func bumpExtension(s imagespec.Set, id, version string) imagespec.Set {
	exts := append([]imagespec.Extension(nil), s.Extensions...)
	for i, e := range exts {
		if e.ID == id {
			exts[i] = ext(id, version, false)
		}
	}
	s.Extensions = exts
	return s
}

const testTools = "docker.io/library/python:3.12-slim-bookworm"

var testToolsDigest2 = "sha256:" + strings.Repeat("7", 64)

// withTools returns s with its tools image pinned to digest.
func withTools(s imagespec.Set, digest string) imagespec.Set {
	s.ToolsImage = testTools + "@" + digest
	return s
}

func TestDiffTools(t *testing.T) {
	d1, d2 := testToolsDigest, testToolsDigest2
	for _, tc := range []struct {
		name, old, cur string
		want           *Reason
	}{
		{"unchanged", testTools + "@" + d1, testTools + "@" + d1, nil},
		{"tag moved", testTools + "@" + d1, testTools + "@" + d2, &Reason{KindToolsRebuilt, testTools + ": " + short(d1) + " -> " + short(d2)}},
		{"now pinned", testTools, testTools + "@" + d2, &Reason{KindDefinition, "tools image " + testTools + " now pinned to " + short(d2)}},
		{"pin dropped", testTools + "@" + d1, testTools, &Reason{KindDefinition, "tools image " + testTools + "@" + d1 + " -> " + testTools}},
		{"tag moved on a registry with a port", "localhost:5000/tools:dev@" + d1, "localhost:5000/tools:dev@" + d2, &Reason{KindToolsRebuilt, "localhost:5000/tools:dev: " + short(d1) + " -> " + short(d2)}},
		{"another tag", testTools + "@" + d1, "docker.io/library/python:3.13-slim@" + d2, &Reason{KindDefinition, "tools image " + testTools + "@" + d1 + " -> docker.io/library/python:3.13-slim@" + d2}},
		{"old lock without one", "", testTools, &Reason{KindDefinition, "tools image " + testTools + " (the published lock records none)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := diffTools(tc.old, tc.cur)
			var got *Reason
			if ok {
				got = &r
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("diffTools(%q, %q) (-want +got):\n%s", tc.old, tc.cur, diff)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	a, b, c := baseSets()
	rebuiltBase := func(s imagespec.Set) imagespec.Set {
		s.CodeServer.Platforms = baseDigests(s.CodeServer.Version, "-rebuilt")
		return s
	}
	tests := []struct {
		name string
		// after are the sets after the upstream change; published are a, b, c.
		after      func(w *world) []imagespec.Set
		definition string
		want       func(w *world, before []Target) []summary
	}{
		{
			name:  "unchanged inputs give an empty plan",
			after: func(*world) []imagespec.Set { return []imagespec.Set{a, b, c} },
			want:  func(*world, []Target) []summary { return nil },
		},
		{
			name: "one extension bump on one entry",
			after: func(*world) []imagespec.Set {
				return []imagespec.Set{bumpExtension(a, "ms-python.python", "2025.12.0"), b, c}
			},
			want: func(w *world, _ []Target) []summary {
				return []summary{{w.targets[0].Name(), ActionBuild, []Reason{{KindExtensionBump, "ms-python.python 2025.10.0 -> 2025.12.0"}}}}
			},
		},
		{
			name: "extension bump reaches only the entries that resolve it",
			after: func(*world) []imagespec.Set {
				// The new debugpy extension needs a newer VS Code than 4.96.4 ships.
				return []imagespec.Set{bumpExtension(a, "ms-python.debugpy", "2025.14.0"), bumpExtension(b, "ms-python.debugpy", "2025.14.0"), c}
			},
			want: func(w *world, _ []Target) []summary {
				r := []Reason{{KindExtensionBump, "ms-python.debugpy 2025.10.0 -> 2025.14.0"}}
				return []summary{{w.targets[0].Name(), ActionBuild, r}, {w.targets[1].Name(), ActionBuild, r}}
			},
		},
		{
			name: "a new base digest gives every entry on that base",
			after: func(*world) []imagespec.Set {
				return []imagespec.Set{rebuiltBase(a), rebuiltBase(b), c}
			},
			want: func(w *world, _ []Target) []summary {
				var out []summary
				for _, tg := range w.targets[:2] {
					old, nu := baseDigests("4.101.2", ""), baseDigests("4.101.2", "-rebuilt")
					out = append(out, summary{tg.Name(), ActionBuild, []Reason{{KindBaseRebuilt, testBase + ":4.101.2: " +
						"linux/amd64 " + short(old["linux/amd64"]) + " -> " + short(nu["linux/amd64"]) + ", " +
						"linux/arm64 " + short(old["linux/arm64"]) + " -> " + short(nu["linux/arm64"])}}})
				}
				return out
			},
		},
		{
			name: "a moved tools image tag gives every entry",
			after: func(*world) []imagespec.Set {
				return []imagespec.Set{withTools(a, testToolsDigest2), withTools(b, testToolsDigest2), withTools(c, testToolsDigest2)}
			},
			want: func(w *world, _ []Target) []summary {
				var out []summary
				for _, tg := range w.targets {
					out = append(out, summary{tg.Name(), ActionBuild, []Reason{{KindToolsRebuilt, testTools + ": " + short(testToolsDigest) + " -> " + short(testToolsDigest2)}}})
				}
				return out
			},
		},
		{
			name: "another tools image is a definition change",
			after: func(*world) []imagespec.Set {
				c2 := c
				c2.ToolsImage = "docker.io/library/python:3.13-slim-bookworm"
				return []imagespec.Set{a, b, c2}
			},
			want: func(w *world, _ []Target) []summary {
				return []summary{{w.targets[2].Name(), ActionBuild, []Reason{{KindDefinition,
					"tools image " + testTools + "@" + testToolsDigest + " -> docker.io/library/python:3.13-slim-bookworm"}}}}
			},
		},
		{
			name: "a new Ray release gives one new entry",
			after: func(*world) []imagespec.Set {
				return []imagespec.Set{newSet("4.101.2", "2.47.0", "3.12"), a, b, c}
			},
			want: func(w *world, _ []Target) []summary {
				return []summary{{w.targets[0].Name(), ActionBuild, []Reason{{KindNewRay, "ray 2.46.0 -> 2.47.0"}}}}
			},
		},
		{
			name:       "a definition change with identical versions",
			after:      func(*world) []imagespec.Set { return []imagespec.Set{a, b, c} },
			definition: "def-2",
			want: func(w *world, _ []Target) []summary {
				var out []summary
				for _, tg := range w.targets {
					out = append(out, summary{tg.Name(), ActionBuild, []Reason{{KindDefinition, "same versions and files; the image definition or imagectl version changed"}}})
				}
				return out
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, a, b, c)
			w.publishAll()
			before := w.targets
			if tc.definition != "" {
				w.digest = fakeDigest(tc.definition)
			}
			w.setTargets(tc.after(w)...)
			p := w.plan()
			if diff := cmp.Diff(tc.want(w, before), summarize(p)); diff != "" {
				t.Errorf("plan entries (-want +got):\n%s", diff)
			}
			if got, want := len(p.Entries)+len(p.UpToDate), len(w.targets); got != want {
				t.Errorf("plan covers %d entries, want %d", got, want)
			}
			for _, e := range p.Entries {
				if e.Blocked != "" {
					t.Errorf("%s blocked: %s", e.Name, e.Blocked)
				}
			}
		})
	}
}

func TestPlanNothingPublished(t *testing.T) {
	a, b, _ := baseSets()
	w := newWorld(t, a, b)
	p := w.plan()
	want := []summary{
		{w.targets[0].Name(), ActionBuild, []Reason{{KindNotPublished, w.targets[0].Versioned}}},
		{w.targets[1].Name(), ActionBuild, []Reason{{KindNotPublished, w.targets[1].Versioned}}},
	}
	if diff := cmp.Diff(want, summarize(p)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}

func TestPlanFloatingBehind(t *testing.T) {
	a, b, _ := baseSets()
	w := newWorld(t, a, b)
	pub := w.publishAll()
	// latest belongs to a (ray 2.46.0) but a failed promotion left it on b.
	desc, err := remote.Get(pub[w.targets[1].Name()])
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Tag(w.repo.Tag("latest"), desc); err != nil {
		t.Fatal(err)
	}
	p := w.plan()
	want := []summary{{w.targets[0].Name(), ActionPromote, []Reason{{KindFloatingStale,
		"latest -> " + pub[w.targets[1].Name()].DigestStr() + ", want " + short(pub[w.targets[0].Name()].DigestStr())}}}}
	if diff := cmp.Diff(want, summarize(p)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}

func TestPlanBlockedWhenVersionedTagHoldsOtherInputs(t *testing.T) {
	a, _, _ := baseSets()
	w := newWorld(t, a)
	tg := w.targets[0]
	// A versioned tag template that does not vary with the extension versions.
	publish(t, w.repo, a, "sha256:"+strings.Repeat("0", 64), tg.Versioned)
	p := w.plan()
	if len(p.Entries) != 1 || p.Entries[0].Blocked == "" {
		t.Fatalf("want one blocked entry, got %+v", p.Entries)
	}
	if !strings.Contains(p.Entries[0].Blocked, "never overwritten") {
		t.Errorf("blocked message %q does not say why", p.Entries[0].Blocked)
	}
}

func TestPlanLockMissingFallsBackToInputs(t *testing.T) {
	a, _, _ := baseSets()
	w := newWorld(t, a)
	tg := w.targets[0]
	old := "sha256:" + strings.Repeat("1", 64)
	// An image from before the lock label existed, at the versioned tag.
	ref := pushByDigest(context.Background(), t, w.repo, imageWithLabels(t, a.Platforms, map[string]string{imagespec.LabelInputs: old}))
	desc, err := remote.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Tag(w.repo.Tag(tg.Floating[0]), desc); err != nil {
		t.Fatal(err)
	}
	want := []summary{{tg.Name(), ActionBuild, []Reason{{KindNotPublished, tg.Versioned}}}}
	if diff := cmp.Diff(want, summarize(w.plan())); diff != "" {
		t.Errorf("no lock on the previous build (-want +got):\n%s", diff)
	}
	if err := remote.Tag(w.repo.Tag(tg.Versioned), desc); err != nil {
		t.Fatal(err)
	}
	want = []summary{{tg.Name(), ActionBuild, []Reason{{KindInputs, short(old) + " -> new inputs (no readable lock label on " + short(ref.DigestStr()) + ")"}}}}
	if diff := cmp.Diff(want, summarize(w.plan())); diff != "" {
		t.Errorf("no lock on the versioned image (-want +got):\n%s", diff)
	}
}

func TestPlanGitHubOutput(t *testing.T) {
	a, b, c := baseSets()
	w := newWorld(t, a, b, c)
	w.publishAll()
	w.setTargets(bumpExtension(a, "ms-python.python", "2025.12.0"), b, c)
	var buf bytes.Buffer
	if err := w.plan().Write(&buf, OutputGitHub); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Errorf("github output has %d lines, want 1 (it goes into $GITHUB_OUTPUT)", n)
	}
	var m GitHubMatrix
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	want := GitHubMatrix{Include: []GitHubEntry{{Entry: w.targets[0].Name(), Action: ActionBuild, Ray: "2.46.0", CodeServer: "4.101.2", Python: "3.12",
		Reasons: "extension bump: ms-python.python 2025.10.0 -> 2025.12.0"}}}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("github matrix (-want +got):\n%s", diff)
	}
	// An empty plan is still a valid matrix value with an empty include.
	w.setTargets(a, b, c)
	buf.Reset()
	empty := &Plan{Entries: []Entry{}}
	if err := empty.Write(&buf, OutputGitHub); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(buf.String()); got != `{"include":[]}` {
		t.Errorf("empty github matrix = %s", got)
	}
}

func TestTargets(t *testing.T) {
	cfg := &matrix.Config{Tags: []matrix.Tag{
		{Template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}-{{.Inputs}}"},
		{Template: "ray{{.RayMinor}}", Floating: true},
		{Template: "{{.CodeServer}}-ray{{.Ray}}-{{.Inputs}}"},
		{Template: "latest", Floating: true},
	}}
	s := newSet("4.101.2", "2.46.0", "3.12")
	d := fakeDigest("def-1")
	in, _ := d(s)
	got, err := Targets(cfg, []imagespec.Set{s}, d)
	if err != nil {
		t.Fatal(err)
	}
	versioned := "4.101.2-ray2.46.0-py3.12-" + in[7:19]
	rendered := s
	rendered.Tags = []string{versioned, "ray2.46", "4.101.2-ray2.46.0-" + in[7:19], "latest"}
	// The second immutable template is written too (as build --push does).
	want := []Target{{Set: rendered, Inputs: in, Versioned: versioned, Immutable: []string{"4.101.2-ray2.46.0-" + in[7:19]}, Floating: []string{"ray2.46", "latest"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Targets (-want +got):\n%s", diff)
	}
	if name := got[0].Name(); name != "4.101.2-ray2.46.0-py3.12" {
		t.Errorf("Name() = %q, want the combination", name)
	}
	// New inputs: a new versioned tag, the same name and floating tags.
	other, err := Targets(cfg, []imagespec.Set{s}, fakeDigest("def-2"))
	if err != nil {
		t.Fatal(err)
	}
	if other[0].Versioned == versioned || other[0].Name() != got[0].Name() || !cmp.Equal(other[0].Floating, got[0].Floating) {
		t.Errorf("new inputs gave %+v, want a new versioned tag only", other[0])
	}
	failing := DigestFunc(func(imagespec.Set) (string, error) { return "", fmt.Errorf("no standalone Python") })
	for _, bad := range []struct {
		name string
		cfg  *matrix.Config
		d    InputsDigester
	}{
		{"floating first", &matrix.Config{Tags: []matrix.Tag{{Template: "latest", Floating: true}}}, d},
		{"no templates", &matrix.Config{}, d},
		{"digest fails", cfg, failing},
		{"digest malformed", cfg, DigestFunc(func(imagespec.Set) (string, error) { return "sha256:short", nil })},
	} {
		if _, err := Targets(bad.cfg, []imagespec.Set{s}, bad.d); err == nil {
			t.Errorf("%s: Targets succeeded, want error", bad.name)
		}
	}
}

func TestOwnFloating(t *testing.T) {
	mk := func(ray, v string, fl ...string) Target {
		return Target{Set: imagespec.Set{Ray: ray, CodeServer: imagespec.CodeServer{Version: "4.101.2"}, Python: "3.12"}, Versioned: v, Floating: fl}
	}
	got, err := OwnFloating([]Target{
		mk("2.9.3", "a", "latest", "ray2.9"),
		mk("2.46.0", "b", "latest", "ray2.46"),
		mk("2.10.0", "c", "ray2.10", "latest"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"ray2.9"}, {"ray2.46", "latest"}, {"ray2.10"}}
	var gotTags [][]string
	for _, tg := range got {
		gotTags = append(gotTags, tg.Floating)
	}
	if diff := cmp.Diff(want, gotTags); diff != "" {
		t.Errorf("owned floating tags (-want +got):\n%s", diff)
	}
	if _, err := OwnFloating([]Target{mk("2.46.0", "x"), mk("2.45.0", "x")}); err == nil {
		t.Error("duplicate versioned tag accepted")
	}
}

// A python-build-standalone runtime that another release (or patch)
// replaced, or whose tarballs changed, is a component bump of its own.
func TestDiffRuntime(t *testing.T) {
	rt := func(version, release string, c byte) *imagespec.PythonRuntime {
		return &imagespec.PythonRuntime{Version: version, Release: release, Files: map[string]imagespec.RuntimeFile{
			"linux/amd64": {URL: "https://example.com/" + release + "/x86_64.tar.gz", SHA256: strings.Repeat(string(c), 64)},
			"linux/arm64": {URL: "https://example.com/" + release + "/aarch64.tar.gz", SHA256: strings.Repeat(string(c+1), 64)},
		}}
	}
	// Through diffSets: the plan names it, not a definition change.
	a, _, _ := baseSets()
	oldSet, newSet := a, a
	oldSet.PythonRuntime, newSet.PythonRuntime = rt("3.12.11", "20250808", '1'), rt("3.12.12", "20251014", '3')
	if got, want := diffSets(oldSet, newSet), []Reason{{KindComponentBump, "python runtime 3.12.11 (python-build-standalone 20250808) -> 3.12.12 (python-build-standalone 20251014)"}}; !cmp.Equal(got, want) {
		t.Errorf("diffSets = %v, want %v", got, want)
	}
	republished := rt("3.12.11", "20250808", '1')
	republished.Files["linux/arm64"] = imagespec.RuntimeFile{URL: republished.Files["linux/arm64"].URL, SHA256: strings.Repeat("9", 64)}
	for _, tc := range []struct {
		name     string
		old, cur *imagespec.PythonRuntime
		want     *Reason
	}{
		{"unchanged", rt("3.12.11", "20250808", '1'), rt("3.12.11", "20250808", '1'), nil},
		{"none", nil, nil, nil},
		{"a newer release", rt("3.12.11", "20250808", '1'), rt("3.12.12", "20251014", '3'),
			&Reason{KindComponentBump, "python runtime 3.12.11 (python-build-standalone 20250808) -> 3.12.12 (python-build-standalone 20251014)"}},
		{"the same patch in a newer release", rt("3.12.11", "20250808", '1'), rt("3.12.11", "20250814", '3'),
			&Reason{KindComponentBump, "python runtime 3.12.11 (python-build-standalone 20250808) -> 3.12.11 (python-build-standalone 20250814)"}},
		{"tarball re-published", rt("3.12.11", "20250808", '1'), republished,
			&Reason{KindComponentBump, "python runtime 3.12.11 (python-build-standalone 20250808) tarballs changed: linux/arm64 222222222222 -> 999999999999"}},
		{"now shipped", nil, rt("3.12.11", "20250808", '1'),
			&Reason{KindComponentBump, "python runtime (none) -> 3.12.11 (python-build-standalone 20250808)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := diffRuntime(tc.old, tc.cur)
			var got *Reason
			if ok {
				got = &r
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("diffRuntime (-want +got):\n%s", diff)
			}
		})
	}
}
