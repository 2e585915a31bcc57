package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sync/errgroup"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/sbom"
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
// platforms are scanned concurrently (at most maxConcurrentScans).
func (res *Result) attachSBOMs(ctx context.Context, s *sign.Signer, sopts []sign.Option) error {
	in := sign.SBOMInputFromLock(res.Set, res.signing.repo.Name(), res.signing.epoch)
	doc, err := sign.SPDX(in, "")
	if err != nil {
		return fmt.Errorf("SBOM of %s from the lock: %w", res.Ref, err)
	}
	if ok, _, err := sign.Attested(ctx, res.Ref, s, sign.PredicateSPDX, sign.SamePredicate(doc), sopts...); err != nil {
		return err
	} else if !ok {
		if _, err := sign.Attest(ctx, res.Ref, s, sign.PredicateSPDX, func(string) ([]byte, error) { return doc, nil }, append(sopts, sign.WithAllManifests(false))...); err != nil {
			return fmt.Errorf("attaching the SBOM to %s: %w", res.Ref, err)
		}
	}
	format := res.signing.sbomFormat
	if format == "" {
		format = sbom.FormatSPDX
	}
	version := ""
	if len(res.Set.Tags) > 0 {
		version = res.Set.Tags[0]
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxConcurrentScans)
	for i := range res.Platforms {
		p := res.Platforms[i]
		ref := res.signing.repo.Digest(p.Digest)
		g.Go(func() error {
			start := time.Now()
			out := &SBOMOutput{Source: "image", Format: format}
			predicateType, match := sbom.PredicateSPDX, sbom.MadeByThisScanner
			var lockDoc []byte
			if res.signing.sbomLock {
				out.Source, out.Format = "lock", sbom.FormatSPDX
				var err error
				if lockDoc, err = sign.SPDX(in, p.Platform); err != nil {
					return fmt.Errorf("SBOM of %s (%s) from the lock: %w", ref, p.Platform, err)
				}
				match = sign.SamePredicate(lockDoc)
			} else if format == sbom.FormatCycloneDX {
				predicateType = sbom.PredicateCycloneDX
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
			if !res.signing.sbomLock {
				img, err := remote.Image(ref, res.signing.remoteOpts...)
				if err != nil {
					return fmt.Errorf("reading %s (%s) for its SBOM: %w", ref, p.Platform, err)
				}
				scan, err := sbom.Scan(gctx, img, sbom.Options{Name: res.signing.repo.Name(), Version: version, Platform: p.Platform,
					Created: res.signing.epoch, Extensions: res.Set.Extensions, Format: format})
				if err != nil {
					return fmt.Errorf("SBOM of %s (%s): %w", ref, p.Platform, err)
				}
				doc, predicateType, out.Packages = scan.Document, scan.PredicateType, scan.Counts
			}
			if _, err := sign.Attest(gctx, ref.String(), s, predicateType, func(string) ([]byte, error) { return doc, nil }, sopts...); err != nil {
				return fmt.Errorf("attaching %s's SBOM to %s: %w", p.Platform, ref, err)
			}
			out.Duration = build.Duration(time.Since(start))
			res.Platforms[i].SBOM = out
			return nil
		})
	}
	return g.Wait()
}
