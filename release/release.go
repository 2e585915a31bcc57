package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/registry"
)

// Builder builds a planned entry's set (e.Set, whose inputs digest the
// plan computed: e.InputsDigest) for all its platforms and pushes the
// result to repo by digest only, writing no tag. It returns the digest of
// the pushed index.
type Builder interface {
	Build(ctx context.Context, e Entry, repo name.Repository) (name.Digest, error)
}

// Signer signs the index ref names and every platform manifest in it.
type Signer interface {
	Sign(ctx context.Context, ref name.Digest) error
}

// Verifier proves the image ref names is signed and matches the planned
// entry e (its set and inputs digest); any error stops the entry before a
// tag is written.
type Verifier interface {
	Verify(ctx context.Context, ref name.Digest, e Entry) error
}

// Smoker runs the image ref names (imagectl smoke image): any error stops
// the entry before a tag is written.
type Smoker interface {
	Smoke(ctx context.Context, ref name.Digest, set imagespec.Set) error
}

// SmokerFunc adapts a function to Smoker.
type SmokerFunc func(ctx context.Context, ref name.Digest, set imagespec.Set) error

// Smoke calls f.
func (f SmokerFunc) Smoke(ctx context.Context, ref name.Digest, s imagespec.Set) error {
	return f(ctx, ref, s)
}

// BuilderFunc, SignerFunc and VerifierFunc adapt functions to the interfaces.
type (
	BuilderFunc  func(ctx context.Context, e Entry, repo name.Repository) (name.Digest, error)
	SignerFunc   func(ctx context.Context, ref name.Digest) error
	VerifierFunc func(ctx context.Context, ref name.Digest, e Entry) error
)

// Build calls f.
func (f BuilderFunc) Build(ctx context.Context, e Entry, r name.Repository) (name.Digest, error) {
	return f(ctx, e, r)
}

// Sign calls f.
func (f SignerFunc) Sign(ctx context.Context, ref name.Digest) error { return f(ctx, ref) }

// Verify calls f.
func (f VerifierFunc) Verify(ctx context.Context, ref name.Digest, e Entry) error {
	return f(ctx, ref, e)
}

// Releaser publishes planned entries.
type Releaser struct {
	reg      *registry.Registry
	repo     name.Repository
	builder  Builder
	signer   Signer
	verifier Verifier
	smoker   Smoker
	dryRun   bool
	floating bool
	expect   string
	log      io.Writer
}

// ReleaseOption configures a Releaser.
type ReleaseOption func(*Releaser)

// WithDryRun makes Release print what it would do and change nothing. It
// still reads the registry to say which tags would move.
func WithDryRun(v bool) ReleaseOption { return func(r *Releaser) { r.dryRun = v } }

// WithFloating sets whether floating tags move (default true). Without, a
// release stops after the versioned tag so that a later step (a smoke test)
// can gate promotion; a second run with floating tags then promotes.
func WithFloating(v bool) ReleaseOption { return func(r *Releaser) { r.floating = v } }

// WithExpectedDigest makes a promotion refuse any digest but d (the digest a
// smoke test just passed), so floating tags never move to an untested image.
func WithExpectedDigest(d string) ReleaseOption { return func(r *Releaser) { r.expect = d } }

// WithSmoker runs s on every image after verify and before any tag is
// written (nil: no smoke).
func WithSmoker(s Smoker) ReleaseOption { return func(r *Releaser) { r.smoker = s } }

// WithLog sends one line per step to w.
func WithLog(w io.Writer) ReleaseOption { return func(r *Releaser) { r.log = w } }

// NewReleaser returns a Releaser writing to repo through reg.
func NewReleaser(reg *registry.Registry, repo name.Repository, b Builder, s Signer, v Verifier, opts ...ReleaseOption) *Releaser {
	r := &Releaser{reg: reg, repo: repo, builder: b, signer: s, verifier: v, floating: true, log: io.Discard}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Result is what happened to one entry.
type Result struct {
	Entry  string `json:"entry"`
	Action Action `json:"action"`
	// Image is repo@digest of the entry's image ("" when a dry run or a failure
	// came before the build).
	Image  string `json:"image,omitempty"`
	Digest string `json:"digest,omitempty"`
	Built  bool   `json:"built"`
	// Tagged were written; Unchanged already named the digest; Pending are
	// floating tags left for a later promotion (WithFloating(false)).
	Tagged    []string `json:"tagged,omitempty"`
	Unchanged []string `json:"unchanged,omitempty"`
	Pending   []string `json:"pending,omitempty"`
	// RolledBack are floating tags moved back after a later tag failed;
	// Stranded are tags that moved and could not be put back.
	RolledBack []string `json:"rolledBack,omitempty"`
	Stranded   []string `json:"stranded,omitempty"`
	// Steps is what a dry run would do.
	Steps []string `json:"steps,omitempty"`
	// Missing is what a dry run found the entry lacks for a release
	// (the extension files the catalog pins no sha256 for); the entry's
	// Error says it would be refused.
	Missing []string `json:"missing,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// Report is the outcome of Release.
type Report struct {
	Repository string   `json:"repository"`
	DryRun     bool     `json:"dryRun,omitempty"`
	Results    []Result `json:"results"`
}

// Release runs every entry of plan: build (push by digest), sign, verify,
// then tags. Entries are independent: one failing does not stop the others,
// and the returned error joins every failure. Entries of plan that are up to
// date are reported with their current digest and nothing is written.
func (r *Releaser) Release(ctx context.Context, plan *Plan) (*Report, error) {
	rep := &Report{Repository: r.repo.String(), DryRun: r.dryRun, Results: []Result{}}
	var errs []error
	for _, e := range plan.Entries {
		res, err := r.entry(ctx, e)
		if err != nil {
			res.Error = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", e.Name, err))
		}
		rep.Results = append(rep.Results, res)
	}
	for _, n := range plan.UpToDate {
		if d := plan.current[n]; d != "" {
			rep.Results = append(rep.Results, Result{Entry: n, Action: "none", Digest: d, Image: r.repo.Digest(d).String()})
		}
	}
	return rep, errors.Join(errs...)
}

func (r *Releaser) logf(entry, format string, args ...any) {
	fmt.Fprintf(r.log, "%s: %s\n", entry, fmt.Sprintf(format, args...))
}

func (r *Releaser) entry(ctx context.Context, e Entry) (Result, error) {
	res := Result{Entry: e.Name, Action: e.Action}
	vt := r.repo.Tag(e.Versioned)
	var d name.Digest
	switch e.Action {
	case ActionBuild:
		// Refuse before spending a build: the versioned tag is a promise.
		cur, err := r.reg.Head(ctx, vt)
		if err != nil {
			return res, err
		}
		if cur != nil {
			return res, fmt.Errorf("versioned tag %s already names %s; versioned tags are never overwritten, nothing was built or tagged", vt, cur.Digest)
		}
		// So are the other immutable tags.
		for _, im := range e.Immutable {
			cur, err := r.reg.Head(ctx, r.repo.Tag(im))
			if err != nil {
				return res, err
			}
			if cur != nil {
				return res, fmt.Errorf("immutable tag %s already names %s; immutable tags are never overwritten, nothing was built or tagged", r.repo.Tag(im), cur.Digest)
			}
		}
		if r.dryRun {
			res.Steps = append(res.Steps,
				fmt.Sprintf("build ray %s, code-server %s, python %s for %s", e.Set.Ray, e.Set.CodeServer.Version, e.Set.Python, strings.Join(e.Set.Platforms, ", ")),
				"push by digest to "+r.repo.String(),
				"sign the index and every platform manifest",
				"verify signatures, attestations and contents")
			if r.smoker != nil {
				res.Steps = append(res.Steps, "smoke image: run every platform as a container (Python, Ray, debugpy attach, code-server)")
			}
			return r.tags(ctx, e, res, name.Digest{})
		}
		r.logf(e.Name, "building (%s)", reasons(e.Reasons))
		d, err = r.builder.Build(ctx, e, r.repo)
		if err != nil {
			return res, fmt.Errorf("build: %w", err)
		}
		if d.Context().String() != r.repo.String() {
			return res, fmt.Errorf("build pushed to %s, want %s", d.Context(), r.repo)
		}
		res.Built, res.Digest, res.Image = true, d.DigestStr(), d.String()
		r.logf(e.Name, "pushed %s; signing", d.DigestStr())
		if err := r.signer.Sign(ctx, d); err != nil {
			return res, fmt.Errorf("sign %s: %w (no tag was written)", d, err)
		}
	case ActionPromote:
		if e.Published == "" {
			return res, fmt.Errorf("promote: the versioned tag %s names nothing", vt)
		}
		d = r.repo.Digest(e.Published)
		res.Digest, res.Image = d.DigestStr(), d.String()
		if r.dryRun {
			res.Steps = append(res.Steps, "verify "+d.String())
			if r.smoker != nil {
				res.Steps = append(res.Steps, "smoke image "+d.String())
			}
			return r.tags(ctx, e, res, d)
		}
	default:
		return res, fmt.Errorf("unknown action %q", e.Action)
	}
	if r.expect != "" && d.DigestStr() != r.expect {
		return res, fmt.Errorf("image is %s, but the expected (smoke-tested) digest is %s; no tag was written", d.DigestStr(), r.expect)
	}
	r.logf(e.Name, "verifying %s", d.DigestStr())
	if err := r.verifier.Verify(ctx, d, e); err != nil {
		return res, fmt.Errorf("verify %s: %w (no tag was written)", d, err)
	}
	if r.smoker != nil {
		r.logf(e.Name, "smoke image %s", d.DigestStr())
		if err := r.smoker.Smoke(ctx, d, e.Set); err != nil {
			return res, fmt.Errorf("smoke image %s: %w (no tag was written)", d, err)
		}
	}
	return r.tags(ctx, e, res, d)
}

// tags writes the immutable tags (the versioned one first), then the
// floating tags in order, each only if it does not already name d. A reader
// therefore never sees a floating tag on an image whose versioned tag (or
// more specific floating tag) is missing. An immutable tag that names
// another image stops it before any tag is written. If a floating tag
// fails, the ones this run moved are put back.
func (r *Releaser) tags(ctx context.Context, e Entry, res Result, d name.Digest) (Result, error) {
	newDigest := d.DigestStr()
	if r.dryRun && newDigest == "" {
		newDigest = "<new digest>"
	}
	immutable := append([]string{e.Versioned}, e.Immutable...)
	kind := func(i int) string {
		if i == 0 {
			return "versioned"
		}
		return "immutable"
	}
	cur := make([]string, len(immutable))
	for i, tag := range immutable {
		desc, err := r.reg.Head(ctx, r.repo.Tag(tag))
		if err != nil {
			return res, err
		}
		if desc == nil {
			continue
		}
		if cur[i] = desc.Digest.String(); cur[i] != newDigest {
			return res, fmt.Errorf("%s tag %s already names %s, not %s; %s tags are never overwritten and no tag was written", kind(i), r.repo.Tag(tag), cur[i], newDigest, kind(i))
		}
	}
	for i, tag := range immutable {
		switch {
		case cur[i] != "":
			res.Unchanged = append(res.Unchanged, tag)
		case r.dryRun && i == 0:
			res.Steps = append(res.Steps, fmt.Sprintf("tag %s -> %s (versioned, immutable)", tag, newDigest))
		case r.dryRun:
			res.Steps = append(res.Steps, fmt.Sprintf("tag %s -> %s (immutable)", tag, newDigest))
		default:
			if err := r.reg.Tag(ctx, r.repo.Tag(tag), d); err != nil {
				return res, err
			}
			res.Tagged = append(res.Tagged, tag)
			r.logf(e.Name, "tagged %s", tag)
		}
	}
	if !r.floating {
		res.Pending = append(res.Pending, e.Floating...)
		return res, nil
	}
	old := map[string]string{}
	for _, f := range e.Floating {
		desc, err := r.reg.Head(ctx, r.repo.Tag(f))
		if err != nil {
			return res, err
		}
		if desc != nil {
			old[f] = desc.Digest.String()
		}
	}
	var moved []string
	for _, f := range e.Floating {
		if old[f] == newDigest {
			res.Unchanged = append(res.Unchanged, f)
			continue
		}
		if r.dryRun {
			res.Steps = append(res.Steps, fmt.Sprintf("move %s %s -> %s (floating)", f, orNone(old[f]), newDigest))
			continue
		}
		if err := r.reg.Tag(ctx, r.repo.Tag(f), d); err != nil {
			r.rollback(ctx, &res, moved, old)
			return res, fmt.Errorf("moving floating tag %s: %w; %s", f, err, describeRollback(res))
		}
		moved = append(moved, f)
		res.Tagged = append(res.Tagged, f)
		r.logf(e.Name, "moved %s", f)
	}
	return res, nil
}

// rollback points moved floating tags back at what they named before, in
// reverse order. A tag that did not exist before cannot be removed through
// the distribution API portably; it is reported as stranded (it names a
// verified image, so it is new rather than wrong).
func (r *Releaser) rollback(ctx context.Context, res *Result, moved []string, old map[string]string) {
	// Rolling back must not be cut short by the failure's own context.
	ctx = context.WithoutCancel(ctx)
	for i := len(moved) - 1; i >= 0; i-- {
		f := moved[i]
		prev := old[f]
		if prev == "" {
			res.Stranded = append(res.Stranded, f)
			continue
		}
		if err := r.reg.Tag(ctx, r.repo.Tag(f), r.repo.Digest(prev)); err != nil {
			res.Stranded = append(res.Stranded, f)
			r.logf(res.Entry, "could not move %s back to %s: %v", f, prev, err)
			continue
		}
		res.RolledBack = append(res.RolledBack, f)
	}
}

func describeRollback(res Result) string {
	var parts []string
	if len(res.RolledBack) > 0 {
		parts = append(parts, "moved back: "+strings.Join(res.RolledBack, ", "))
	}
	if len(res.Stranded) > 0 {
		parts = append(parts, "left on the new verified image: "+strings.Join(res.Stranded, ", "))
	}
	if len(parts) == 0 {
		return "no floating tag had moved"
	}
	return strings.Join(parts, "; ")
}

func reasons(rs []Reason) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.String())
	}
	return strings.Join(s, "; ")
}

// WriteText prints rep for people.
func (rep *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	if len(rep.Results) == 0 {
		fmt.Fprintf(&b, "nothing to release in %s\n", rep.Repository)
	}
	for _, res := range rep.Results {
		status := "ok"
		if res.Error != "" {
			status = "FAILED"
		}
		fmt.Fprintf(&b, "%s %s (%s)", status, res.Entry, res.Action)
		if res.Image != "" {
			fmt.Fprintf(&b, " %s", res.Image)
		}
		b.WriteString("\n")
		for _, s := range res.Steps {
			fmt.Fprintf(&b, "  would %s\n", s)
		}
		for _, m := range res.Missing {
			fmt.Fprintf(&b, "  missing %s\n", m)
		}
		for _, l := range []struct {
			label string
			tags  []string
		}{{"tagged", res.Tagged}, {"unchanged", res.Unchanged}, {"pending promotion", res.Pending}, {"moved back", res.RolledBack}, {"stranded", res.Stranded}} {
			if len(l.tags) > 0 {
				fmt.Fprintf(&b, "  %s: %s\n", l.label, strings.Join(l.tags, ", "))
			}
		}
		if res.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", res.Error)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
