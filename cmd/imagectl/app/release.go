package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/release"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/sign"
	"github.com/imagectl/imagectl/verify"
)

type releaseFlags struct {
	publishFlags
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
}

func newReleaseCommand(g *globals) *cobra.Command {
	var f releaseFlags
	cmd := &cobra.Command{
		Use:   "release",
		Short: "Build what the plan asks for, push by digest, sign, verify, then move tags",
		Long: `release runs the plan (see imagectl plan) and, for each entry: builds and
pushes the image by digest (no tag), signs the index and every platform
manifest, verifies it, and only then writes tags.

Tags: the versioned tag (the first of matrix.yaml) is immutable. If it already
names another image, the entry fails before anything is built and no tag
changes; if it names the same image, nothing is written. Floating tags
(ray2.46.0, latest, ...) move only after verify passes, most specific first,
latest last; if one fails, those already moved are put back.

--no-floating stops after the versioned tag, so that a smoke test can gate the
promotion; a second run (with --expect-digest set to the tested digest) then
verifies again and moves the floating tags. A re-run after success writes
nothing. --dry-run prints the actions and writes nothing.`,
		Example: `  imagectl release --dry-run
  imagectl release --only 4.101.2-ray2.46.0-py3.12 --no-floating --key cosign.key --output json
  imagectl release --only 4.101.2-ray2.46.0-py3.12 --expect-digest sha256:... --key cosign.key
  imagectl release --keyless --certificate-identity-regexp '^https://github.com/imagectl/' --certificate-oidc-issuer https://token.actions.githubusercontent.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(f.output, "text", "json"); err != nil {
				return err
			}
			return g.runRelease(cmd.Context(), &f)
		},
	}
	f.publishFlags.add(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&f.dryRun, "dry-run", false, "print what would be built, signed and tagged; write nothing")
	fl.StringSliceVar(&f.only, "only", nil, "release only these entries (versioned tags, as imagectl plan prints them)")
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
	return cmd
}

func (g *globals) runRelease(ctx context.Context, f *releaseFlags) error {
	ps, err := g.publishSetup(ctx, &f.publishFlags)
	if err != nil {
		return err
	}
	plan, err := release.NewPlanner(ps.reg, ps.digester, ps.repo).Plan(ctx, ps.targets)
	if err != nil {
		return err
	}
	if plan, err = plan.Only(f.only); err != nil {
		return err
	}
	var nopts []name.Option
	if f.insecure {
		nopts = append(nopts, name.Insecure)
	}
	var (
		signer   release.Signer   = release.SignerFunc(func(context.Context, name.Digest) error { return errors.New("no signer (dry run)") })
		verifier release.Verifier = release.VerifierFunc(func(context.Context, name.Digest, resolve.Set) error { return errors.New("no verifier (dry run)") })
	)
	if !f.dryRun && !plan.Empty() {
		s, vopt, err := f.signerAndVerifyOption(ctx)
		if err != nil {
			return err
		}
		signer = release.SignerFunc(func(ctx context.Context, ref name.Digest) error {
			_, err := sign.Image(ctx, ref.String(), s, sign.WithAllManifests(true), sign.WithRemoteOptions(ps.ropts...), sign.WithNameOptions(nopts...))
			return err
		})
		cosignVerify := release.VerifierFunc(func(ctx context.Context, ref name.Digest, _ resolve.Set) error {
			rep, err := verify.Image(ctx, ref.String(), vopt, verify.WithRemoteOptions(ps.ropts...), verify.WithNameOptions(nopts...), verify.WithSkipContents(f.skipContents))
			if err != nil {
				return err
			}
			return rep.Err()
		})
		// The one place the release pipeline is composed: the image must
		// carry the planned inputs, then pass imagectl verify.
		verifier = release.Verifiers(release.InputsVerifier(ps.reg, ps.digester), cosignVerify)
	}
	// TODO(lead): wire the BuildKit pipeline of imagectl build here (build.BuildSet
	// with push by digest and no tags). Until then release can promote, dry-run
	// and re-run, and refuses to build.
	builder := release.BuilderFunc(func(context.Context, resolve.Set, name.Repository) (name.Digest, error) {
		return name.Digest{}, errors.New("building from release is not wired to the BuildKit pipeline yet; build with imagectl build --push and promote with imagectl release")
	})
	opts := []release.ReleaseOption{release.WithDryRun(f.dryRun), release.WithFloating(!f.noFloating), release.WithExpectedDigest(f.expectDigest)}
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
