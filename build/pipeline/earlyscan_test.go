package pipeline

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/build/buildtest"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
	"github.com/imagectl/imagectl/sbom"
)

// storeImages stands in for buildkitd's content store (builderImages): it
// opens each platform's image from the registry the test pushed it to, by
// the digest the prepare "exported", and records what it was asked.
type storeImages struct {
	repo name.Repository
	mu   sync.Mutex
	asks []string // "<platform> <want>"
}

func (s *storeImages) Image(_ context.Context, res *build.PlatformResult, want string, fallback v1.Image) (v1.Image, func() error, func() int, error) {
	s.mu.Lock()
	s.asks = append(s.asks, res.Platform+" "+want)
	s.mu.Unlock()
	if fallback == nil {
		return nil, nil, nil, errors.New("no fallback: an early scan passes the base")
	}
	if want == "" {
		want = res.Exported
	}
	img, err := remote.Image(s.repo.Digest(want))
	if err != nil {
		return nil, nil, nil, err
	}
	return img, func() error { return nil }, func() int { return 0 }, nil
}

// countingScanner is a Scanner that writes a small document naming the
// image it scanned, and counts its scans.
type countingScanner struct {
	mu    sync.Mutex
	scans []string // "<platform> <digest>"
}

func (c *countingScanner) Tool(context.Context) (string, error) { return "imagectl-syft-test", nil }

func (c *countingScanner) Scan(_ context.Context, img v1.Image, o sbom.Options) (*sbom.Result, error) {
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.scans = append(c.scans, o.Platform+" "+d.String())
	c.mu.Unlock()
	doc := []byte(`{"spdxVersion":"SPDX-2.3","name":"` + d.String() + `","creationInfo":{"creators":["Tool: imagectl-syft-test"]}}`)
	return &sbom.Result{Document: doc, PredicateType: imagespec.PredicateSPDX, Counts: map[string]int{"deb": 1}}, nil
}

// A signed push scans each platform image as the solve prepares it, from
// the builder's store (the base image given for the layers it lacks), and
// the sign stage attaches that scan: nothing is scanned after the push.
// A scan of another manifest than the one pushed is not used: the image
// pushed is scanned again, with a warning.
func TestEarlyScansAreWhatIsAttached(t *testing.T) {
	ctx := context.Background()
	s := signerForTest(t)
	for _, tc := range []struct {
		name      string
		pushed    func(p PlatformOutput, all []PlatformOutput) string // the digest "pushed" for p
		wantScans int                                                 // scans in all
		warning   string
	}{
		{"same manifest", func(p PlatformOutput, _ []PlatformOutput) string { return p.Digest }, 2, ""},
		{"another manifest pushed", func(p PlatformOutput, all []PlatformOutput) string {
			for _, o := range all {
				if o.Platform != p.Platform {
					return o.Digest
				}
			}
			return ""
		}, 4, "scanning it again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, set, platforms := earlyScanImage(t)
			images := &storeImages{repo: root.Context()}
			scanner := &countingScanner{}
			req := &Request{Sign: SignOptions{Signer: s, Scanner: scanner}, Publish: PublishOptions{Push: true}}
			tg := &target{rendered: &build.Rendered{Set: set}, repo: root.Context(), epoch: time.Unix(1752537600, 0)}
			es := startEarlyScans(ctx, req, tg, builderWithImages{images}, nil)
			if es == nil {
				t.Fatal("no early scans for a signed push by a builder that opens its images")
			}
			defer es.stop()
			for _, p := range platforms {
				es.prepared()(&p.PlatformResult)
			}
			res := &Result{Ref: root.String(), Set: set}
			for _, p := range platforms {
				p.Digest = tc.pushed(p, platforms)
				res.Platforms = append(res.Platforms, p)
			}
			var warnings bytes.Buffer
			sg := &Signing{res: res, repo: root.Context(), epoch: tg.epoch, scanner: scanner, images: images, early: es, warnings: &warnings}
			if err := sg.attachSBOMs(ctx, s, nil); err != nil {
				t.Fatal(err)
			}
			if len(scanner.scans) != tc.wantScans {
				t.Errorf("scans %q, want %d", scanner.scans, tc.wantScans)
			}
			for _, a := range images.asks[:2] {
				if !strings.HasSuffix(a, " ") {
					t.Errorf("the early scans asked the builder for %q, want its prepared image (want \"\")", images.asks)
				}
			}
			for _, p := range res.Platforms {
				early := tc.warning == ""
				if p.SBOM == nil || p.SBOM.WhilePushing != early || p.SBOM.ReadFrom != "builder" {
					t.Errorf("%s: SBOM output %+v, want whilePushing %v, read from the builder", p.Platform, p.SBOM, early)
				}
			}
			if tc.warning == "" && warnings.Len() > 0 || !strings.Contains(warnings.String(), tc.warning) {
				t.Errorf("warnings %q, want %q", warnings.String(), tc.warning)
			}
		})
	}

	// No early scans where the build would not scan after the push either,
	// or cannot read its images from the builder.
	root, set, _ := earlyScanImage(t)
	tg := &target{rendered: &build.Rendered{Set: set}, repo: root.Context()}
	for name, c := range map[string]struct {
		req Request
		b   build.Interface
	}{
		"not signing":      {Request{Sign: SignOptions{Scanner: &countingScanner{}}, Publish: PublishOptions{Push: true}}, builderWithImages{&storeImages{}}},
		"SBOM from lock":   {Request{Sign: SignOptions{Signer: s, Scanner: &countingScanner{}, SBOMFromLock: true}, Publish: PublishOptions{Push: true}}, builderWithImages{&storeImages{}}},
		"archive":          {Request{Sign: SignOptions{Signer: s, Scanner: &countingScanner{}}}, builderWithImages{&storeImages{}}},
		"forced":           {Request{Sign: SignOptions{Signer: s, Scanner: &countingScanner{}}, Publish: PublishOptions{Push: true}, Force: true}, builderWithImages{&storeImages{}}},
		"builder opens no": {Request{Sign: SignOptions{Signer: s, Scanner: &countingScanner{}}, Publish: PublishOptions{Push: true}}, &buildtest.Builder{}},
	} {
		if es := startEarlyScans(ctx, &c.req, tg, c.b, nil); es != nil {
			es.stop()
			t.Errorf("%s: early scans started", name)
		}
	}
	// ... and they start for the same request signing, pushing, with a
	// builder that opens its images.
	ok := Request{Sign: SignOptions{Signer: s, Scanner: &countingScanner{}}, Publish: PublishOptions{Push: true}}
	if es := startEarlyScans(ctx, &ok, tg, builderWithImages{&storeImages{}}, nil); es == nil {
		t.Error("a signed push by a builder that opens its images: no early scans")
	} else {
		es.stop()
	}
}

// builderWithImages is a build.Interface that opens the images it built.
type builderWithImages struct{ *storeImages }

func (builderWithImages) Build(context.Context, build.Spec) (*build.PlatformResult, error) {
	return nil, errors.New("not built here")
}

// earlyScanImage pushes the test image to a registry of its own and returns
// it, a set whose base is it and its platforms as the solve prepared them.
func earlyScanImage(t *testing.T) (name.Digest, imagespec.Set, []PlatformOutput) {
	t.Helper()
	root, im := pushTestImage(t, "team/img:t")
	spec := imagetest.Default()
	set := spec.Lock()
	set.Tags = []string{"t"}
	set.CodeServer.Base = root.Context().String()
	set.CodeServer.Platforms = map[string]string{}
	var platforms []PlatformOutput
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS == "unknown" {
			continue
		}
		p := d.Platform.OS + "/" + d.Platform.Architecture
		set.CodeServer.Platforms[p] = d.Digest.String() // a base that exists
		po := PlatformOutput{Digest: d.Digest.String()}
		po.Platform, po.Exported = p, d.Digest.String()
		platforms = append(platforms, po)
	}
	if len(platforms) != 2 {
		t.Fatalf("test image has %d platforms, want 2", len(platforms))
	}
	return root, set, platforms
}

// Build's caller signs later (imagectl release): the build scans each
// platform image while it is pushed, as Run does, and the Signing attaches
// those scans (no second scan), then removes the build's work directory
// with the base layers they read; a Signing closed without signing
// removes it too, and neither signs again. Run, pushing without signing,
// leaves no work directory either.
func TestBuildScansWhilePushingForTheLaterSign(t *testing.T) {
	ctx := context.Background()
	base, _, _ := earlyScanImage(t)
	inputs := func(t *testing.T) Request {
		host := newRegistry(t)
		req, _ := happyInputs(t)
		req.Set.CodeServer.Base = base.Context().String()
		req.Set.CodeServer.Platforms = map[string]string{}
		im, err := imagetest.PushedIndex(base)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range im.Manifests {
			if d.Platform != nil && d.Platform.OS == "linux" {
				req.Set.CodeServer.Platforms["linux/"+d.Platform.Architecture] = d.Digest.String()
			}
		}
		req.Publish = PublishOptions{Repo: host + "/team/code-server-ray", Push: true}
		req.Solve.Provenance = true
		return req
	}
	// workDirs are the build work directories under tmp (the TMPDIR the
	// test set: Request.WorkDir is empty).
	workDirs := func(t *testing.T, tmp string) []string {
		t.Helper()
		dirs, err := filepath.Glob(filepath.Join(tmp, "imagectl-build-*"))
		if err != nil {
			t.Fatal(err)
		}
		return dirs
	}
	for _, signs := range []bool{true, false} {
		t.Run(map[bool]string{true: "signed", false: "closed"}[signs], func(t *testing.T) {
			req := inputs(t)
			scanner := &countingScanner{}
			req.Sign = SignOptions{Scanner: scanner}
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			fake := buildtest.StoreBuilder{Builder: &buildtest.Builder{}}
			res, sg, err := Build(ctx, fake, req)
			if err != nil {
				t.Fatal(err)
			}
			if sg == nil {
				t.Fatal("Build: no sign stage")
			}
			if sg.early == nil {
				t.Fatal("Build: the sign stage holds no scans beside the push")
			}
			for _, p := range []string{"linux/amd64", "linux/arm64"} {
				var kinds []string
				for _, c := range fake.Calls() {
					if c.Spec.Platform == p {
						kinds = append(kinds, map[bool]string{true: "prepare", false: "push"}[c.Spec.Prepare])
					}
				}
				if strings.Join(kinds, " ") != "prepare push" {
					t.Errorf("%s solved as %q, want prepared (and scanned) before its push", p, kinds)
				}
			}
			for _, p := range res.Platforms {
				if _, err := sg.early.scanned(ctx, p.Platform, p.Digest); err != nil {
					t.Fatalf("%s: the scan beside the push: %v", p.Platform, err)
				}
			}
			work := workDirs(t, tmp)
			if len(work) != 1 {
				t.Fatalf("work directories after Build: %q, want the one the sign stage holds", work)
			}
			layers := filepath.Join(work[0], "sbom-layers")
			if ents, err := os.ReadDir(layers); err != nil || len(ents) != 2 {
				t.Fatalf("the bases' layers under %s after Build: %v, %v; want both platforms' kept for the sign stage", layers, ents, err)
			}
			s := signerForTest(t)
			if signs {
				if err := sg.Sign(ctx, s); err != nil {
					t.Fatal(err)
				}
				if len(scanner.scans) != 2 {
					t.Errorf("scans %q, want one per platform, beside its push", scanner.scans)
				}
				for _, p := range res.Platforms {
					if p.SBOM == nil || !p.SBOM.WhilePushing || p.SBOM.ReadFrom != "builder" {
						t.Errorf("%s: SBOM output %+v, want whilePushing, read from the builder", p.Platform, p.SBOM)
					}
				}
			} else {
				sg.Close()
				sg.Close() // idempotent
			}
			if left := workDirs(t, tmp); len(left) != 0 {
				t.Errorf("work directories after the sign stage ended: %q, want none", left)
			}
			if err := sg.Sign(ctx, s); err == nil || !strings.Contains(err.Error(), "signs once") {
				t.Errorf("Sign after the sign stage ended: %v, want it refused", err)
			}
		})
	}
	t.Run("Run, unsigned", func(t *testing.T) {
		req := inputs(t)
		req.Sign = SignOptions{Scanner: &countingScanner{}}
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		if _, err := Run(ctx, buildtest.StoreBuilder{Builder: &buildtest.Builder{}}, req); err != nil {
			t.Fatal(err)
		}
		if left := workDirs(t, tmp); len(left) != 0 {
			t.Errorf("work directories after Run: %q, want none", left)
		}
	})
}
