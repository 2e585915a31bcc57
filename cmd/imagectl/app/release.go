package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/build/pipeline"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/release"
	"github.com/imagectl/imagectl/sign"
	smokeimage "github.com/imagectl/imagectl/smoke/image"
	"github.com/imagectl/imagectl/verify"
)

type releaseFlags struct {
	publishFlags
	// b holds the BuildKit, extension and image flags of imagectl build
	// (its definition flags are publishFlags.def).
	b            buildFlags
	dryRun       bool
	only         []string
	noFloating   bool
	expectDigest string
	output       string
	key          string
	passwordFile string
	keyless      bool
	verifyKey    string
	identityRE   string
	oidcIssuerRE string
	skipContents bool
	smokeImage   bool
	smoke        smokeImageFlags
}

func newReleaseCommand(g *globals) *cobra.Command {
	var f releaseFlags
	cmd := &cobra.Command{
		Use:   "release",
		Short: "Build what the plan asks for, push by digest, sign, verify, then move tags",
		Long: `release runs the plan (see imagectl plan) and, for each entry: builds the
planned set with the same BuildKit pipeline as imagectl build and pushes it by
digest (no tag), signs the index and every platform manifest (and attaches
the SBOM and provenance attestations), verifies it, and only then writes tags. Every extension file of an entry it
builds must be pinned by sha256 in the catalog (--require-pins is always on).

Tags: the versioned tag (the first of matrix.yaml) carries the inputs digest
and is immutable. The same inputs give the same versioned tag, so a re-run
finds it and writes nothing; if it names an image built from other inputs, the
entry fails before anything is built and no tag changes. Floating tags
(ray2.46.0, latest, ...) move only after verify passes, most specific first,
latest last; if one fails, those already moved are put back.

--no-floating stops after the versioned tag, so that a smoke test can gate the
promotion; a second run (with --expect-digest set to the tested digest) then
verifies again and moves the floating tags. A re-run after success writes
nothing. --dry-run prints the actions and writes nothing.`,
		Example: `  imagectl release --dry-run
  imagectl release --key cosign.key --buildkit-addr tcp://buildkitd:1234
  imagectl release --only 4.101.2-ray2.46.0-py3.12 --no-floating --key cosign.key --output json
  imagectl release --only 4.101.2-ray2.46.0-py3.12 --expect-digest sha256:... --key cosign.key
  imagectl release --keyless --certificate-identity-regexp '^https://github.com/imagectl/' --certificate-oidc-issuer https://token.actions.githubusercontent.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(f.output, "text", "json"); err != nil {
				return err
			}
			return g.runRelease(cmd, &f)
		},
	}
	f.publishFlags.add(cmd)
	f.b.ext.addCache(cmd)
	f.b.ext.addFetch(cmd, pinsAlways)
	fl := cmd.Flags()
	fl.StringVar(&f.b.ext.marketplaceURL, "marketplace-url", "", "VS Marketplace base URL (env IMAGECTL_MARKETPLACE_URL)")
	fl.StringVar(&f.b.ext.openvsxURL, "openvsx-url", "", "Open VSX base URL (env IMAGECTL_OPENVSX_URL)")
	fl.StringVar(&f.b.addr, "buildkit-addr", "", "buildkitd address (env BUILDKIT_HOST; default "+build.DefaultAddress+")")
	fl.StringVar(&f.b.driver, "driver", "remote", "remote (connect to --buildkit-addr) or docker-container (start a moby/buildkit container)")
	fl.StringArrayVar(&f.b.builders, "builder", nil, "PLATFORM=ADDR: build that platform on another buildkitd (repeatable)")
	fl.StringArrayVar(&f.b.cacheFrom, "cache-from", nil, "registry cache to import, REGISTRY/NAME[:TAG]")
	fl.StringArrayVar(&f.b.cacheTo, "cache-to", nil, "registry cache to export (mode=max), REGISTRY/NAME[:TAG]")
	fl.StringVar(&f.b.progress, "progress", "auto", "BuildKit progress: auto, tty, plain or quiet (on stderr)")
	fl.BoolVar(&f.b.provenance, "provenance", true, "attach buildkitd's SLSA provenance to each platform manifest")
	fl.StringVar(&f.b.sbomFormat, "sbom-format", "spdx", "format of the signed SBOM scanned from each platform image with syft: spdx (SPDX 2.3) or cyclonedx")
	fl.BoolVar(&f.b.sbomFromLock, "sbom-from-lock", false, "sign an SBOM written from the lock instead of scanning each platform image")
	fl.StringVar(&f.b.sourceDateEpoch, "source-date-epoch", "", "Unix time for every timestamp in the image (default: env SOURCE_DATE_EPOCH, else the git commit time, else 0)")
	fl.StringVar(&f.b.revision, "revision", "", "source revision label (default: git rev-parse HEAD)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print what would be built, signed and tagged; write nothing")
	fl.StringSliceVar(&f.only, "only", nil, "release only these entries: <code-server>-ray<ray>-py<python> as imagectl plan prints them, or their versioned tag")
	fl.BoolVar(&f.noFloating, "no-floating", false, "write the versioned tag only; leave floating tags for a later promotion")
	fl.StringVar(&f.expectDigest, "expect-digest", "", "refuse to tag any image but this digest (the one a smoke test passed)")
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	fl.StringVar(&f.key, "key", "", "cosign private key (password from --key-password-file or "+sign.PasswordEnv+")")
	fl.StringVar(&f.passwordFile, "key-password-file", "", "file holding the key password")
	fl.BoolVar(&f.keyless, "keyless", false, "sign keylessly (Fulcio + Rekor, OIDC identity from the environment, e.g. GitHub Actions with id-token: write)")
	fl.StringVar(&f.verifyKey, "verify-key", "", "public key to verify with (default: the public half of --key)")
	fl.StringVar(&f.identityRE, "certificate-identity-regexp", "", "keyless verify: accepted signer identity (regexp)")
	fl.StringVar(&f.oidcIssuerRE, "certificate-oidc-issuer", "", "keyless verify: accepted OIDC issuer (regexp)")
	fl.BoolVar(&f.skipContents, "skip-contents", false, "verify signatures, attestations and labels but not the layer contents")
	fl.BoolVar(&f.smokeImage, "smoke-image", true, "run imagectl smoke image on the image after verify, before any tag is written")
	f.smoke.add(cmd, "smoke-")
	return cmd
}

func (g *globals) runRelease(cmd *cobra.Command, f *releaseFlags) error {
	ctx := cmd.Context()
	if !f.b.ext.requirePins {
		return errors.New("release always requires pinned extension files: drop --require-pins=false (pin the catalog with imagectl extensions pin)")
	}
	ps, err := g.publishSetup(ctx, &f.publishFlags)
	if err != nil {
		return err
	}
	plan, err := release.NewPlanner(ps.reg, ps.def, ps.repo).Plan(ctx, ps.targets)
	if err != nil {
		return err
	}
	if plan, err = plan.Only(f.only); err != nil {
		return err
	}
	// A release never trusts an extension file on first use: every entry
	// it builds must have every file pinned by sha256 in the catalog.
	for _, e := range plan.Entries {
		if e.Action != release.ActionBuild {
			continue
		}
		if err := extensions.CheckPins(e.Set.Extensions, e.Set.Platforms); err != nil {
			return fmt.Errorf("release %s: %w", e.Name, err)
		}
	}
	var nopts []name.Option
	if f.insecure {
		nopts = append(nopts, name.Insecure)
	}
	var (
		builder release.Builder = release.BuilderFunc(func(context.Context, imagespec.Set, name.Repository) (name.Digest, error) {
			return name.Digest{}, errors.New("no builder (dry run)")
		})
		signer   release.Signer   = release.SignerFunc(func(context.Context, name.Digest) error { return errors.New("no signer (dry run)") })
		verifier release.Verifier = release.VerifierFunc(func(context.Context, name.Digest, imagespec.Set) error { return errors.New("no verifier (dry run)") })
	)
	if !f.dryRun && !plan.Empty() {
		s, vopt, err := f.signerAndVerifyOption(ctx)
		if err != nil {
			return err
		}
		if plan.NeedsBuild() {
			// Build and sign: the pipeline of imagectl build (same definition
			// as the plan), pushing by digest with no tag; the Publisher signs
			// in release's sign step, once.
			pub, err := f.publisher(cmd, g, ps, s)
			if err != nil {
				return err
			}
			builder, signer = pub, pub
		} else {
			signer = release.SignerFunc(func(context.Context, name.Digest) error {
				return errors.New("promotion signs nothing")
			})
		}
		cosignVerify := release.VerifierFunc(func(ctx context.Context, ref name.Digest, _ imagespec.Set) error {
			rep, err := verify.Image(ctx, ref.String(), vopt, verify.WithRemoteOptions(ps.ropts...), verify.WithNameOptions(nopts...), verify.WithSkipContents(f.skipContents))
			if err != nil {
				return err
			}
			return rep.Err()
		})
		// The one place the release pipeline is composed: the image must
		// carry the planned inputs, then pass imagectl verify.
		verifier = release.Verifiers(release.InputsVerifier(ps.reg, ps.def), cosignVerify)
	}
	opts := []release.ReleaseOption{release.WithDryRun(f.dryRun), release.WithFloating(!f.noFloating), release.WithExpectedDigest(f.expectDigest)}
	if f.smokeImage && !plan.Empty() {
		smoker, err := f.smoker(ctx, g, ps.ropts, nopts)
		if err != nil {
			return err
		}
		opts = append(opts, release.WithSmoker(smoker))
	}
	if g.verbose {
		opts = append(opts, release.WithLog(g.stderr))
	}
	rep, relErr := release.NewReleaser(ps.reg, ps.repo, builder, signer, verifier, opts...).Release(ctx, plan)
	if f.output == "json" {
		if err := writeJSON(g.stdout, rep); err != nil {
			return err
		}
	} else if err := rep.WriteText(g.stdout); err != nil {
		return err
	}
	return relErr
}

// smoker runs imagectl smoke image on a released digest; its report goes
// to stderr. The runtime is found before anything is built.
func (f *releaseFlags) smoker(ctx context.Context, g *globals, ropts []remote.Option, nopts []name.Option) (release.Smoker, error) {
	if f.dryRun {
		return release.SmokerFunc(func(context.Context, name.Digest, imagespec.Set) error { return errors.New("no smoke (dry run)") }), nil
	}
	opts, err := f.smoke.options(ctx, g)
	if err != nil {
		return nil, &exitError{2, fmt.Errorf("release runs imagectl smoke image (--smoke-image=false skips it): %w", err)}
	}
	return release.SmokerFunc(func(ctx context.Context, ref name.Digest, _ imagespec.Set) error {
		rep, err := smokeimage.Image(ctx, ref.String(), append(opts, smokeimage.WithRemoteOptions(ropts...), smokeimage.WithNameOptions(nopts...))...)
		if rep != nil {
			rep.WriteText(g.stderr)
		}
		if err != nil {
			return err
		}
		return rep.Err()
	}), nil
}

// publisher maps the build flags onto the pipeline imagectl build runs.
func (f *releaseFlags) publisher(cmd *cobra.Command, g *globals, ps *publishSetup, s *sign.Signer) (*pipeline.Publisher, error) {
	cache, err := f.b.ext.openCache(g)
	if err != nil {
		return nil, err
	}
	epoch, err := buildSourceDateEpoch(f.b.sourceDateEpoch)
	if err != nil {
		return nil, err
	}
	bk, err := f.b.buildKit(cmd)
	if err != nil {
		return nil, err
	}
	cfg := ps.cfg
	return pipeline.NewPublisher(bk, pipeline.Request{
		Matrix:          cfg,
		Sources:         f.b.ext.sources(cfg, f.b.ext.httpClient(g)),
		FetchOptions:    []extensions.Option{extensions.WithLimits(f.b.ext.limits()), extensions.WithRequirePins(true)},
		ExtensionCache:  cache,
		Definition:      ps.def,
		Revision:        firstNonEmpty(f.b.revision, gitRevision()),
		SourceDateEpoch: epoch,
		Insecure:        f.insecure,
		Provenance:      f.b.provenance,
		SBOMFormat:      f.b.sbomFormat,
		SBOMFromLock:    f.b.sbomFromLock,
		CacheFrom:       f.b.cacheFrom,
		CacheTo:         f.b.cacheTo,
		Progress:        g.stderr,
		Warnings:        g.stderr,
		ProgressMode:    f.b.progress,
	}, s), nil
}

// signerAndVerifyOption loads the signer and the matching verify option.
func (f *releaseFlags) signerAndVerifyOption(ctx context.Context) (*sign.Signer, verify.Option, error) {
	switch {
	case f.keyless && f.key != "":
		return nil, nil, errors.New("--keyless and --key are exclusive")
	case f.keyless:
		if f.identityRE == "" || f.oidcIssuerRE == "" {
			return nil, nil, errors.New("--keyless needs --certificate-identity-regexp and --certificate-oidc-issuer to verify what it signs")
		}
		s, err := sign.KeylessSigner(ctx, sign.KeylessOptions{})
		if err != nil {
			return nil, nil, err
		}
		return s, verify.WithKeylessRegexp(f.identityRE, f.oidcIssuerRE), nil
	case f.key != "":
		var pw sign.Password
		if f.passwordFile != "" {
			pw = sign.PasswordFromFile(f.passwordFile)
		}
		s, err := sign.LoadKey(ctx, f.key, pw)
		if err != nil {
			return nil, nil, err
		}
		if f.verifyKey != "" {
			v, err := verify.LoadPublicKey(f.verifyKey)
			if err != nil {
				return nil, nil, err
			}
			return s, verify.WithVerifier(v), nil
		}
		pem, err := s.PublicKeyPEM()
		if err != nil {
			return nil, nil, fmt.Errorf("public key of %s: %w", f.key, err)
		}
		v, err := verify.PublicKeyFromPEM(pem)
		if err != nil {
			return nil, nil, err
		}
		return s, verify.WithVerifier(v), nil
	default:
		return nil, nil, errors.New("no signer: pass --key cosign.key or --keyless")
	}
}
