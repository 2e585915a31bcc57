package verify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/keys"
	"github.com/imagectl/imagectl/verify"
)

// verifyFlags are imagectl verify's flags.
type verifyFlags struct {
	keyPath                  string
	cert                     options.CertificateOptions
	reg                      options.RegistryOptions
	skipContents, skipAttest bool
	allowRepos               []string
	out                      options.OutputOptions
}

// Validate asks for exactly one kind of trust root and well-formed
// --allow-repository names.
func (f *verifyFlags) Validate() error {
	if f.cert.Set() == (f.keyPath != "") {
		return errors.New("pass --key cosign.pub, or --certificate-identity[-regexp] with --certificate-oidc-issuer[-regexp] for keyless signatures (not both)")
	}
	for _, r := range f.allowRepos {
		if _, err := name.NewRepository(r); err != nil {
			return fmt.Errorf("--allow-repository %q: %w (want a repository such as docker.io/example/code-server-ray, no tag or digest)", r, err)
		}
	}
	return nil
}

// New returns imagectl verify.
func New(g *options.Globals) *cobra.Command {
	f := verifyFlags{out: options.NewOutputOptions("text", "json")}
	cmd := &cobra.Command{
		Use:   "verify IMAGE --key cosign.pub",
		Short: "Prove an image is signed, attested and contains what its labels say",
		Long: `verify fails closed unless all of this holds for IMAGE (index or single manifest):

  - the index AND every platform manifest carry a valid cosign signature from
    --key (or the keyless --certificate-identity/--certificate-oidc-issuer)
    whose payload names that exact digest and the repository of IMAGE
    (critical.identity.docker-reference): a copy of an image and its
    signatures in another repository fails unless the signed repository is
    accepted with --allow-repository (for a mirror);
  - every platform manifest has a verified SBOM attestation and provenance
    (BuildKit's attestation manifest in the signed index, or a verified cosign
    SLSA provenance attestation);
  - each platform's layers (read from the registry, no container runtime)
    hold exactly the locked extensions at the locked versions with a
    .vsixmanifest TargetPlatform matching the architecture (linux/amd64 =
    linux-x64, linux/arm64 = linux-arm64; universal only where the lock says
    so), a code-server extensions.json that agrees, and Ray and debugpy
    dist-info METADATA matching the labels, installed for the labelled Python;
  - the dev.imagectl.* labels agree with the lock label, and the lock's
    platforms equal the index's.

Every failure names the platform, digest and path or label. The report goes to
stdout (--output text or json); the exit code is 0 when the image verifies,
1 when it does not (or cannot be checked), 2 for bad usage.`,
		Example: `  imagectl verify 127.0.0.1:5000/code-server-ray:ray2.46.0 --key cosign.pub
  imagectl verify docker.io/example/code-server-ray@sha256:... --key cosign.pub --output json
  # a mirror of images signed in docker.io/example/code-server-ray:
  imagectl verify registry.internal/mirror/code-server-ray:ray2.46.0 --key cosign.pub \
    --allow-repository docker.io/example/code-server-ray
  imagectl verify ghcr.io/example/code-server-ray:ray2.46.0 \
    --certificate-identity-regexp '^https://github.com/example/' \
    --certificate-oidc-issuer https://token.actions.githubusercontent.com`,
		Args: options.ImageArgs(1, true),
		RunE: func(cmd *cobra.Command, args []string) error { return runVerify(cmd.Context(), g, &f, args[0]) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.keyPath, "key", "", "cosign public key (cosign.pub)")
	fl.BoolVar(&f.skipContents, "skip-contents", false, "do not read layers (signatures, attestations and labels are still checked)")
	fl.BoolVar(&f.skipAttest, "skip-attestations", false, "do not require SBOM and provenance attestations")
	fl.StringArrayVar(&f.allowRepos, "allow-repository", nil, "also accept signatures made for this repository (repeatable): verify a mirror by naming the repository the image was signed in")
	options.Add(cmd, &f.cert, &f.reg, &f.out, options.Check(f.Validate))
	options.AddCommandTimeout(g, cmd, "timeout", 30*time.Minute, "registry")
	return cmd
}

// checkRead is the check of a verify -o json report for an image that could
// not be read at all.
const checkRead verify.Check = "read"

// runVerify verifies ref and prints the report; a failed check exits 1.
func runVerify(ctx context.Context, g *options.Globals, f *verifyFlags, ref string) error {
	opts := []verify.Option{verify.WithSkipContents(f.skipContents), verify.WithSkipAttestations(f.skipAttest)}
	if f.keyPath != "" {
		v, err := keys.LoadPublic(f.keyPath)
		if err != nil {
			return err
		}
		opts = append(opts, verify.WithVerifier(v))
	} else {
		opts = append(opts, f.cert.VerifyOption())
	}
	if nopts := f.reg.NameOptions(); len(nopts) > 0 {
		opts = append(opts, verify.WithNameOptions(nopts...))
	}
	opts = append(opts, verify.WithAllowedRepositories(f.allowRepos...))
	rep, err := verify.Image(ctx, ref, opts...)
	if err != nil {
		if f.out.JSON() {
			// The same report shape, also when the image cannot be read.
			if werr := (&verify.Report{Ref: ref, Manifests: []verify.Manifest{}, Failures: []verify.Failure{{Check: checkRead, Message: safetext.Text(err.Error())}}}).WriteJSON(g.Stdout); werr != nil {
				return werr
			}
		}
		return err
	}
	if f.out.JSON() {
		err = rep.WriteJSON(g.Stdout)
	} else {
		err = rep.WriteText(g.Stdout)
	}
	if err != nil {
		return err
	}
	if rep.Err() != nil {
		// The report on stdout lists the failures; stderr says so once.
		where := "listed in the report above"
		if f.out.JSON() {
			where = "listed in the report's failures"
		}
		return &options.ExitError{Code: options.ExitFailure, Err: fmt.Errorf("%s does not verify: %d failure(s), %s", ref, len(rep.Failures), where)}
	}
	return nil
}
