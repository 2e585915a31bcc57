package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/build/pipeline"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/keys"
	"github.com/imagectl/imagectl/release"
	"github.com/imagectl/imagectl/release/builder"
	"github.com/imagectl/imagectl/sign"
	smokeimage "github.com/imagectl/imagectl/smoke/image"
	"github.com/imagectl/imagectl/verify"
)

type releaseFlags struct {
	publishFlags
	// The extension, BuildKit and image flags of imagectl build (its
	// definition flags are publishFlags.def).
	ext          options.ExtensionsOptions
	bk           options.BuildKitOptions
	img          options.ImageOptions
	key          options.KeyOptions
	cert         options.CertificateOptions
	out          options.OutputOptions
	dryRun       bool
	only         []string
	noFloating   bool
	expectDigest string
	keyless      bool
	skipContents bool
	smokeImage   bool
	smoke        options.SmokeImageOptions
}

// Validate refuses what release cannot do whatever the plan says.
func (f *releaseFlags) Validate() error {
	switch {
	case !f.ext.RequirePins:
		return errors.New("release always requires pinned extension files: drop --require-pins=false (pin the catalog with imagectl extensions pin)")
	case f.keyless && f.key.Key != "":
		return errors.New("--keyless and --key are exclusive")
	case f.keyless && !f.cert.Complete():
		return errors.New("--keyless needs an identity (--certificate-identity[-regexp]) and an OIDC issuer (--certificate-oidc-issuer[-regexp]) to verify what it signs")
	case f.smokeImage:
		return f.smoke.Validate()
	}
	return nil
}

// New returns imagectl release.
func New(g *options.Globals) *cobra.Command {
	f := releaseFlags{
		key: options.KeyOptions{KeyUsage: "cosign private key (password from --key-password-file or " + sign.PasswordEnv + ")",
			VerifyKeyUsage: "public key to verify with (default: the public half of --key)"},
		out: options.NewOutputOptions("text", "json"),
	}
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
nothing. --dry-run prints the actions and writes nothing; it lists the
extension files a release would refuse as unpinned ("missing pin:"), and exits
1 when an entry would be refused.`,
		Example: `  imagectl release --dry-run
  imagectl release --key cosign.key --buildkit-addr tcp://buildkitd:1234
  imagectl release --only 4.101.2-ray2.46.0-py3.12 --no-floating --key cosign.key --output json
  imagectl release --only 4.101.2-ray2.46.0-py3.12 --expect-digest sha256:... --key cosign.key
  imagectl release --keyless --certificate-identity-regexp '^https://github.com/imagectl/' --certificate-oidc-issuer https://token.actions.githubusercontent.com
  imagectl release --dry-run -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRelease(g, cmd, &f) },
	}
	f.ext.AddCache(cmd.Flags())
	f.ext.AddFetch(cmd.Flags(), options.PinsAlways)
	options.Add(cmd, &f.publishFlags, &f.ext.Upstream, &f.bk, &f.img, &f.key, &f.cert, &f.out, options.Check(f.Validate))
	fl := cmd.Flags()
	fl.BoolVar(&f.dryRun, "dry-run", false, "print what would be built, signed and tagged; write nothing")
	fl.StringSliceVar(&f.only, "only", nil, "release only these entries: <code-server>-ray<ray>-py<python> as imagectl plan prints them, or their versioned tag")
	fl.BoolVar(&f.noFloating, "no-floating", false, "write the versioned tag only; leave floating tags for a later promotion")
	fl.StringVar(&f.expectDigest, "expect-digest", "", "refuse to tag any image but this digest (the one a smoke test passed)")
	fl.BoolVar(&f.keyless, "keyless", false, "sign keylessly (Fulcio + Rekor, OIDC identity from the environment, e.g. GitHub Actions with id-token: write)")
	fl.BoolVar(&f.skipContents, "skip-contents", false, "verify signatures, attestations and labels but not the layer contents")
	fl.BoolVar(&f.smokeImage, "smoke-image", true, "run imagectl smoke image on the image after verify, before any tag is written")
	f.smoke.Add(cmd.Flags(), "smoke-")
	options.AddCommandTimeout(g, cmd, "timeout", 6*time.Hour, "host")
	options.ReadsFiles(cmd)
	return cmd
}

func runRelease(g *options.Globals, cmd *cobra.Command, f *releaseFlags) error {
	ctx := cmd.Context()
	ps, err := setup(ctx, g, &f.publishFlags)
	if err != nil {
		return err
	}
	plan, err := release.NewPlanner(ps.reg, ps.repo).Plan(ctx, ps.targets)
	if err != nil {
		return err
	}
	if plan, err = plan.Only(f.only); err != nil {
		return err
	}
	// Unpinned extension files refuse a release before anything is built;
	// a dry run shows the plan and lists them.
	unpinned := planPins(plan)
	if !f.dryRun {
		var errs []error
		for _, e := range plan.Entries {
			if uerr := unpinned[e.Name]; uerr != nil {
				errs = append(errs, fmt.Errorf("release %s: %w", e.Name, uerr))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	nopts := f.reg.NameOptions()
	var (
		builder release.Builder = release.BuilderFunc(func(context.Context, release.Entry, name.Repository) (name.Digest, error) {
			return name.Digest{}, errors.New("no builder (dry run)")
		})
		signer   release.Signer   = release.SignerFunc(func(context.Context, name.Digest) error { return errors.New("no signer (dry run)") })
		verifier release.Verifier = release.VerifierFunc(func(context.Context, name.Digest, release.Entry) error { return errors.New("no verifier (dry run)") })
	)
	if !f.dryRun && !plan.Empty() {
		s, vopt, err := f.signerAndVerifyOption(ctx)
		if err != nil {
			return err
		}
		if plan.NeedsBuild() {
			// Build and sign: the pipeline of imagectl build (from the
			// plan's render of each set), pushing by digest with no tag; the
			// builder.Builder signs in release's sign step, once.
			pub, err := f.publisher(cmd, g, ps, s)
			if err != nil {
				return err
			}
			defer pub.Close()
			builder, signer = pub, pub
		} else {
			signer = release.SignerFunc(func(context.Context, name.Digest) error {
				return errors.New("promotion signs nothing")
			})
		}
		cosignVerify := release.VerifierFunc(func(ctx context.Context, ref name.Digest, _ release.Entry) error {
			rep, err := verify.Image(ctx, ref.String(), vopt, verify.WithRemoteOptions(ps.ropts...), verify.WithNameOptions(nopts...), verify.WithSkipContents(f.skipContents))
			if err != nil {
				return err
			}
			return rep.Err()
		})
		// The one place the release pipeline is composed: the image must
		// carry the planned inputs, then pass imagectl verify.
		verifier = release.Verifiers(release.InputsVerifier(ps.reg), cosignVerify)
	}
	opts := []release.ReleaseOption{release.WithDryRun(f.dryRun), release.WithFloating(!f.noFloating), release.WithExpectedDigest(f.expectDigest)}
	if f.smokeImage && !plan.Empty() {
		smoker, err := f.smoker(ctx, g, ps.ropts, nopts)
		if err != nil {
			return err
		}
		opts = append(opts, release.WithSmoker(smoker))
	}
	if g.Verbose {
		opts = append(opts, release.WithLog(g.Stderr))
	}
	rep, relErr := release.NewReleaser(ps.reg, ps.repo, builder, signer, verifier, opts...).Release(ctx, plan)
	for i, res := range rep.Results {
		uerr, ok := unpinned[res.Entry]
		if !ok {
			continue
		}
		for _, u := range uerr.Files {
			rep.Results[i].Missing = append(rep.Results[i].Missing, "pin: "+u.String())
		}
		rep.Results[i].Error = strings.TrimPrefix(rep.Results[i].Error+"; "+uerr.Error(), "; ")
		relErr = errors.Join(relErr, fmt.Errorf("release %s would be refused: %w", res.Entry, uerr))
	}
	if f.out.JSON() {
		if err := options.WriteJSON(g.Stdout, rep); err != nil {
			return err
		}
	} else if err := rep.WriteText(g.Stdout); err != nil {
		return err
	}
	return relErr
}

// planPins are the entries of plan a release refuses, by name, each with
// the error naming every extension file it would build unpinned: a release
// never trusts an extension file on first use, so every entry it builds
// must have every file pinned by sha256 in the catalog.
func planPins(plan *release.Plan) map[string]*extensions.UnpinnedError {
	out := map[string]*extensions.UnpinnedError{}
	for _, e := range plan.Entries {
		if e.Action != release.ActionBuild {
			continue
		}
		var uerr *extensions.UnpinnedError
		if errors.As(extensions.CheckPins(e.Set.Extensions, e.Set.Platforms), &uerr) {
			out[e.Name] = uerr
		}
	}
	return out
}

// smoker runs imagectl smoke image on a released digest; its report goes
// to stderr. The runtime is found before anything is built.
func (f *releaseFlags) smoker(ctx context.Context, g *options.Globals, ropts []remote.Option, nopts []name.Option) (release.Smoker, error) {
	if f.dryRun {
		return release.SmokerFunc(func(context.Context, name.Digest, imagespec.Set) error { return errors.New("no smoke (dry run)") }), nil
	}
	opts, err := f.smoke.Options(ctx, g)
	if err != nil {
		return nil, &options.ExitError{Code: options.ExitUsage, Err: fmt.Errorf("release runs imagectl smoke image (--smoke-image=false skips it): %w", err)}
	}
	return release.SmokerFunc(func(ctx context.Context, ref name.Digest, _ imagespec.Set) error {
		rep, err := smokeimage.Image(ctx, ref.String(), append(opts, smokeimage.WithRemoteOptions(ropts...), smokeimage.WithNameOptions(nopts...))...)
		if rep != nil {
			rep.WriteText(g.Stderr)
		}
		if err != nil {
			return err
		}
		return rep.Err()
	}), nil
}

// publisher maps the build flags onto the pipeline imagectl build runs.
func (f *releaseFlags) publisher(cmd *cobra.Command, g *options.Globals, ps *publishSetup, s *sign.Signer) (*builder.Builder, error) {
	cache, err := f.ext.OpenCache(g)
	if err != nil {
		return nil, err
	}
	epoch, err := options.SourceDateEpoch(f.img.SourceDateEpoch)
	if err != nil {
		return nil, err
	}
	bk, err := f.bk.BuildKit(cmd.Context())
	if err != nil {
		return nil, err
	}
	var scanner pipeline.Scanner
	if sc, err := f.img.Scanner(true); err != nil {
		return nil, err
	} else if sc != nil {
		scanner = sc
	}
	cfg := ps.cfg
	return builder.New(bk, pipeline.Request{
		Matrix:          cfg,
		Definition:      ps.def,
		Revision:        options.FirstNonEmpty(f.img.Revision, options.GitRevision()),
		SourceDateEpoch: epoch,
		Warnings:        g.Warnings(),
		Extensions: pipeline.ExtensionOptions{
			Cache:   cache,
			Sources: f.ext.Sources(g, cfg).Fetch(),
			Limits:  f.ext.Limits(),
			Options: []extensions.Option{extensions.WithRequirePins(true)},
		},
		Solve: pipeline.SolveOptions{
			Provenance:   f.img.Provenance,
			CacheFrom:    f.img.CacheFrom,
			CacheTo:      f.img.CacheTo,
			Progress:     g.Stderr,
			ProgressMode: f.img.Progress,
		},
		Publish: pipeline.PublishOptions{Insecure: f.reg.Insecure},
		Sign:    pipeline.SignOptions{SBOMFormat: f.img.SBOMFormat, SBOMFromLock: f.img.SBOMFromLock, Scanner: scanner},
	}, ps.renders, s)
}

// signerAndVerifyOption loads the signer and the matching verify option.
func (f *releaseFlags) signerAndVerifyOption(ctx context.Context) (*sign.Signer, verify.Option, error) {
	if err := f.Validate(); err != nil {
		return nil, nil, options.UsageError(err)
	}
	switch {
	case f.keyless:
		s, err := sign.KeylessSigner(ctx, sign.KeylessOptions{})
		if err != nil {
			return nil, nil, err
		}
		return s, f.cert.VerifyOption(), nil
	case f.key.Key != "":
		s, err := sign.LoadKey(ctx, f.key.Key, f.key.Password())
		if err != nil {
			return nil, nil, err
		}
		if f.key.VerifyKey != "" {
			v, err := keys.LoadPublic(f.key.VerifyKey)
			if err != nil {
				return nil, nil, err
			}
			return s, verify.WithVerifier(v), nil
		}
		pem, err := s.PublicKeyPEM()
		if err != nil {
			return nil, nil, fmt.Errorf("public key of %s: %w", f.key.Key, err)
		}
		v, err := keys.PublicFromPEM(pem)
		if err != nil {
			return nil, nil, err
		}
		return s, verify.WithVerifier(v), nil
	default:
		return nil, nil, options.Usagef("no signer: pass --key cosign.key or --keyless")
	}
}
