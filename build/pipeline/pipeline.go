package pipeline

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/signature"
	"golang.org/x/sync/errgroup"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/publish"
	"github.com/imagectl/imagectl/regauth"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/sbom"
	"github.com/imagectl/imagectl/sign"
)

// Request is one `imagectl build`: what to build, then the options of
// each stage.
type Request struct {
	// Matrix is matrix.yaml. Definition renders the image definition and
	// computes the inputs digest (build.NewDefinition of Matrix with the
	// command line's overrides and imagectl's version); plan and release
	// use the same.
	Matrix     *matrix.Config
	Definition *build.Definition

	// The set to build: Rendered as is (release builds the render its plan
	// made), else Set rendered with Definition, else Catalog resolved with
	// Resolve and rendered.
	Rendered *build.Rendered
	Set      *imagespec.Set
	Catalog  *catalog.Catalog
	Resolve  resolve.Request

	// Revision is the source revision for org.opencontainers.image.revision.
	Revision string
	// SourceDateEpoch fixes every timestamp in the image (resolved once by
	// the command with internal/sourcedate).
	SourceDateEpoch time.Time
	// Force builds, pushes and signs even when the versioned tag already
	// names an image of these inputs (the published check).
	Force bool
	// WorkDir holds the build contexts; empty means a temporary directory
	// removed afterwards.
	WorkDir string
	// Warnings receives warnings that do not stop the build, e.g. a tools
	// image not pinned by digest (default: discarded).
	Warnings io.Writer

	Extensions ExtensionOptions
	Solve      SolveOptions
	Publish    PublishOptions
	Sign       SignOptions

	// Settings is code-server's settings.json when the caller computed it
	// already (imagectl release: once per command); Run computes it from
	// Matrix otherwise.
	Settings []byte

	// signLater is set by Build: the caller signs with the Signing it
	// returns, so the build scans its pushed images as a signing one does.
	signLater bool
}

// ExtensionOptions are the fetch stage's: where the VSIX files come from.
type ExtensionOptions struct {
	// Cache holds the VSIX files; Sources download into it: the client of
	// each source of matrix.yaml (marketplace, openvsx), built by the caller
	// (imagectl's options.UpstreamOptions.ExtensionSources). Run fails
	// without them.
	Cache   *cache.Cache
	Sources map[string]extensions.Source
	// Limits bound every VSIX archive, when fetched and when laid out.
	Limits vsix.Limits
	// Options configure the Fetcher further (WithRequirePins).
	Options []extensions.Option
}

// SolveOptions are the solve stage's.
type SolveOptions struct {
	// Provenance asks buildkitd for SLSA provenance (pushed images only).
	Provenance bool
	// SBOM asks buildkitd for its own SBOM attestation (its scanner image
	// must be pullable); the signed SBOM is made either way.
	SBOM      bool
	CacheFrom []string
	CacheTo   []string
	// Progress receives BuildKit's progress display in ProgressMode (auto,
	// tty, plain, quiet).
	Progress     io.Writer
	ProgressMode string
}

// PublishOptions are the publish stage's: where the image goes.
type PublishOptions struct {
	// Repo is the image repository (default: matrix.yaml's first). With
	// Push the image is pushed there by digest and tagged with the set's
	// immutable tags (floating ones are moved by imagectl release), or with
	// no tag at all when NoTags is set (release writes tags itself, last);
	// otherwise an OCI archive is written to DistDir (default dist).
	Repo    string
	Push    bool
	NoTags  bool
	DistDir string
	// Insecure allows plain HTTP to a registry other than localhost.
	Insecure bool
	// RemoteOptions are extra go-containerregistry options for publishing
	// (a transport); credentials always come from the docker config
	// keychain (regauth), as BuildKit's own push gets them from its session.
	RemoteOptions []remote.Option
}

// SignOptions are the sign stage's.
type SignOptions struct {
	// Signer, if set, signs the pushed index and every platform manifest.
	Signer *sign.Signer
	// LoadSigner, when Signer is nil, gives the signer instead. Run calls it
	// only when it needs the key: for the published check without
	// VerifyKey, and otherwise before the solve. A key decrypted in the
	// background (cosign's scrypt takes about 0.2 s) therefore does not
	// delay a build of published inputs.
	LoadSigner func(context.Context) (*sign.Signer, error)
	// VerifyKey, if set, is the public key of the signer, named
	// VerifyKeyName in messages: the published check verifies with it
	// instead of loading the signer, and a build fails before any download
	// if the signer's public key is another.
	VerifyKey     signature.Verifier
	VerifyKeyName string
	// SBOMFormat is the format of the signed SBOM attached to each platform
	// manifest: sbom.FormatSPDX (default, SPDX 2.3) or sbom.FormatCycloneDX.
	SBOMFormat string
	// SBOMFromLock attaches an SBOM written from the lock (the resolved set)
	// instead of one scanned from each platform image's content.
	SBOMFromLock bool
	// Scanner scans each platform image for its SBOM (sbom.Command runs
	// imagectl-sbom); required when signing without SBOMFromLock.
	Scanner Scanner
}

// Scanner scans one platform image for its SBOM.
type Scanner interface {
	// Tool is the tool name and version the scanner writes into its
	// documents ("imagectl-syft-<version>"): a manifest that already
	// carries an SBOM by that tool, signed by the key, keeps it.
	Tool(ctx context.Context) (string, error)
	// Scan scans img and returns its SBOM.
	Scan(ctx context.Context, img v1.Image, o sbom.Options) (*sbom.Result, error)
}

// Run builds one image from start to finish; each stage is a function
// below, in this order:
//
//  1. resolve: the set (unless given), its rendered definition and inputs
//     digest, its tags and repository;
//  2. with Push, unless Force: when the versioned tag already names an
//     image of these inputs (signed with the key, when signing), stop here
//     and return it, with Published saying why (published.go);
//  3. preflight: every buildkitd answers and the registry takes a push;
//  4. fetch: the extension files into the cache, each validated once;
//  5. layout: per platform, the extensions, settings and build contexts;
//  6. solve: every platform with b (solve.go); a push to be signed (by
//     Run, or by Build's caller) starts each platform's SBOM scan as its
//     image is prepared, before its push (earlyscan.go);
//  7. publish: the multi-platform index and tags, or the OCI archive
//     (publish.go);
//  8. sign: the index and every platform manifest, with the SBOM and
//     provenance attestations.
func Run(ctx context.Context, b build.Interface, req Request) (*Result, error) {
	res, _, err := run(ctx, b, req)
	return res, err
}

// Build runs Run's stages but the last on a request that does not sign,
// and returns the image with its sign stage for the caller to run later
// (Signing.Sign; nil when nothing was pushed: an OCI archive, or an image
// already published for these inputs). imagectl release builds with it and
// signs in its own sign step.
//
// A push that the Signing will sign with a scanned SBOM is scanned as Run
// scans it, while it is pushed: the scans, the base layers they read and
// the build's work directory are held by the Signing until its Sign ends,
// or its Close for a caller that does not sign. They run under ctx.
func Build(ctx context.Context, b build.Interface, req Request) (*Result, *Signing, error) {
	if req.signs() {
		return nil, nil, fmt.Errorf("pipeline.Build does not sign: run the returned Signing instead")
	}
	req.signLater = true
	return run(ctx, b, req)
}

// run is Run's stages; the sign stage runs when the request signs, and is
// returned otherwise.
func run(ctx context.Context, b build.Interface, req Request) (*Result, *Signing, error) {
	start := time.Now()
	stages := stageTimes{last: start}
	if err := req.check(); err != nil {
		return nil, nil, err
	}
	t, err := resolveStage(&req)
	if err != nil {
		return nil, nil, err
	}
	stages.lap("resolve")
	if res, err := publishedStage(ctx, &req, t); res != nil || err != nil {
		if res != nil {
			stages.lap("published")
			res.Stages = stages.list
			res.Duration = build.Duration(time.Since(start))
		}
		return res, nil, err
	}
	stages.lap("published")
	work, cleanup, err := workDir(req.WorkDir)
	if err != nil {
		return nil, nil, err
	}
	// What the scans read lives until the sign stage ends: released when
	// run returns, or by the Signing handed to the caller (held.handOver).
	var held holder
	defer held.release()
	held.add(cleanup)
	// The bases are decompressed for the SBOM scans from here on, while
	// the extensions are fetched, laid out and solved.
	prefetch := startBasePrefetch(ctx, &req, t.set(), work)
	held.add(prefetch.stop) // before cleanup removes work
	if err := preflight(ctx, b, t.set().Platforms, t.repo, req.Publish.Push); err != nil {
		return nil, nil, err
	}
	stages.lap("preflight")
	files, err := fetchStage(ctx, &req, t.set())
	if err != nil {
		return nil, nil, err
	}
	stages.lap("fetch")
	pub := newPublisher(ctx, &req, t)
	specs, err := layoutStage(ctx, &req, t, files, work)
	if err != nil {
		return nil, nil, err
	}
	stages.lap("layout")
	// A signing key that does not load (or is not VerifyKey's private half)
	// stops the build here, before anything is solved or pushed.
	signer, err := req.signer(ctx)
	if err != nil {
		return nil, nil, err
	}
	stages.lap("key")
	// A push to be signed scans each platform image as it is pushed: the
	// solve prepares it in its buildkitd's store first, and the scan reads
	// it from there.
	scans := startEarlyScans(ctx, &req, t, b, prefetch)
	held.add(scans.stop) // before prefetch.stop removes the layers it reads
	results, err := solveAll(ctx, b, specs, req.Solve.Progress, req.Solve.ProgressMode, scans.prepared())
	if err != nil {
		return nil, nil, err
	}
	stages.lap("solve")
	out, err := pub.Publish(ctx, exports(specs, results))
	if err != nil {
		return nil, nil, err
	}
	stages.lap("publish")
	res := newResult(t, out, results)
	sg := newSigning(ctx, &req, t, res, out)
	if bi, ok := b.(builderImages); ok {
		sg.images = bi
	}
	sg.early = scans
	if prefetch != nil {
		sg.layers = prefetch // the scans read the bases it decompressed
	}
	if signer != nil {
		err := sg.sign(ctx, signer)
		stages.lap("sign")
		res.Stages = stages.list
		if err != nil {
			return res, nil, err
		}
		sg = nil
	}
	res.Stages = stages.list
	res.Duration = build.Duration(time.Since(start))
	if !req.Publish.Push || !req.signLater {
		// Nothing to sign (an archive), or Run's caller, which signs
		// nothing later: what the build holds is released on return.
		sg = nil
	}
	if sg != nil {
		// Build's caller signs later: the scans, the layers they read and
		// the work directory go with the sign stage.
		sg.release = held.handOver()
	}
	return res, sg, nil
}

// holder holds what a build releases when it ends (the work directory,
// the base prefetch, the scans beside the push), released last first.
type holder struct{ fs []func() }

func (h *holder) add(f func()) { h.fs = append(h.fs, f) }

// release releases what h holds, last first; h then holds nothing.
func (h *holder) release() {
	for i := len(h.fs) - 1; i >= 0; i-- {
		h.fs[i]()
	}
	h.fs = nil
}

// handOver returns a function that releases what h holds, once; h then
// holds nothing.
func (h *holder) handOver() func() {
	fs := h.fs
	h.fs = nil
	return sync.OnceFunc(func() { (&holder{fs: fs}).release() })
}

// stageTimes records how long each stage of Run took, in order.
type stageTimes struct {
	last time.Time
	list []StageTime
}

// lap ends the stage named name: it took the time since the previous lap
// (the first, since Run began).
func (s *stageTimes) lap(name string) {
	now := time.Now()
	s.list = append(s.list, StageTime{Name: name, Duration: build.Duration(now.Sub(s.last))})
	s.last = now
}

// check refuses a request that cannot succeed, before any work.
func (req *Request) check() error {
	if req.Definition == nil && req.Rendered == nil {
		return fmt.Errorf("no image definition (build.NewDefinition)")
	}
	if err := sbom.ValidateFormat(req.Sign.SBOMFormat); err != nil {
		return err
	}
	if req.signs() && !req.Publish.Push {
		return fmt.Errorf("signing needs a pushed image (--push)")
	}
	if req.signs() && !req.Sign.SBOMFromLock && req.Sign.Scanner == nil {
		return fmt.Errorf("signing with an SBOM scanned from each image needs a scanner (SignOptions.Scanner), or SBOMFromLock")
	}
	if req.Warnings == nil {
		req.Warnings = io.Discard
	}
	return nil
}

// target is what the resolve stage decides, and every later stage reads:
// the set as built with its rendered definition and inputs digest, the
// repository, the tags a push writes, and the time of every timestamp.
type target struct {
	rendered *build.Rendered
	repo     name.Repository
	tags     []string
	epoch    time.Time
}

// set is the set as built, its tags rendered.
func (t *target) set() *imagespec.Set { return &t.rendered.Set }

// resolveStage resolves the set (unless the request gives it), renders the
// definition and computes the inputs digest (unless the request gives the
// render), and renders the tags: they carry the inputs digest. Nothing is
// downloaded for this (the set names every extension file by its sha256),
// and a set that cannot be rendered (no python-build-standalone runtime
// locked) fails before any download.
func resolveStage(req *Request) (*target, error) {
	set, err := req.set()
	if err != nil {
		return nil, err
	}
	for _, p := range set.Platforms {
		if set.CodeServer.Platforms[p] == "" {
			return nil, fmt.Errorf("resolved set has no base digest for %s (catalog entry of code-server %s): run imagectl matrix refresh where the registry is reachable, so the base is pinned", p, set.CodeServer.Version)
		}
	}
	repo, err := req.repository()
	if err != nil {
		return nil, err
	}
	r := req.Rendered
	if r == nil {
		if r, err = req.Definition.Render(set); err != nil {
			return nil, err
		}
	}
	// The set as built: its tools image is the one rendered (an override
	// replaces the catalog's pin), so the lock label says what was used.
	t := &target{rendered: &build.Rendered{Set: r.Set, Params: r.Params, Definition: r.Definition, Inputs: r.Inputs}, repo: repo, epoch: req.SourceDateEpoch.UTC()}
	s := t.set()
	if !build.ToolsImagePinned(s.ToolsImage) {
		fmt.Fprintf(req.Warnings, "warning: tools image %s is not pinned by digest: the build uses whatever the tag names now, and a moved tag does not change the inputs digest %s; run imagectl matrix refresh to record its digest in the catalog (or give --tools-image NAME@sha256:...)\n", s.ToolsImage, r.Inputs)
	}
	tags, err := resolve.RenderTags(req.Matrix, *s, r.Inputs)
	if err != nil {
		return nil, err
	}
	s.Tags = tags.Names()
	if req.Publish.Push && !req.Publish.NoTags {
		t.tags = tags.Immutable()
	}
	return t, nil
}

// set is the set the request names: Rendered's, Set, or Catalog resolved.
func (req *Request) set() (imagespec.Set, error) {
	switch {
	case req.Rendered != nil:
		return req.Rendered.Set, nil
	case req.Set != nil:
		return *req.Set, nil
	}
	s, _, err := resolve.Resolve(req.Matrix, req.Catalog, req.Resolve)
	if err != nil {
		return imagespec.Set{}, fmt.Errorf("resolving: %w", err)
	}
	return s, nil
}

// repository is Publish.Repo, else matrix.yaml's first repository.
func (req *Request) repository() (name.Repository, error) {
	repoName := req.Publish.Repo
	if repoName == "" && req.Matrix != nil && len(req.Matrix.Image.Repositories) > 0 {
		repoName = req.Matrix.Image.Repositories[0]
	}
	repo, err := name.NewRepository(repoName, nameOpts(req.Publish.Insecure)...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("image repository %q: %w", repoName, err)
	}
	return repo, nil
}

// publishedStage returns the image already published for these inputs
// (published.go), as the build's result, or nil when the build must run:
// not pushing, no tag to look at, or Force.
func publishedStage(ctx context.Context, req *Request, t *target) (*Result, error) {
	if len(t.tags) == 0 || req.Force {
		return nil, nil
	}
	pub, err := published(ctx, req, t.repo.Tag(t.tags[0]), t.rendered.Inputs, t.set().Platforms)
	if err != nil || pub == nil {
		return nil, err
	}
	return &Result{
		Ref: t.repo.Digest(pub.index.String()).String(), Index: pub.index.String(), InputsDigest: t.rendered.Inputs,
		ToolsImage: t.set().ToolsImage, Platforms: pub.platforms, Tags: t.tags, Published: pub.why, Set: *t.set(),
	}, nil
}

// fetchStage downloads every extension file of set into the cache
// (checksummed; files already there are not downloaded) and returns each
// validated once (extensions.Fetcher.FetchFiles: a download as it was
// validated on arrival, a cached file read now): the files the layout
// stage extracts on every platform.
func fetchStage(ctx context.Context, req *Request, set *imagespec.Set) (extensions.Files, error) {
	x := req.Extensions
	if x.Cache == nil {
		return nil, fmt.Errorf("no extension cache")
	}
	if len(x.Sources) == 0 {
		return nil, fmt.Errorf("no extension sources: Request.Extensions.Sources must name the client of each source (%s, %s); the caller builds them", matrix.SourceMarketplace, matrix.SourceOpenVSX)
	}
	opts := append([]extensions.Option{extensions.WithLimits(x.Limits)}, x.Options...)
	opts = append(opts, extensions.WithWarnings(req.Warnings))
	for n, s := range x.Sources {
		opts = append(opts, extensions.WithSource(n, s))
	}
	files, err := extensions.NewFetcher(x.Cache, opts...).FetchFiles(ctx, set)
	if err != nil {
		return nil, fmt.Errorf("fetching extensions: %w", err)
	}
	return files, nil
}

// workDir returns dir, or a new temporary directory that cleanup removes.
func workDir(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "imagectl-build-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// layoutStage lays out every platform's build contexts under work,
// concurrently (they are independent), and returns their solves, each
// exported where the publisher publishes from (exportTo).
func layoutStage(ctx context.Context, req *Request, t *target, files extensions.Files, work string) ([]build.Spec, error) {
	set := t.set()
	settings := req.Settings
	if settings == nil {
		var err error
		if settings, err = extensions.SettingsJSON(imagespec.ImageSettings(req.Matrix.Settings)); err != nil {
			return nil, fmt.Errorf("settings.json from %s settings: %w", "matrix.yaml", err)
		}
	}
	baseRef, err := name.ParseReference(set.CodeServer.Base)
	if err != nil {
		return nil, fmt.Errorf("base image %q: %w", set.CodeServer.Base, err)
	}
	specs := make([]build.Spec, len(set.Platforms))
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range set.Platforms {
		dir := filepath.Join(work, strings.ReplaceAll(p, "/", "-"))
		g.Go(func() error {
			ctxs, err := platformContexts(gctx, req, t, files, settings, p, dir)
			if err != nil {
				return err
			}
			specs[i] = build.Spec{
				Platform: p,
				Contexts: ctxs,
				BuildArgs: map[string]string{
					"BASE_IMAGE":     baseRef.Context().Name() + "@" + set.CodeServer.Platforms[p],
					"PYTHON_VERSION": set.Python,
				},
				Labels:          build.Labels(*set, p, t.rendered.Inputs, t.epoch, build.LabelSource{Source: req.Matrix.Image.Source, Revision: req.Revision}),
				SourceDateEpoch: t.epoch,
				Repo:            t.repo.Name(),
				Provenance:      req.Solve.Provenance,
				SBOM:            req.Solve.SBOM,
				CacheFrom:       req.Solve.CacheFrom,
				CacheTo:         req.Solve.CacheTo,
			}
			exportTo(&specs[i], dir, req.Publish.Push)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return specs, nil
}

// platformContexts lays out platform p's extensions (the validated files)
// in dir and writes its build contexts there: the rendered definition, the
// locked requirements, settings.json and the extensions.
func platformContexts(ctx context.Context, req *Request, t *target, files extensions.Files, settings []byte, p, dir string) (build.Contexts, error) {
	set := t.set()
	layout := filepath.Join(dir, "layout")
	installed, err := extensions.Layout(ctx, req.Extensions.Cache, set.Extensions, extensions.LayoutOptions{
		Dir: layout, Platform: p, VSCode: set.CodeServer.VSCode, Time: &t.epoch, Limits: req.Extensions.Limits, Files: files,
	})
	if err != nil {
		return build.Contexts{}, fmt.Errorf("laying out extensions for %s: %w", p, err)
	}
	folders := make([]build.ExtensionFolder, len(installed))
	for i, in := range installed {
		folders[i] = build.ExtensionFolder{ID: in.ID, Folder: in.Dir}
	}
	reqs, locked := build.Requirements(*set, p)
	if !locked {
		fmt.Fprintf(req.Warnings, "warning: no locked Python closure for %s in catalog.json: pip resolves the dependencies of ray %s and debugpy %s at build time, unpinned and unhashed; run imagectl matrix refresh to lock them\n", p, set.Ray, set.Debugpy)
	}
	return build.PrepareContexts(filepath.Join(dir, "contexts"), build.ContextInput{
		Definition: t.rendered.Definition, Requirements: reqs, Settings: settings,
		Layout: layout, Extensions: folders, Time: t.epoch,
	})
}

// The solve stage is solveAll (solve.go); the publish stage is the
// publisher newPublisher picks (publish.go, package publish).

// newResult is what the build produced: the published index and each
// platform's manifest and solve.
func newResult(t *target, out *publish.Publication, results []*build.PlatformResult) *Result {
	res := &Result{
		Ref: out.Ref, Index: out.Index, Tags: out.Tags, Archive: out.Archive,
		InputsDigest: t.rendered.Inputs, ToolsImage: t.set().ToolsImage, Set: *t.set(),
	}
	for _, r := range results {
		res.Platforms = append(res.Platforms, PlatformOutput{Digest: out.Platforms[r.Platform], PlatformResult: *r})
		res.BytesPushed += r.BytesPushed
		res.EmulatedSteps += r.EmulatedSteps
	}
	return res
}

// newSigning is the sign stage of res: what it reads besides res.
func newSigning(ctx context.Context, req *Request, t *target, res *Result, out *publish.Publication) *Signing {
	return &Signing{
		res: res, provenance: out.Provenance, repo: t.repo, epoch: t.epoch, insecure: req.Publish.Insecure,
		remoteOpts: regauth.RemoteOptions(ctx, req.Publish.RemoteOptions...),
		sbomFormat: req.Sign.SBOMFormat, sbomLock: req.Sign.SBOMFromLock, scanner: req.Sign.Scanner, warnings: req.Warnings,
	}
}

// Sign runs the sign stage with s (see sign), then closes sg: a Signing
// signs once, and not after Close.
func (sg *Signing) Sign(ctx context.Context, s *sign.Signer) error {
	if sg.closed {
		return fmt.Errorf("the sign stage of %s has run or was closed: a Signing signs once", sg.res.Ref)
	}
	defer sg.Close()
	return sg.sign(ctx, s)
}

// Close releases what Build's sign stage holds for Sign (the scans beside
// the push, the base layers they read, the build's work directory), for a
// caller that does not sign; Sign closes sg itself. It may be called more
// than once, and on a nil Signing.
func (sg *Signing) Close() {
	if sg == nil {
		return
	}
	sg.closed = true
	if sg.release != nil {
		sg.release()
	}
}

// sign is the sign stage: it signs the pushed index and every platform
// manifest with s, and attaches as signed attestations: to the index an
// SBOM written from the lock (every platform's closure), to each platform
// manifest the SBOM scanned from that image's content (or written from the
// lock), and BuildKit's provenance of each platform. SBOMs already attached
// are kept (attachSBOMs). The scans read the base layers sg.layers has
// decompressed (nil: none). The signatures and the attestations are
// separate images (cosign's .sig and .att tags): they are made
// concurrently, the signatures while the scans end.
func (sg *Signing) sign(ctx context.Context, s *sign.Signer) error {
	res := sg.res
	sopts := []sign.Option{sign.WithNameOptions(nameOpts(sg.insecure)...)}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		sres, err := sign.Image(gctx, res.Ref, s, sopts...)
		if err != nil {
			return fmt.Errorf("signing %s: %w", res.Ref, err)
		}
		res.Signed = sres
		return nil
	})
	g.Go(func() error { return sg.attest(gctx, s, sopts) })
	return g.Wait()
}

// attest attaches the SBOMs (attachSBOMs) and then each platform's
// provenance, which goes to the same attestation image as its SBOM:
// concurrently per platform.
func (sg *Signing) attest(ctx context.Context, s *sign.Signer, sopts []sign.Option) error {
	if err := sg.attachSBOMs(ctx, s, sopts); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, p := range sg.res.Platforms {
		st, ok := sg.provenance[p.Platform]
		if !ok {
			continue
		}
		ref := sg.repo.Digest(p.Digest).String()
		g.Go(func() error {
			if _, err := sign.Attest(gctx, ref, s, st.PredicateType, func(string) ([]byte, error) { return st.Predicate, nil }, sopts...); err != nil {
				return fmt.Errorf("attaching %s's provenance to %s: %w", p.Platform, ref, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// signs reports whether the request signs what it builds.
func (req *Request) signs() bool { return req.Sign.Signer != nil || req.Sign.LoadSigner != nil }

// signer returns Sign.Signer, else what Sign.LoadSigner gives (nil when not
// signing), and checks it against Sign.VerifyKey.
func (req *Request) signer(ctx context.Context) (*sign.Signer, error) {
	so := &req.Sign
	if so.Signer == nil && so.LoadSigner != nil {
		s, err := so.LoadSigner(ctx)
		if err != nil {
			return nil, err
		}
		so.Signer = s
	}
	if so.Signer == nil || so.VerifyKey == nil {
		return so.Signer, nil
	}
	pk, err := so.Signer.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("public key of %s: %w", so.Signer, err)
	}
	vk, err := so.VerifyKey.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w", so.VerifyKeyName, err)
	}
	if eq, ok := vk.(interface{ Equal(crypto.PublicKey) bool }); !ok || !eq.Equal(pk) {
		return nil, fmt.Errorf("%s is not the public key of %s: the published check would trust signatures that key cannot make", so.VerifyKeyName, so.Signer)
	}
	return so.Signer, nil
}

func nameOpts(insecure bool) []name.Option {
	if insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

// pinger is a builder that can say, before any work, whether the builder of a
// platform answers (build.BuildKit does).
type pinger interface {
	Ping(ctx context.Context, platform string) (string, error)
}

// preflight fails fast on what needs no download: a buildkitd that does not
// answer, and, with push, a registry that refuses the credentials of the
// docker config (or their absence). The checks run together and every
// problem is reported, each once (platforms built on one buildkitd fail
// alike), so one run says all there is to fix.
func preflight(ctx context.Context, b build.Interface, platforms []string, repo name.Repository, push bool) error {
	var checks []func() error
	if p, ok := b.(pinger); ok {
		for _, pl := range platforms {
			checks = append(checks, func() error { _, err := p.Ping(ctx, pl); return err })
		}
	}
	if push {
		checks = append(checks, func() error { return regauth.CheckPush(ctx, repo, nil, nil) })
	}
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, check := range checks {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = check() }()
	}
	wg.Wait()
	seen := map[string]bool{}
	errs = slices.DeleteFunc(errs, func(err error) bool {
		if err == nil || seen[err.Error()] {
			return true
		}
		seen[err.Error()] = true
		return false
	})
	return errors.Join(errs...)
}
