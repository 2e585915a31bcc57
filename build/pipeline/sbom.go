package pipeline

import (
	"context"
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
	"golang.org/x/sync/errgroup"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/syncbuf"
	"github.com/imagectl/imagectl/regauth"
	"github.com/imagectl/imagectl/sbom"
	"github.com/imagectl/imagectl/sbom/document"
	"github.com/imagectl/imagectl/sign"
)

// maxConcurrentScans bounds the platform images scanned at once (each scan
// reads its layers into a scratch directory and runs syft's catalogers).
const maxConcurrentScans = 2

// attachSBOMs attaches the SBOMs as signed attestations: to the index the
// SBOM written from the lock (every platform's closure), to each platform
// manifest the SBOM scanned from that image (or written from the lock, with
// --sbom-from-lock). A manifest that already carries the same SBOM signed by
// s's key (the lock document, or a scan by this scanner: the manifest
// digest fixes the content, so a scan would write the same document) keeps
// it: nothing is scanned or uploaded for it, and its output says so. The
// platforms are scanned concurrently (at most maxConcurrentScans), each
// reading the base layers sg.layers decompressed, if any.
func (sg *Signing) attachSBOMs(ctx context.Context, s *sign.Signer, sopts []sign.Option) error {
	res := sg.res
	in := document.SBOMInputFromLock(res.Set, sg.repo.Name(), sg.epoch)
	doc, err := document.SPDX(in, "")
	if err != nil {
		return fmt.Errorf("SBOM of %s from the lock: %w", res.Ref, err)
	}
	if ok, _, err := sign.Attested(ctx, res.Ref, s, imagespec.PredicateSPDX, sign.SamePredicate(doc), sopts...); err != nil {
		return err
	} else if !ok {
		if _, err := sign.Attest(ctx, res.Ref, s, imagespec.PredicateSPDX, func(string) ([]byte, error) { return doc, nil }, append(sopts, sign.WithAllManifests(false))...); err != nil {
			return fmt.Errorf("attaching the SBOM to %s: %w", res.Ref, err)
		}
	}
	format := sbomFormat(sg.sbomFormat)
	var tool string
	if !sg.sbomLock {
		if sg.scanner == nil {
			return fmt.Errorf("no SBOM scanner (SignOptions.Scanner) to scan %s's platform images", res.Ref)
		}
		var err error
		if tool, err = sg.scanner.Tool(ctx); err != nil {
			return fmt.Errorf("the SBOM scanner: %w", err)
		}
	}
	warnings := syncbuf.NewWriter(sg.warnings) // the platforms warn concurrently
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxConcurrentScans)
	for i := range res.Platforms {
		p := res.Platforms[i]
		ref := sg.repo.Digest(p.Digest)
		g.Go(func() error {
			start := time.Now()
			out := &SBOMOutput{Source: "image", Format: format}
			predicateType, match := imagespec.PredicateSPDX, sbom.MadeBy(tool)
			var lockDoc []byte
			if sg.sbomLock {
				out.Source, out.Format = "lock", sbom.FormatSPDX
				var err error
				if lockDoc, err = document.SPDX(in, p.Platform); err != nil {
					return fmt.Errorf("SBOM of %s (%s) from the lock: %w", ref, p.Platform, err)
				}
				match = sign.SamePredicate(lockDoc)
			} else if format == sbom.FormatCycloneDX {
				predicateType = imagespec.PredicateCycloneDX
			}
			ok, why, err := sign.Attested(gctx, ref.String(), s, predicateType, match, sopts...)
			if err != nil {
				return err
			}
			if ok {
				out.Reused = why + ": not scanned, not attached again"
				out.Duration = build.Duration(time.Since(start))
				res.Platforms[i].SBOM = out
				return nil
			}
			doc := lockDoc
			early, err := sg.early.scanned(gctx, p.Platform, p.Digest)
			if err != nil {
				if gctx.Err() != nil {
					return gctx.Err()
				}
				fmt.Fprintf(warnings, "warning: scanning the %s image while it was pushed: %v; scanning it again\n", p.Platform, err)
			}
			if early != nil {
				scan := early.result
				doc, predicateType, out.Packages, out.BaseLayersPrefetched = scan.Document, scan.PredicateType, scan.Counts, scan.LayersPrefetched
				out.ReadFrom, out.WhilePushing = early.readFrom, true
			} else if !sg.sbomLock {
				img, from, done, err := sg.platformImage(gctx, ref, &res.Platforms[i], warnings)
				if err != nil {
					return err
				}
				defer done()
				defer func() { out.ReadFrom = from() }()
				var layerDir string
				if sg.layers != nil {
					if layerDir, err = sg.layers.layerDir(gctx, p.Platform); err != nil {
						if gctx.Err() != nil {
							return gctx.Err()
						}
						fmt.Fprintf(warnings, "warning: prefetching the %s base's layers for its SBOM: %v; the scan reads them itself\n", p.Platform, err)
					}
				}
				o := scanOptions(sg.repo, &res.Set, sg.epoch, format)
				o.Platform, o.LayerDir = p.Platform, layerDir
				scan, err := sg.scanner.Scan(gctx, img, o)
				if err != nil {
					return fmt.Errorf("SBOM of %s (%s): %w", ref, p.Platform, err)
				}
				doc, predicateType, out.Packages, out.BaseLayersPrefetched = scan.Document, scan.PredicateType, scan.Counts, scan.LayersPrefetched
			}
			if _, err := sign.Attest(gctx, ref.String(), s, predicateType, func(string) ([]byte, error) { return doc, nil }, sopts...); err != nil {
				return fmt.Errorf("attaching %s's SBOM to %s: %w", p.Platform, ref, err)
			}
			out.Duration = build.Duration(time.Since(start))
			if early != nil {
				out.Duration = build.Duration(early.duration)
			}
			res.Platforms[i].SBOM = out
			return nil
		})
	}
	return g.Wait()
}

// builderImages opens a platform image from the builder that made it
// (build.BuildKit.Image: buildkitd's content store), so that its scan
// does not read back what was just pushed.
type builderImages interface {
	Image(ctx context.Context, res *build.PlatformResult, manifest string, fallback v1.Image) (img v1.Image, close func() error, fromFallback func() int, err error)
}

// platformImage is the image p's scan reads: from the builder when it can
// (sg.images), with the layers the builder does not hold (a base's,
// pushed by cross-repository mount) from the registry; else read back
// from the registry, saying why on warnings. from says where it was read,
// once the scan is done; done releases it.
func (sg *Signing) platformImage(ctx context.Context, ref name.Digest, p *PlatformOutput, warnings io.Writer) (img v1.Image, from func() string, done func(), err error) {
	// The registry's copy: its manifest only, unless a layer is read from
	// it (every layer without a builder; those the builder lacks).
	pushed, err := remote.Image(ref, sg.remoteOpts...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading %s (%s) for its SBOM: %w", ref, p.Platform, err)
	}
	if sg.images != nil && p.Exported != "" {
		img, closeImg, fellBack, err := sg.images.Image(ctx, &p.PlatformResult, p.Digest, pushed)
		if err == nil {
			return img, func() string { return readFromBuilder(fellBack()) }, func() { _ = closeImg() }, nil
		}
		if ctx.Err() != nil {
			return nil, nil, nil, ctx.Err()
		}
		fmt.Fprintf(warnings, "warning: reading the %s image from its builder for its SBOM: %v; the scan reads it from the registry\n", p.Platform, err)
	}
	return pushed, func() string { return "registry" }, func() {}, nil
}

// layerSource gives the directory of a platform's base layers decompressed
// ahead of its scan (sbom.Options.LayerDir), "" for none: a speed-up of the
// scan, which reads the layers itself otherwise.
type layerSource interface {
	layerDir(ctx context.Context, platform string) (string, error)
}

// warmer is a Scanner that can start its scanners ahead of the scans
// (sbom.Command: each prepares syft's license matcher, about a second of
// CPU, while the solve leaves CPU idle); Close ends those no scan took.
type warmer interface {
	Warm(ctx context.Context, n int)
	Close() error
}

// basePrefetch decompresses each platform's base layers (sbom.Prefetch)
// while the build fetches, lays out and solves, for the scan of the
// platform image (beside its push, or after it): most of what a scan
// reads is the base, and the solve leaves CPU idle (one core of two,
// measured on the benchmark's cold build).
type basePrefetch struct {
	scanner   warmer // warmed, closed by stop
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	platforms map[string]*prefetched
}

// prefetched is one platform's prefetch: done is closed when it ended,
// with err.
type prefetched struct {
	dir  string
	done chan struct{}
	err  error
}

// startBasePrefetch starts the prefetch of every platform's base under
// work, and warms the scanner, when the build will scan its images
// (Request.scansPushedImages). nil when there is nothing to prefetch.
func startBasePrefetch(ctx context.Context, req *Request, set *imagespec.Set, work string) *basePrefetch {
	bases := baseDigests(set)
	if !req.scansPushedImages() || bases == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	bp := &basePrefetch{cancel: cancel, platforms: map[string]*prefetched{}}
	if w, ok := req.Sign.Scanner.(warmer); ok {
		w.Warm(ctx, min(len(set.Platforms), maxConcurrentScans))
		bp.scanner = w
	}
	opts := regauth.RemoteOptions(ctx, req.Publish.RemoteOptions...)
	for _, p := range set.Platforms {
		pf := &prefetched{dir: filepath.Join(work, "sbom-layers", strings.ReplaceAll(p, "/", "-")), done: make(chan struct{})}
		bp.platforms[p] = pf
		ref := bases[p]
		bp.wg.Add(1)
		go func() {
			defer bp.wg.Done()
			defer close(pf.done)
			img, err := remote.Image(ref, append(opts, remote.WithContext(ctx))...)
			if err == nil {
				err = sbom.Prefetch(ctx, img, pf.dir)
			}
			if err != nil {
				pf.err = fmt.Errorf("%s: %w", ref, err)
			}
		}()
	}
	return bp
}

// layerDir waits for platform's prefetch and returns its directory, for
// sbom.Options.LayerDir; "" when there was none or it failed (err says
// why: the scan then reads every layer itself).
func (bp *basePrefetch) layerDir(ctx context.Context, platform string) (string, error) {
	if bp == nil || bp.platforms[platform] == nil {
		return "", nil
	}
	pf := bp.platforms[platform]
	select {
	case <-pf.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if pf.err != nil {
		return "", pf.err
	}
	return pf.dir, nil
}

// stop cancels what is still running, waits for it and removes the
// layers (gigabytes; a scan removes the ones it read, but not when the
// SBOM was kept or the build failed before, and Request.WorkDir may be a
// directory that outlives the build).
func (bp *basePrefetch) stop() {
	if bp == nil {
		return
	}
	if bp.scanner != nil {
		_ = bp.scanner.Close() // the warm scanners no scan took: nothing to report
	}
	bp.cancel()
	bp.wg.Wait()
	for _, pf := range bp.platforms {
		_ = os.RemoveAll(pf.dir)
	}
}

// scansPushedImages reports whether the build scans each pushed platform
// image for its SBOM: it signs (or Build's caller will) with an SBOM
// scanned by Sign.Scanner (not SBOMFromLock), pushes, and its inputs are
// not known to be published (no Force: a forced rebuild of published
// inputs keeps the SBOMs its manifests already carry). The base prefetch
// and the scans beside the push run only then.
func (req *Request) scansPushedImages() bool {
	return (req.signs() || req.signLater) && !req.Sign.SBOMFromLock && req.Sign.Scanner != nil && req.Publish.Push && !req.Force
}

// baseDigests are set's base image for each of its platforms, by digest;
// nil when the base is not a reference (layout refuses it).
func baseDigests(set *imagespec.Set) map[string]name.Digest {
	ref, err := name.ParseReference(set.CodeServer.Base)
	if err != nil {
		return nil
	}
	out := map[string]name.Digest{}
	for _, p := range set.Platforms {
		out[p] = ref.Context().Digest(set.CodeServer.Platforms[p])
	}
	return out
}

// scanOptions are the scan options of set's platform images but Platform
// and LayerDir: the same for a scan beside the push and one after it, so
// both write the same document.
func scanOptions(repo name.Repository, set *imagespec.Set, epoch time.Time, format string) sbom.Options {
	o := sbom.Options{Name: repo.Name(), Created: epoch, Extensions: set.Extensions, Format: format}
	if len(set.Tags) > 0 {
		o.Version = set.Tags[0]
	}
	return o
}

// readFromBuilder is SBOMOutput.ReadFrom for an image read from its
// builder, n of whose layers came from a registry instead.
func readFromBuilder(n int) string {
	if n == 0 {
		return "builder"
	}
	return fmt.Sprintf("builder, %d layer(s) from the registry", n)
}
