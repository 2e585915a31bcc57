package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/registry"
)

// fakeBuilder stands in for BuildKit only: it "builds" by pushing, by digest,
// a two-platform index whose labels carry the set's inputs digest and lock.
type fakeBuilder struct {
	t      testing.TB
	digest DigestFunc
	mu     sync.Mutex
	calls  int
	// during runs inside Build after the push (to simulate a concurrent writer).
	during func(name.Digest)
}

func (b *fakeBuilder) Build(ctx context.Context, e Entry, repo name.Repository) (name.Digest, error) {
	b.mu.Lock()
	b.calls++
	b.mu.Unlock()
	s := e.Set
	in, err := b.digest(s)
	if err != nil {
		return name.Digest{}, err
	}
	if in != e.InputsDigest {
		return name.Digest{}, fmt.Errorf("entry %s carries inputs digest %s, want the plan's %s", e.Name, e.InputsDigest, in)
	}
	d := pushByDigest(ctx, b.t, repo, imageFor(b.t, s, in))
	if b.during != nil {
		b.during(d)
	}
	return d, nil
}

// fakeSigner pushes a signature-shaped manifest under cosign's tag scheme
// (sha256-<hex>.sig), as cosign does, so signing shows up as registry writes.
type fakeSigner struct{ signed []string }

func (s *fakeSigner) Sign(ctx context.Context, ref name.Digest) error {
	img, err := random.Image(64, 1)
	if err != nil {
		return err
	}
	tag := ref.Context().Tag(strings.Replace(ref.DigestStr(), ":", "-", 1) + ".sig")
	s.signed = append(s.signed, ref.DigestStr())
	return remote.Write(tag, img, remote.WithContext(ctx))
}

// labelVerifier checks the signature tag exists and the labels match the set.
type labelVerifier struct {
	reg    *registry.Registry
	digest DigestFunc
	fail   error
}

func (v *labelVerifier) Verify(ctx context.Context, ref name.Digest, e Entry) error {
	s := e.Set
	if v.fail != nil {
		return v.fail
	}
	sig := ref.Context().Tag(strings.Replace(ref.DigestStr(), ":", "-", 1) + ".sig")
	if d, err := v.reg.Head(ctx, sig); err != nil || d == nil {
		return fmt.Errorf("no signature for %s (%v)", ref, err)
	}
	pub, err := v.reg.Inspect(ctx, ref)
	if err != nil {
		return err
	}
	want, _ := v.digest(s)
	if pub.Inputs != want {
		return fmt.Errorf("inputs label %s, want %s", pub.Inputs, want)
	}
	return nil
}

type rig struct {
	*world
	builder  *fakeBuilder
	signer   *fakeSigner
	verifier *labelVerifier
}

func newRig(t *testing.T, sets ...imagespec.Set) *rig {
	w := newWorld(t, sets...)
	return &rig{
		world:    w,
		builder:  &fakeBuilder{t: t, digest: w.digest},
		signer:   &fakeSigner{},
		verifier: &labelVerifier{reg: w.reg.reg, digest: w.digest},
	}
}

func (r *rig) release(plan *Plan, opts ...ReleaseOption) (*Report, error) {
	return NewReleaser(r.reg.reg, r.repo, r.builder, r.signer, r.verifier, opts...).Release(context.Background(), plan)
}

func TestReleaseFromScratchThenRerunPushesNothing(t *testing.T) {
	a, b, _ := baseSets()
	r := newRig(t, a, b)
	rep, err := r.release(r.plan())
	if err != nil {
		t.Fatal(err)
	}
	if r.builder.calls != 2 || len(r.signer.signed) != 2 {
		t.Fatalf("builds %d, signatures %d, want 2 and 2", r.builder.calls, len(r.signer.signed))
	}
	tags := r.allTags()
	for i, tg := range r.targets {
		want := rep.Results[i].Digest
		for _, tag := range append([]string{tg.Versioned}, tg.Floating...) {
			if tags[tag] != want {
				t.Errorf("tag %s -> %q, want %s", tag, tags[tag], want)
			}
		}
	}
	if tags["latest"] != rep.Results[0].Digest {
		t.Errorf("latest -> %s, want the ray 2.46.0 build %s", tags["latest"], rep.Results[0].Digest)
	}

	// Re-run: the plan is empty and nothing at all is written.
	_, writesBefore := r.reg.count.snapshot()
	p := r.plan()
	if !p.Empty() {
		t.Fatalf("plan after a successful release is not empty: %+v", summarize(p))
	}
	rep, err = r.release(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, writesAfter := r.reg.count.snapshot(); writesAfter != writesBefore {
		t.Errorf("re-run wrote %d times to the registry, want 0", writesAfter-writesBefore)
	}
	if r.builder.calls != 2 {
		t.Errorf("re-run built %d more times", r.builder.calls-2)
	}
	if len(rep.Results) != 2 || rep.Results[0].Action != "none" || rep.Results[0].Digest != tags[r.targets[0].Versioned] {
		t.Errorf("re-run report %+v: want both entries reported up to date with their digests", rep.Results)
	}
}

func TestReleaseVerifyFailureLeavesTagsUnchanged(t *testing.T) {
	a, b, _ := baseSets()
	r := newRig(t, a, b)
	r.publishAll()
	before := r.allTags()
	r.setTargets(bumpExtension(a, "ms-python.python", "2025.12.0"), b)
	r.verifier.fail = errors.New("signature on linux/arm64 manifest missing")
	p := r.plan()
	if len(p.Entries) != 1 {
		t.Fatalf("plan: %+v", summarize(p))
	}
	rep, err := r.release(p)
	if err == nil || !strings.Contains(err.Error(), "no tag was written") {
		t.Fatalf("release error = %v, want a verify failure saying no tag was written", err)
	}
	if r.builder.calls != 1 {
		t.Errorf("builds = %d, want 1", r.builder.calls)
	}
	if diff := cmp.Diff(before, r.allTags()); diff != "" {
		t.Errorf("tags changed after a verify failure (-before +after):\n%s", diff)
	}
	if rep.Results[0].Error == "" || len(rep.Results[0].Tagged) != 0 {
		t.Errorf("result %+v: want an error and no tags", rep.Results[0])
	}
}

func TestReleaseSignFailureLeavesTagsUnchanged(t *testing.T) {
	a, _, _ := baseSets()
	r := newRig(t, a)
	r.publishAll()
	before := r.allTags()
	r.setTargets(bumpExtension(a, "ms-python.python", "2025.12.0"))
	rel := NewReleaser(r.reg.reg, r.repo, r.builder, SignerFunc(func(context.Context, name.Digest) error {
		return errors.New("fulcio unreachable")
	}), r.verifier)
	if _, err := rel.Release(context.Background(), r.plan()); err == nil || !strings.Contains(err.Error(), "fulcio unreachable") {
		t.Fatalf("release error = %v, want the sign failure", err)
	}
	if diff := cmp.Diff(before, r.allTags()); diff != "" {
		t.Errorf("tags changed after a sign failure (-before +after):\n%s", diff)
	}
}

func TestReleaseVersionedTagIsImmutable(t *testing.T) {
	a, _, _ := baseSets()
	t.Run("already published elsewhere", func(t *testing.T) {
		r := newRig(t, a)
		tg := r.targets[0]
		other := publish(t, r.repo, a, "sha256:"+strings.Repeat("0", 64), tg.Versioned)
		before := r.allTags()
		_, err := r.release(r.plan())
		if err == nil || !strings.Contains(err.Error(), "never overwritten") {
			t.Fatalf("release error = %v, want the immutable-tag refusal", err)
		}
		if r.builder.calls != 0 {
			t.Errorf("built %d times before refusing", r.builder.calls)
		}
		if got := headDigest(t, r.repo, tg.Versioned); got != other.DigestStr() {
			t.Errorf("versioned tag -> %s, want it left on %s", got, other.DigestStr())
		}
		if diff := cmp.Diff(before, r.allTags()); diff != "" {
			t.Errorf("tags changed (-before +after):\n%s", diff)
		}
	})
	t.Run("written by someone else during the build", func(t *testing.T) {
		r := newRig(t, a)
		tg := r.targets[0]
		var other name.Digest
		r.builder.during = func(name.Digest) {
			other = publish(t, r.repo, a, "sha256:"+strings.Repeat("2", 64), tg.Versioned)
		}
		_, err := r.release(r.plan())
		if err == nil || !strings.Contains(err.Error(), "never overwritten") {
			t.Fatalf("release error = %v, want the immutable-tag refusal", err)
		}
		if got := headDigest(t, r.repo, tg.Versioned); got != other.DigestStr() {
			t.Errorf("versioned tag -> %s, want it left on %s", got, other.DigestStr())
		}
		for _, f := range tg.Floating {
			if got := headDigest(t, r.repo, f); got != "" {
				t.Errorf("floating tag %s moved to %s", f, got)
			}
		}
	})
}

func TestReleaseTwoPhasePromotion(t *testing.T) {
	a, b, _ := baseSets()
	r := newRig(t, a, b)
	r.publishAll()
	before := r.allTags()
	r.setTargets(bumpExtension(a, "ms-python.python", "2025.12.0"), b)
	tg := r.targets[0]

	// Phase 1: build, sign, verify, versioned tag only.
	rep, err := r.release(r.plan(), WithFloating(false))
	if err != nil {
		t.Fatal(err)
	}
	built := rep.Results[0].Digest
	if diff := cmp.Diff(tg.Floating, rep.Results[0].Pending); diff != "" {
		t.Errorf("pending floating tags (-want +got):\n%s", diff)
	}
	for _, f := range tg.Floating {
		if got := headDigest(t, r.repo, f); got != before[f] {
			t.Errorf("floating %s moved in phase 1: %s -> %s", f, before[f], got)
		}
	}
	if got := headDigest(t, r.repo, tg.Versioned); got != built {
		t.Fatalf("versioned tag -> %q, want %s", got, built)
	}

	// The plan now asks only for the promotion.
	p := r.plan()
	if len(p.Entries) != 1 || p.Entries[0].Action != ActionPromote {
		t.Fatalf("plan after phase 1: %+v", summarize(p))
	}
	// A promotion of another digest than the smoke-tested one is refused.
	if _, err := r.release(p, WithExpectedDigest("sha256:"+strings.Repeat("9", 64))); err == nil {
		t.Fatal("promotion of an unexpected digest succeeded")
	}
	if got := headDigest(t, r.repo, "latest"); got != before["latest"] {
		t.Fatalf("latest moved on a refused promotion")
	}
	// Phase 2 after smoke: verify again and move floating tags.
	if _, err := r.release(p, WithExpectedDigest(built)); err != nil {
		t.Fatal(err)
	}
	for _, f := range tg.Floating {
		if got := headDigest(t, r.repo, f); got != built {
			t.Errorf("floating %s -> %s, want %s", f, got, built)
		}
	}
	if r.builder.calls != 1 {
		t.Errorf("builds = %d, want 1", r.builder.calls)
	}
	if p := r.plan(); !p.Empty() {
		t.Errorf("plan after promotion: %+v", summarize(p))
	}
}

func TestReleaseDryRunWritesNothing(t *testing.T) {
	a, b, _ := baseSets()
	r := newRig(t, a, b)
	r.publishAll()
	r.setTargets(bumpExtension(a, "ms-python.python", "2025.12.0"), b)
	_, writesBefore := r.reg.count.snapshot()
	rep, err := r.release(r.plan(), WithDryRun(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, writesAfter := r.reg.count.snapshot(); writesAfter != writesBefore {
		t.Errorf("dry run wrote %d times", writesAfter-writesBefore)
	}
	if r.builder.calls != 0 || len(r.signer.signed) != 0 {
		t.Errorf("dry run built %d and signed %d", r.builder.calls, len(r.signer.signed))
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"would build ray 2.46.0", "would sign", "would verify", "would tag " + r.targets[0].Versioned, "would move latest"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestReleaseFloatingFailureMovesTagsBack(t *testing.T) {
	a, _, _ := baseSets()
	r := newRig(t, a)
	r.publishAll()
	before := r.allTags()
	r.setTargets(bumpExtension(a, "ms-python.python", "2025.12.0"))
	tg := r.targets[0]
	// Floating order: combination, ray minor, latest. Fail the last one.
	r.reg.count.fail = func(req *http.Request) bool {
		return req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/manifests/latest")
	}
	rep, err := r.release(r.plan())
	if err == nil || !strings.Contains(err.Error(), "moving floating tag latest") {
		t.Fatalf("release error = %v, want the latest tag failure", err)
	}
	r.reg.count.fail = nil
	res := rep.Results[0]
	if diff := cmp.Diff(tg.Floating[:2], reverse(res.RolledBack)); diff != "" {
		t.Errorf("moved back (-want +got):\n%s", diff)
	}
	after := r.allTags()
	for _, f := range tg.Floating {
		if after[f] != before[f] {
			t.Errorf("floating %s -> %s after rollback, want %s", f, after[f], before[f])
		}
	}
	if after[tg.Versioned] != res.Digest {
		t.Errorf("versioned tag %s -> %s, want the verified build %s", tg.Versioned, after[tg.Versioned], res.Digest)
	}
	// A re-run converges: the plan asks for the promotion only.
	p := r.plan()
	if len(p.Entries) != 1 || p.Entries[0].Action != ActionPromote {
		t.Fatalf("plan after a failed promotion: %+v", summarize(p))
	}
	if _, err := r.release(p); err != nil {
		t.Fatal(err)
	}
	if got := headDigest(t, r.repo, "latest"); got != res.Digest {
		t.Errorf("latest -> %s after re-run, want %s", got, res.Digest)
	}
}

func reverse(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func TestInputsVerifier(t *testing.T) {
	a, _, _ := baseSets()
	r := newRig(t, a)
	in, _ := r.digest(a)
	good := publish(t, r.repo, a, in)
	bad := publish(t, r.repo, a, "sha256:"+strings.Repeat("3", 64))
	v := Verifiers(InputsVerifier(r.reg.reg))
	e := Entry{Name: "a", Set: a, InputsDigest: in}
	if err := v.Verify(context.Background(), good, e); err != nil {
		t.Errorf("matching image: %v", err)
	}
	if err := v.Verify(context.Background(), bad, e); err == nil || !strings.Contains(err.Error(), "carries inputs digest") {
		t.Errorf("mismatching image: err = %v", err)
	}
}

// The inputs digest (a full render in imagectl) is computed once per set,
// by Targets: the plan, the build (the entry carries it) and the inputs
// check of a release all read it from there.
func TestInputsDigestComputedOncePerSet(t *testing.T) {
	a, b, _ := baseSets()
	r := newRig(t, a, b)
	var mu sync.Mutex
	calls := map[string]int{}
	counting := DigestFunc(func(s imagespec.Set) (string, error) {
		mu.Lock()
		calls[s.Ray+"/"+s.CodeServer.Version]++
		mu.Unlock()
		return r.digest(s)
	})
	var ts []Target
	for _, s := range []imagespec.Set{a, b} {
		got, err := Targets(testTags, []imagespec.Set{s}, counting)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, got...)
	}
	owned, err := OwnFloating(ts)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := NewPlanner(r.reg.reg, r.repo).Plan(context.Background(), owned)
	if err != nil {
		t.Fatal(err)
	}
	v := Verifiers(InputsVerifier(r.reg.reg), r.verifier)
	if _, err := NewReleaser(r.reg.reg, r.repo, r.builder, r.signer, v).Release(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	if r.builder.calls != 2 {
		t.Fatalf("built %d entries, want 2", r.builder.calls)
	}
	for k, n := range calls {
		if n != 1 {
			t.Errorf("inputs digest of %s computed %d times, want once", k, n)
		}
	}
	if len(calls) != 2 {
		t.Errorf("inputs digests computed for %v, want both sets", calls)
	}
}
