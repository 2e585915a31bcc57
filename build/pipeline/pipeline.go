package pipeline

import (
	"context"
	"crypto"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/util/progress/progressui"
	"github.com/sigstore/sigstore/pkg/signature"
	"golang.org/x/sync/errgroup"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/marketplace"
	"github.com/imagectl/imagectl/extensions/openvsx"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/safefile"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/regauth"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/sbom"
	"github.com/imagectl/imagectl/sign"
)

func digests(m map[string]v1.Descriptor) map[string]string {
	out := make(map[string]string, len(m))
	for p, d := range m {
		out[p] = d.Digest.String()
	}
	return out
}

// maxSettingsFile bounds the settings.json written from matrix.yaml (itself
// at most 1 MiB).
const maxSettingsFile = 16 << 20

// Request is one `imagectl build`.
type Request struct {
	// Matrix and Catalog are resolved with Resolve into the set to build.
	Matrix  *matrix.Config
	Catalog *catalog.Catalog
	Resolve resolve.Request

	// Set, if not nil, is built as is instead of resolving Resolve (release
	// builds exactly the set it planned).
	Set *imagespec.Set

	// Definition renders the image definition and computes the inputs
	// digest (build.NewDefinition of Matrix with the command line's
	// overrides and imagectl's version); plan and release use the same.
	Definition *build.Definition
	// Revision is the source revision for org.opencontainers.image.revision.
	Revision string
	// SourceDateEpoch fixes every timestamp in the image.
	SourceDateEpoch time.Time

	// ExtensionCache holds the VSIX files; Sources download into it (default:
	// the Marketplace and Open VSX clients at matrix.yaml's upstreams).
	ExtensionCache *cache.Cache
	Sources        map[string]extensions.Source
	// FetchOptions configure the extension Fetcher (archive limits,
	// WithRequirePins); its warnings (files trusted on first use) go to
	// Warnings.
	FetchOptions []extensions.Option

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

	Provenance bool
	// SBOM asks buildkitd for its own SBOM attestation (its scanner image
	// must be pullable); the signed SBOM below is made either way.
	SBOM bool
	// SBOMFormat is the format of the signed SBOM attached to each platform
	// manifest: sbom.FormatSPDX (default, SPDX 2.3) or sbom.FormatCycloneDX.
	SBOMFormat string
	// SBOMFromLock attaches an SBOM written from the lock (the resolved set)
	// instead of one scanned from each platform image's content.
	SBOMFromLock bool
	CacheFrom    []string
	CacheTo      []string

	// Signer, if set, signs the pushed index and every platform manifest.
	Signer *sign.Signer
	// LoadSigner, when Signer is nil, gives the signer instead. Run calls it
	// only when it needs the key: for the published check without
	// VerifyKey, and otherwise before the first download of a build. A key
	// decrypted in the background (cosign's scrypt takes about 0.2 s)
	// therefore does not delay a build of published inputs.
	LoadSigner func(context.Context) (*sign.Signer, error)
	// VerifyKey, if set, is the public key of the signer, named
	// VerifyKeyName in messages: the published check verifies with it
	// instead of loading the signer, and a build fails before any download
	// if the signer's public key is another.
	VerifyKey     signature.Verifier
	VerifyKeyName string
	// Force builds, pushes and signs even when the versioned tag already
	// names an image of these inputs (Run step 3).
	Force bool

	// WorkDir holds the build contexts; empty means a temporary directory
	// removed afterwards.
	WorkDir string

	// Progress receives BuildKit's progress display in ProgressMode (auto,
	// tty, plain, quiet).
	Progress     io.Writer
	ProgressMode string
	// Warnings receives warnings that do not stop the build, e.g. a tools
	// image not pinned by digest (default: discarded).
	Warnings io.Writer
}

// Result is what `imagectl build --output json` prints.
type Result struct {
	// Ref is repo@index-digest (pushed) or the archive path.
	Ref          string `json:"ref"`
	Index        string `json:"index"`
	InputsDigest string `json:"inputsDigest"`
	// ToolsImage is the tools image reference the definition was rendered
	// with (name:tag@sha256:... once matrix refresh pinned it).
	ToolsImage string           `json:"toolsImage"`
	Platforms  []PlatformOutput `json:"platforms"`
	Tags       []string         `json:"tags,omitempty"`
	Archive    string           `json:"archive,omitempty"`
	// BytesPushed sums the blob uploads BuildKit reported, if it reported any.
	BytesPushed int64 `json:"bytesPushed,omitempty"`
	// EmulatedSteps sums the platforms' emulated RUN steps.
	EmulatedSteps int `json:"emulatedSteps"`
	// Published is set when nothing was built: the versioned tag already
	// names an image of these inputs; it says what was checked.
	Published string         `json:"published,omitempty"`
	Signed    *sign.Result   `json:"signed,omitempty"`
	Duration  build.Duration `json:"duration"`
	Set       imagespec.Set  `json:"set"`

	// What signing needs after the build (sign).
	provenance map[string]build.Statement
	repo       name.Repository
	epoch      time.Time
	remoteOpts []remote.Option
	sbomFormat string
	sbomLock   bool
}

// PlatformOutput is one platform's manifest and how it was built.
type PlatformOutput struct {
	Digest string `json:"digest"`
	build.PlatformResult
	// SBOM says how the platform's signed SBOM was made (with --sign).
	SBOM *SBOMOutput `json:"sbom,omitempty"`
}

// SBOMOutput is one platform's SBOM as attached.
type SBOMOutput struct {
	// Source is "image" (scanned from the image's content with syft) or
	// "lock" (written from the resolved set).
	Source string `json:"source"`
	Format string `json:"format"`
	// Packages counts the packages found per type (deb, python, npm,
	// vscode-extension, ...), for Source image.
	Packages map[string]int `json:"packages,omitempty"`
	// Duration is the scan's (pulling and reading the layers included).
	Duration build.Duration `json:"duration"`
}

// Run builds one image from start to finish, in this order:
//
//  1. resolve the set (versions, base digests, extension files), unless
//     req.Set is given;
//  2. render the definition, compute the inputs digest, render the tags;
//  3. with Push, unless Force: when the versioned tag already names an
//     image of these inputs (signed with Signer's key, when signing), stop
//     here and return it, with Published saying why: nothing is solved,
//     pushed or signed;
//  4. fetch the extension files into the cache (checksummed);
//  5. per platform: lay out the extensions, write settings and contexts;
//  6. solve every platform with b (concurrently, one progress display);
//  7. push the multi-platform index and tags, or write the OCI archive;
//  8. sign the index and every platform manifest.
func Run(ctx context.Context, b build.Interface, req Request) (*Result, error) {
	start := time.Now()
	cfg := req.Matrix

	if req.Definition == nil {
		return nil, fmt.Errorf("no image definition (build.NewDefinition)")
	}
	if f := req.SBOMFormat; f != "" && f != sbom.FormatSPDX && f != sbom.FormatCycloneDX {
		return nil, fmt.Errorf("SBOM format %q: want %s or %s", f, sbom.FormatSPDX, sbom.FormatCycloneDX)
	}

	// 1. Resolve.
	var set imagespec.Set
	if req.Set != nil {
		set = *req.Set
	} else {
		s, _, err := resolve.Resolve(cfg, req.Catalog, req.Resolve)
		if err != nil {
			return nil, fmt.Errorf("resolving: %w", err)
		}
		set = s
	}
	var err error
	for _, p := range set.Platforms {
		if set.CodeServer.Platforms[p] == "" {
			return nil, fmt.Errorf("resolved set has no base digest for %s (catalog entry of code-server %s): run imagectl matrix refresh where the registry is reachable, so the base is pinned", p, set.CodeServer.Version)
		}
	}
	repoName := req.Repo
	if repoName == "" && len(cfg.Image.Repositories) > 0 {
		repoName = cfg.Image.Repositories[0]
	}
	repo, err := name.NewRepository(repoName, nameOpts(req.Insecure)...)
	if err != nil {
		return nil, fmt.Errorf("image repository %q: %w", repoName, err)
	}
	// 2. Render and digest; the tags carry the inputs digest, so they are
	// rendered only now. Nothing is downloaded for this (the set names every
	// extension file by its sha256), and a set that cannot be rendered (no
	// python-build-standalone runtime locked) fails before any download.
	def, err := req.Definition.Render(set)
	if err != nil {
		return nil, err
	}
	// The set as built: its tools image is the one rendered (an override
	// replaces the catalog's pin), so the lock label says what was used.
	set = def.Set
	rendered, inputs := def.Definition, def.Inputs
	if !build.ToolsImagePinned(set.ToolsImage) && req.Warnings != nil {
		fmt.Fprintf(req.Warnings, "warning: tools image %s is not pinned by digest: the build uses whatever the tag names now, and a moved tag does not change the inputs digest %s; run imagectl matrix refresh to record its digest in the catalog (or give --tools-image NAME@sha256:...)\n", set.ToolsImage, inputs)
	}
	rtags, err := resolve.RenderTags(cfg, set, inputs)
	if err != nil {
		return nil, err
	}
	set.Tags = rtags.Names()

	// 3. Inputs already published: the versioned tag names an image of
	// exactly these inputs (and, when signing, its signatures verify with
	// the key). Then there is nothing to solve, push or sign.
	var tags []string
	if req.Push && !req.NoTags {
		tags = rtags.Immutable()
	}
	if len(tags) > 0 && !req.Force {
		pub, err := published(ctx, &req, repo.Tag(tags[0]), inputs, set.Platforms)
		if err != nil {
			return nil, err
		}
		if pub != nil {
			return &Result{
				Ref: repo.Digest(pub.index.String()).String(), Index: pub.index.String(), InputsDigest: inputs,
				ToolsImage: set.ToolsImage, Platforms: pub.platforms, Tags: tags, Published: pub.why, Set: set,
				Duration: build.Duration(time.Since(start)),
			}, nil
		}
	}

	// Everything that needs no download is checked before the first one:
	// every platform's buildkitd answers, and a push may happen. (The
	// signing key, decrypted meanwhile, is checked before the solve.)
	if err := preflight(ctx, b, set.Platforms, repo, req.Push); err != nil {
		return nil, err
	}

	// 4. Fetch the extension files.
	if req.ExtensionCache == nil {
		return nil, fmt.Errorf("no extension cache")
	}
	sources := req.Sources
	if sources == nil {
		sources = map[string]extensions.Source{
			matrix.SourceMarketplace: marketplace.New(marketplace.WithBaseURL(cfg.Upstreams.Marketplace)),
			matrix.SourceOpenVSX:     openvsx.New(openvsx.WithBaseURL(cfg.Upstreams.OpenVSX)),
		}
	}
	fopts := append([]extensions.Option(nil), req.FetchOptions...)
	if req.Warnings != nil {
		fopts = append(fopts, extensions.WithWarnings(req.Warnings))
	}
	for n, s := range sources {
		fopts = append(fopts, extensions.WithSource(n, s))
	}
	if _, err := extensions.NewFetcher(req.ExtensionCache, fopts...).Fetch(ctx, &set); err != nil {
		return nil, fmt.Errorf("fetching extensions: %w", err)
	}

	// 5. Contexts per platform.
	work := req.WorkDir
	if work == "" {
		if work, err = os.MkdirTemp("", "imagectl-build-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
	}
	baseRef, err := name.ParseReference(set.CodeServer.Base)
	if err != nil {
		return nil, fmt.Errorf("base image %q: %w", set.CodeServer.Base, err)
	}
	epoch := req.SourceDateEpoch.UTC()
	// The platforms' contexts are independent: laid out concurrently.
	specs := make([]build.Spec, len(set.Platforms))
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range set.Platforms {
		g.Go(func() error {
			spec, err := platformSpec(gctx, req, set, p, filepath.Join(work, strings.ReplaceAll(p, "/", "-")), rendered, inputs, baseRef, repo, epoch)
			specs[i] = spec
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// A signing key that does not load (or is not VerifyKey's private half)
	// stops the build here, before anything is solved or pushed.
	signer, err := req.signer(ctx)
	if err != nil {
		return nil, err
	}

	// 6. Solve.
	results, err := solveAll(ctx, b, specs, req.Progress, req.ProgressMode)
	if err != nil {
		return nil, err
	}

	// 7. Publish: push the index and tags, or write the archive.
	res := &Result{InputsDigest: inputs, ToolsImage: set.ToolsImage, Set: set, repo: repo, epoch: epoch,
		remoteOpts: regauth.RemoteOptions(ctx, req.RemoteOptions...), sbomFormat: req.SBOMFormat, sbomLock: req.SBOMFromLock}
	var plats map[string]string
	if req.Push {
		pub, err := build.Publish(ctx, repo, results, tags, regauth.RemoteOptions(ctx, req.RemoteOptions...))
		if err != nil {
			return nil, err
		}
		res.Index, res.Ref, res.Tags = pub.Index.String(), repo.Digest(pub.Index.String()).String(), tags
		plats = digests(pub.Platforms)
		res.provenance = pub.Provenance
	} else {
		dist := req.DistDir
		if dist == "" {
			dist = "dist"
		}
		archive := filepath.Join(dist, filepath.Base(repo.RepositoryStr())+"-"+set.Tags[0]+".oci.tar")
		parts := make([]string, len(specs))
		for i, s := range specs {
			parts[i] = s.Archive
		}
		h, descs, err := build.WriteArchive(archive, parts, results, repo.Name(), set.Tags[0])
		if err != nil {
			return nil, err
		}
		res.Index, res.Ref, res.Archive = h.String(), archive, archive
		plats = digests(descs)
	}
	for _, r := range results {
		res.Platforms = append(res.Platforms, PlatformOutput{Digest: plats[r.Platform], PlatformResult: *r})
		res.BytesPushed += r.BytesPushed
		res.EmulatedSteps += r.EmulatedSteps
	}

	// 8. Sign the index and every platform manifest; attach the SBOM (from
	// the lock) and BuildKit's provenance as signed attestations.
	if signer != nil {
		if !req.Push {
			return res, fmt.Errorf("signing needs a pushed image (--push)")
		}
		if err := res.sign(ctx, signer, req.Insecure); err != nil {
			return res, err
		}
	}
	res.Duration = build.Duration(time.Since(start))
	return res, nil
}

// signing reports whether the request signs what it builds.
func (req *Request) signing() bool { return req.Signer != nil || req.LoadSigner != nil }

// signer returns Signer, else what LoadSigner gives (nil when not signing),
// and checks it against VerifyKey.
func (req *Request) signer(ctx context.Context) (*sign.Signer, error) {
	if req.Signer == nil && req.LoadSigner != nil {
		s, err := req.LoadSigner(ctx)
		if err != nil {
			return nil, err
		}
		req.Signer = s
	}
	if req.Signer == nil || req.VerifyKey == nil {
		return req.Signer, nil
	}
	pk, err := req.Signer.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("public key of %s: %w", req.Signer, err)
	}
	vk, err := req.VerifyKey.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w", req.VerifyKeyName, err)
	}
	if eq, ok := vk.(interface{ Equal(crypto.PublicKey) bool }); !ok || !eq.Equal(pk) {
		return nil, fmt.Errorf("%s is not the public key of %s: the published check would trust signatures that key cannot make", req.VerifyKeyName, req.Signer)
	}
	return req.Signer, nil
}

// platformSpec lays out one platform's contexts in dir and returns its
// solve.
func platformSpec(ctx context.Context, req Request, set imagespec.Set, p, dir string, rendered []byte, inputs string, baseRef name.Reference, repo name.Repository, epoch time.Time) (build.Spec, error) {
	cfg := req.Matrix
	layout := filepath.Join(dir, "layout")
	installed, err := extensions.Layout(ctx, req.ExtensionCache, set.Extensions, extensions.LayoutOptions{
		Dir: layout, Platform: p, VSCode: set.CodeServer.VSCode, Time: &epoch,
	})
	if err != nil {
		return build.Spec{}, fmt.Errorf("laying out extensions for %s: %w", p, err)
	}
	folders := make([]build.ExtensionFolder, len(installed))
	for i, in := range installed {
		folders[i] = build.ExtensionFolder{ID: in.ID, Folder: in.Dir}
	}
	settingsFile := filepath.Join(dir, "settings.json")
	if err := extensions.WriteSettings(settingsFile, imagespec.ImageSettings(cfg.Settings), epoch); err != nil {
		return build.Spec{}, fmt.Errorf("writing settings.json: %w", err)
	}
	settings, err := safefile.ReadFile(settingsFile, maxSettingsFile)
	if err != nil {
		return build.Spec{}, err
	}
	reqs, locked := build.Requirements(set, p)
	if !locked && req.Warnings != nil {
		fmt.Fprintf(req.Warnings, "warning: no locked Python closure for %s in catalog.json: pip resolves the dependencies of ray %s and debugpy %s at build time, unpinned and unhashed; run imagectl matrix refresh to lock them\n", p, set.Ray, set.Debugpy)
	}
	ctxs, err := build.PrepareContexts(filepath.Join(dir, "contexts"), build.ContextInput{
		Definition: rendered, Requirements: reqs, Settings: settings,
		Layout: layout, Extensions: folders, Time: epoch,
	})
	if err != nil {
		return build.Spec{}, err
	}
	spec := build.Spec{
		Platform: p,
		Contexts: ctxs,
		BuildArgs: map[string]string{
			"BASE_IMAGE":     baseRef.Context().Name() + "@" + set.CodeServer.Platforms[p],
			"PYTHON_VERSION": set.Python,
		},
		Labels:          build.Labels(set, p, inputs, epoch, build.LabelSource{Source: cfg.Image.Source, Revision: req.Revision}),
		SourceDateEpoch: epoch,
		Repo:            repo.Name(),
		Push:            req.Push,
		Provenance:      req.Provenance && req.Push,
		SBOM:            req.SBOM,
		CacheFrom:       req.CacheFrom,
		CacheTo:         req.CacheTo,
	}
	if !req.Push {
		spec.Archive = filepath.Join(dir, "oci.tar")
	}
	return spec, nil
}

// sign signs the pushed index and every platform manifest with s, and
// attaches as signed attestations: to each platform manifest the SBOM
// scanned from that image's content (or written from the lock), to the
// index an SBOM written from the lock (every platform's closure), and
// BuildKit's provenance of each platform.
func (res *Result) sign(ctx context.Context, s *sign.Signer, insecure bool) error {
	sopts := []sign.Option{sign.WithNameOptions(nameOpts(insecure)...)}
	sres, err := sign.Image(ctx, res.Ref, s, sopts...)
	if err != nil {
		return fmt.Errorf("signing %s: %w", res.Ref, err)
	}
	res.Signed = sres
	in := sign.SBOMInputFromLock(res.Set, res.repo.Name(), res.epoch)
	if _, err := sign.AttestSBOM(ctx, res.Ref, s, in, append(sopts, sign.WithAllManifests(res.sbomLock))...); err != nil {
		return fmt.Errorf("attaching the SBOM to %s: %w", res.Ref, err)
	}
	for i, p := range res.Platforms {
		if res.sbomLock {
			res.Platforms[i].SBOM = &SBOMOutput{Source: "lock", Format: sbom.FormatSPDX}
			continue
		}
		ref := res.repo.Digest(p.Digest)
		start := time.Now()
		img, err := remote.Image(ref, res.remoteOpts...)
		if err != nil {
			return fmt.Errorf("reading %s (%s) for its SBOM: %w", ref, p.Platform, err)
		}
		version := ""
		if len(res.Set.Tags) > 0 {
			version = res.Set.Tags[0]
		}
		scan, err := sbom.Scan(ctx, img, sbom.Options{Name: res.repo.Name(), Version: version, Platform: p.Platform,
			Created: res.epoch, Extensions: res.Set.Extensions, Format: res.sbomFormat})
		if err != nil {
			return fmt.Errorf("SBOM of %s (%s): %w", ref, p.Platform, err)
		}
		if _, err := sign.Attest(ctx, ref.String(), s, scan.PredicateType, func(string) ([]byte, error) { return scan.Document, nil }, sopts...); err != nil {
			return fmt.Errorf("attaching %s's SBOM to %s: %w", p.Platform, ref, err)
		}
		format := res.sbomFormat
		if format == "" {
			format = sbom.FormatSPDX
		}
		res.Platforms[i].SBOM = &SBOMOutput{Source: "image", Format: format, Packages: scan.Counts, Duration: build.Duration(time.Since(start))}
	}
	for _, p := range res.Platforms {
		st, ok := res.provenance[p.Platform]
		if !ok {
			continue
		}
		ref := res.repo.Digest(p.Digest).String()
		if _, err := sign.Attest(ctx, ref, s, st.PredicateType, func(string) ([]byte, error) { return st.Predicate, nil }, sopts...); err != nil {
			return fmt.Errorf("attaching %s's provenance to %s: %w", p.Platform, ref, err)
		}
	}
	return nil
}

// solveAll builds every spec concurrently, showing one progress display for
// all of them.
func solveAll(ctx context.Context, b build.Interface, specs []build.Spec, out io.Writer, mode string) ([]*build.PlatformResult, error) {
	if out == nil {
		out, mode = io.Discard, string(progressui.QuietMode)
	}
	if mode == "" {
		mode = string(progressui.AutoMode)
	}
	d, err := progressui.NewDisplay(out, progressui.DisplayMode(mode))
	if err != nil {
		return nil, fmt.Errorf("progress display %q: %w", mode, err)
	}
	status := make(chan *client.SolveStatus)
	displayDone := make(chan struct{})
	go func() {
		defer close(displayDone)
		// A failed solve is reported by Build; the display only shows it.
		_, _ = d.UpdateFrom(context.WithoutCancel(ctx), status)
	}()
	results, err := solvePhases(ctx, b, specs, status)
	close(status)
	<-displayDone
	return results, err
}

// solvePhases solves every spec concurrently. When several are pushed, only
// the first pushes in that round; the others are prepared (exported into
// their buildkitd's store, every layer compressed) and then pushed one
// after the other by a second, cached solve. Concurrent pushes of a layer
// two platforms share (a universal extension, pure-Python packages) would
// both upload it, each having found it missing; pushed in turn, the second
// finds it there. The cost is one cached solve per platform after the
// first. The result of a platform solved twice counts the RUN steps of the
// first solve (the one that built) and the time of both.
func solvePhases(ctx context.Context, b build.Interface, specs []build.Spec, status chan<- *client.SolveStatus) ([]*build.PlatformResult, error) {
	twoPhase := len(specs) > 1 && specs[0].Push
	results := make([]*build.PlatformResult, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i := range specs {
		s := specs[i]
		s.Status = status
		if twoPhase && i > 0 {
			s.Push, s.Prepare, s.Provenance, s.CacheTo = false, true, false, nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = b.Build(ctx, s)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if !twoPhase {
		return results, nil
	}
	for i := 1; i < len(specs); i++ {
		s := specs[i]
		s.Status = status
		r, err := b.Build(ctx, s)
		if err != nil {
			return nil, err
		}
		built := results[i]
		r.Steps, r.EmulatedSteps, r.Emulated, r.CachedSteps = built.Steps, built.EmulatedSteps, built.Emulated, built.CachedSteps
		r.Duration += built.Duration
		results[i] = r
	}
	return results, nil
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
// docker config (or their absence).
func preflight(ctx context.Context, b build.Interface, platforms []string, repo name.Repository, push bool) error {
	if p, ok := b.(pinger); ok {
		for _, pl := range platforms {
			if _, err := p.Ping(ctx, pl); err != nil {
				return err
			}
		}
	}
	if push {
		if err := regauth.CheckPush(ctx, repo, nil, nil); err != nil {
			return err
		}
	}
	return nil
}
