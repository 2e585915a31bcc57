package release

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
)

// twoImmutable is a tag scheme with two immutable templates (matrix
// validation allows it), and floating ones between and after them.
var twoImmutable = &matrix.Config{Tags: []matrix.Tag{
	{Template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}-{{.Inputs}}"},
	{Template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}", Floating: true},
	{Template: "ray{{.Ray}}-py{{.Python}}-cs{{.CodeServer}}-{{.Inputs}}"},
	{Template: "latest", Floating: true},
}}

// twoImmutableTargets are the targets of sets under twoImmutable, checked
// against what build --push writes for the same set: resolve.RenderTags'
// immutable tags (build/pipeline's published check and push use exactly
// these).
func twoImmutableTargets(t *testing.T, d DigestFunc, sets ...imagespec.Set) []Target {
	t.Helper()
	ts, err := Targets(twoImmutable, sets, d)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sets {
		in, err := d(s)
		if err != nil {
			t.Fatal(err)
		}
		built, err := resolve.RenderTags(twoImmutable, s, in)
		if err != nil {
			t.Fatal(err)
		}
		released := append([]string{ts[i].Versioned}, ts[i].Immutable...)
		if diff := cmp.Diff(built.Immutable(), released); diff != "" {
			t.Fatalf("immutable tags: build --push (-) and release (+) disagree:\n%s", diff)
		}
		if len(released) != 2 || ts[i].Versioned != built.Versioned() {
			t.Fatalf("release's immutable tags %v (versioned %s), want the two rendered ones, versioned %s first", released, ts[i].Versioned, built.Versioned())
		}
		if diff := cmp.Diff(built.Floating(), ts[i].Floating); diff != "" {
			t.Errorf("floating tags (-rendered +release):\n%s", diff)
		}
		if diff := cmp.Diff(built.Names(), ts[i].Set.Tags); diff != "" {
			t.Errorf("Set.Tags (-rendered +release):\n%s", diff)
		}
	}
	owned, err := OwnFloating(ts)
	if err != nil {
		t.Fatal(err)
	}
	return owned
}

// TestReleaseWritesEveryImmutableTag: with two immutable templates, release
// writes both (as build --push does) and the floating ones, and a re-run
// has nothing to do.
func TestReleaseWritesEveryImmutableTag(t *testing.T) {
	a, _, _ := baseSets()
	r := newRig(t)
	r.targets = twoImmutableTargets(t, r.digest, a)
	tg := r.targets[0]
	rep, err := r.release(r.plan())
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Results[0].Digest
	tags := r.allTags()
	want := append(append([]string{tg.Versioned}, tg.Immutable...), tg.Floating...)
	for _, tag := range want {
		if tags[tag] != d {
			t.Errorf("tag %s -> %q, want %s", tag, tags[tag], d)
		}
	}
	if diff := cmp.Diff(want, rep.Results[0].Tagged); diff != "" {
		t.Errorf("Tagged (-want +got):\n%s", diff)
	}
	if p := r.plan(); !p.Empty() {
		t.Errorf("plan after the release is not empty: %+v", summarize(p))
	}
}

// TestPlanPromotesMissingImmutableTag: an image published before the second
// immutable template existed is promoted (nothing is built) and gets it.
func TestPlanPromotesMissingImmutableTag(t *testing.T) {
	a, _, _ := baseSets()
	r := newRig(t)
	r.targets = twoImmutableTargets(t, r.digest, a)
	tg := r.targets[0]
	in, _ := r.digest(tg.Set)
	pub := publish(t, r.repo, tg.Set, in, append([]string{tg.Versioned}, tg.Floating...)...)
	if err := r.signer.Sign(context.Background(), pub); err != nil {
		t.Fatal(err)
	}
	p := r.plan()
	want := []summary{{tg.Name(), ActionPromote, []Reason{{KindTagMissing, tg.Immutable[0]}}}}
	if diff := cmp.Diff(want, summarize(p)); diff != "" {
		t.Fatalf("plan (-want +got):\n%s", diff)
	}
	rep, err := r.release(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.builder.calls != 0 {
		t.Errorf("%d builds, want none (a promotion)", r.builder.calls)
	}
	if got := headDigest(t, r.repo, tg.Immutable[0]); got != pub.DigestStr() {
		t.Errorf("%s -> %q, want the published %s", tg.Immutable[0], got, pub.DigestStr())
	}
	if diff := cmp.Diff([]string{tg.Immutable[0]}, rep.Results[0].Tagged); diff != "" {
		t.Errorf("Tagged (-want +got):\n%s", diff)
	}
	if p := r.plan(); !p.Empty() {
		t.Errorf("plan after the promotion is not empty: %+v", summarize(p))
	}
}

// TestImmutableTagNeverMoves: when the second immutable tag already names
// another image, plan says the entry is blocked and release writes no tag.
func TestImmutableTagNeverMoves(t *testing.T) {
	a, b, _ := baseSets()
	r := newRig(t)
	r.targets = twoImmutableTargets(t, r.digest, a)
	tg := r.targets[0]
	in, _ := r.digest(tg.Set)
	if err := r.signer.Sign(context.Background(), publish(t, r.repo, tg.Set, in, tg.Versioned)); err != nil {
		t.Fatal(err)
	}
	inB, _ := r.digest(b)
	squatter := publish(t, r.repo, b, inB, tg.Immutable[0])
	p := r.plan()
	if len(p.Entries) != 1 || p.Entries[0].Action != ActionPromote || !strings.Contains(p.Entries[0].Blocked, "immutable tag "+tg.Immutable[0]+" already names") {
		t.Fatalf("plan %+v, want the entry promoted and blocked by %s", p.Entries, tg.Immutable[0])
	}
	_, writesBefore := r.reg.count.snapshot()
	_, err := r.release(p)
	if err == nil || !strings.Contains(err.Error(), "immutable tags are never overwritten and no tag was written") {
		t.Fatalf("release: %v, want it to refuse to move the immutable tag", err)
	}
	if _, writes := r.reg.count.snapshot(); writes != writesBefore {
		t.Errorf("release wrote %d times, want no write", writes-writesBefore)
	}
	if got := headDigest(t, r.repo, tg.Immutable[0]); got != squatter.DigestStr() {
		t.Errorf("%s -> %s, want it left at %s", tg.Immutable[0], got, squatter.DigestStr())
	}
}

// TestReleaseRefusesTakenImmutableTagBeforeBuilding: a new build whose
// second immutable tag already names another image is refused before the
// build, like one whose versioned tag does.
func TestReleaseRefusesTakenImmutableTagBeforeBuilding(t *testing.T) {
	a, b, _ := baseSets()
	r := newRig(t)
	r.targets = twoImmutableTargets(t, r.digest, a)
	tg := r.targets[0]
	inB, _ := r.digest(b)
	squatter := publish(t, r.repo, b, inB, tg.Immutable[0])
	p := r.plan()
	if len(p.Entries) != 1 || p.Entries[0].Action != ActionBuild {
		t.Fatalf("plan %+v, want one build", summarize(p))
	}
	_, err := r.release(p)
	if err == nil || !strings.Contains(err.Error(), "immutable tags are never overwritten, nothing was built or tagged") {
		t.Fatalf("release: %v, want a refusal before the build", err)
	}
	if r.builder.calls != 0 {
		t.Errorf("%d builds, want none", r.builder.calls)
	}
	if got := headDigest(t, r.repo, tg.Versioned); got != "" {
		t.Errorf("versioned tag %s -> %s, want it unwritten", tg.Versioned, got)
	}
	if got := headDigest(t, r.repo, tg.Immutable[0]); got != squatter.DigestStr() {
		t.Errorf("%s -> %s, want it left at %s", tg.Immutable[0], got, squatter.DigestStr())
	}
}
