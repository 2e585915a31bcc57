package release

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/imagespec"
)

// recordingSmoker records what it ran and what the tags were at that moment.
type recordingSmoker struct {
	r         *rig
	fail      error
	ran       []string
	tagsAtRun []map[string]string
}

func (s *recordingSmoker) Smoke(_ context.Context, ref name.Digest, _ imagespec.Set) error {
	s.ran = append(s.ran, ref.DigestStr())
	s.tagsAtRun = append(s.tagsAtRun, s.r.allTags())
	return s.fail
}

func TestReleaseSmokesTheBuiltDigestBeforeAnyTag(t *testing.T) {
	a, _, _ := baseSets()
	r := newRig(t, a)
	r.publishAll()
	before := r.allTags()
	r.setTargets(bumpExtension(a, "ms-python.python", "2025.12.0"))
	s := &recordingSmoker{r: r}
	rep, err := r.release(r.plan(), WithSmoker(s))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ran) != 1 || s.ran[0] != rep.Results[0].Digest {
		t.Fatalf("smoked %v, want exactly the built digest %s", s.ran, rep.Results[0].Digest)
	}
	if diff := cmp.Diff(before, s.tagsAtRun[0]); diff != "" {
		t.Errorf("a tag moved before the smoke ran (-before +at smoke):\n%s", diff)
	}
	if len(rep.Results[0].Tagged) == 0 {
		t.Errorf("no tag written after a passing smoke: %+v", rep.Results[0])
	}
}

func TestReleaseSmokeFailureLeavesTagsUnchanged(t *testing.T) {
	a, _, _ := baseSets()
	r := newRig(t, a)
	r.publishAll()
	before := r.allTags()
	r.setTargets(bumpExtension(a, "ms-python.python", "2025.12.0"))
	s := &recordingSmoker{r: r, fail: errors.New("linux/arm64 python: ray/_raylet.so is x86-64 code, want AArch64")}
	rep, err := r.release(r.plan(), WithSmoker(s))
	if err == nil || !strings.Contains(err.Error(), "smoke image") || !strings.Contains(err.Error(), "x86-64 code") || !strings.Contains(err.Error(), "no tag was written") {
		t.Fatalf("release error = %v, want the smoke failure saying no tag was written", err)
	}
	if diff := cmp.Diff(before, r.allTags()); diff != "" {
		t.Errorf("tags changed after a smoke failure (-before +after):\n%s", diff)
	}
	if len(rep.Results[0].Tagged) != 0 {
		t.Errorf("result %+v: want no tags", rep.Results[0])
	}
}

func TestReleaseDryRunListsTheSmoke(t *testing.T) {
	a, _, _ := baseSets()
	r := newRig(t, a)
	s := &recordingSmoker{r: r}
	rep, err := r.release(r.plan(), WithSmoker(s), WithDryRun(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ran) != 0 {
		t.Errorf("a dry run smoked %v", s.ran)
	}
	if !strings.Contains(strings.Join(rep.Results[0].Steps, "\n"), "smoke image") {
		t.Errorf("dry-run steps %q do not list the smoke", rep.Results[0].Steps)
	}
}
