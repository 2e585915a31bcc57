package sign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/internal/safefile"
	"github.com/imagectl/imagectl/internal/sourcedate"
	"github.com/imagectl/imagectl/sbom/document"
	"github.com/imagectl/imagectl/sign"
)

// maxSBOMFile bounds --sbom: the SBOM goes into one in-toto statement, and
// verify reads statements of at most 32 MiB.
const maxSBOMFile = 16 << 20

// signFlags are imagectl sign's flags.
type signFlags struct {
	allManifests        bool
	attestManifests     bool
	sbomFile            string
	sbomFromLock        bool
	keyless             bool
	fulcioURL, rekorURL string
	annotations         []string
	generateKey         string
	ann                 map[string]string // from annotations, by Validate
	key                 options.KeyOptions
	reg                 options.RegistryOptions
	output              options.OutputOptions
}

// Validate parses the annotations and refuses contradictory flags.
func (f *signFlags) Validate() error {
	f.ann = map[string]string{}
	for _, a := range f.annotations {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return fmt.Errorf("--annotation %q: expected key=value", a)
		}
		f.ann[k] = v
	}
	if f.generateKey != "" {
		return nil
	}
	if f.keyless == (f.key.Key != "") {
		return errors.New("pass exactly one of --key cosign.key and --keyless")
	}
	if f.sbomFile != "" && f.sbomFromLock {
		return errors.New("pass at most one of --sbom and --sbom-from-lock")
	}
	return nil
}

// New returns imagectl sign.
func New(g *options.Globals) *cobra.Command {
	f := signFlags{
		key:    options.KeyOptions{KeyUsage: "cosign private key file", KeyEnv: "COSIGN_KEY"},
		output: options.NewOutputOptions("text", "json"),
	}
	cmd := &cobra.Command{
		Use:   "sign IMAGE --key cosign.key",
		Short: "Sign an image index and every platform manifest with cosign (key or keyless)",
		Long: `sign signs IMAGE (a tag or digest) with cosign: the index AND every platform
manifest, so each per-platform digest verifies on its own. Signatures are
stored next to the image at the sha256-<hex>.sig tag, where plain
'cosign verify' finds them. BuildKit's attestation manifests (unknown/unknown)
are not signed by default: their digests are inside the signed index
(--attestation-manifests signs them too).

Key mode (--key) loads an encrypted cosign private key; the password comes from
--key-password-file or COSIGN_PASSWORD and is never printed. Nothing is sent to a
transparency log: verify with 'cosign verify --key cosign.pub
--insecure-ignore-tlog' or 'imagectl verify --key cosign.pub'.

Keyless mode (--keyless) is for CI with an OIDC identity (GitHub Actions with
'permissions: id-token: write', or SIGSTORE_ID_TOKEN): an ephemeral key is
certified by Fulcio and every signature is recorded in Rekor.

--sbom FILE attaches an SPDX or CycloneDX JSON document, and --sbom-from-lock
an SPDX 2.3 SBOM built from the image's dev.imagectl.lock label and dated with
the image's creation time (as imagectl build --sign dates it; SOURCE_DATE_EPOCH
only for an image without one), as signed in-toto attestations
(sha256-<hex>.att) on the index and every platform.

--generate-key PREFIX writes PREFIX.key and PREFIX.pub (like
'cosign generate-key-pair'), the key encrypted with COSIGN_PASSWORD or the
--key-password-file password, and signs nothing.

Registry credentials come from the Docker config (docker login). localhost and
127.0.0.1 registries are spoken to over plain HTTP; --insecure allows it for
any registry.`,
		Example: `  imagectl sign --generate-key cosign            # writes cosign.key, cosign.pub
  COSIGN_PASSWORD=... imagectl sign 127.0.0.1:5000/code-server-ray:ray2.46.0 --key cosign.key --sbom-from-lock
  imagectl sign docker.io/example/code-server-ray@sha256:... --key cosign.key --key-password-file pw.txt --sbom sbom.spdx.json
  imagectl sign ghcr.io/example/code-server-ray:ray2.46.0 --keyless   # in GitHub Actions`,
		Args: func(cmd *cobra.Command, args []string) error {
			if f.generateKey != "" {
				return cobra.NoArgs(cmd, args)
			}
			return options.ImageArgs(1, true)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runSign(cmd.Context(), g, &f, args) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.allManifests, "all-manifests", true, "also sign every platform manifest of an index")
	fl.BoolVar(&f.attestManifests, "attestation-manifests", false, "also sign BuildKit's attestation manifests (unknown/unknown)")
	fl.StringVar(&f.sbomFile, "sbom", "", "attach this SPDX or CycloneDX JSON file as a signed SBOM attestation")
	fl.BoolVar(&f.sbomFromLock, "sbom-from-lock", false, "attach an SPDX SBOM written from the lock (the image's dev.imagectl.lock label) instead of a file")
	fl.BoolVar(&f.keyless, "keyless", false, "keyless signing with the CI's OIDC identity (Fulcio + Rekor; needs network)")
	fl.StringVar(&f.fulcioURL, "fulcio-url", sign.DefaultFulcioURL, "Fulcio for --keyless")
	fl.StringVar(&f.rekorURL, "rekor-url", sign.DefaultRekorURL, "Rekor for --keyless")
	fl.StringArrayVarP(&f.annotations, "annotation", "a", nil, "key=value added to the signed payload (repeatable)")
	fl.StringVar(&f.generateKey, "generate-key", "", "write a new key pair to PREFIX.key and PREFIX.pub and exit")
	options.Add(cmd, &f.key, &f.reg, &f.output, options.Check(f.Validate))
	options.AddCommandTimeout(g, cmd, "timeout", 10*time.Minute, "registry")
	return cmd
}

// signResult is what imagectl sign prints (as JSON with -o json).
type signResult struct {
	Signed *sign.Result `json:"signed"`
	SBOM   *sign.Result `json:"sbom,omitempty"`
}

// runSign writes a key pair (--generate-key), or signs args[0] and
// attaches the SBOM asked for.
func runSign(ctx context.Context, g *options.Globals, f *signFlags, args []string) error {
	password := f.key.Password()
	if f.generateKey != "" {
		pw, err := password()
		if err != nil {
			return err
		}
		k, p, err := sign.WriteKeyPair(f.generateKey, pw)
		if err != nil {
			return err
		}
		if len(pw) == 0 {
			fmt.Fprintf(g.Stderr, options.WarnPrefix+"warning: the key password is empty: %s is protected by no password, so whoever reads the file can sign as you (set %s or pass --key-password-file FILE)\n", k, sign.PasswordEnv)
		}
		fmt.Fprintf(g.Stdout, "Private key written to %s\nPublic key written to %s\n", k, p)
		return nil
	}
	sbomDoc, envTime, err := f.sbomInputs()
	if err != nil {
		return err
	}
	var signer *sign.Signer
	if f.keyless {
		signer, err = sign.KeylessSigner(ctx, sign.KeylessOptions{FulcioURL: f.fulcioURL, RekorURL: f.rekorURL})
	} else {
		signer, err = sign.LoadKey(ctx, f.key.Key, password)
	}
	if err != nil {
		return err
	}
	opts := f.signOptions()
	var out signResult
	out.Signed, err = sign.Image(ctx, args[0], signer, opts...)
	if err != nil {
		return err
	}
	ref := out.Signed.Ref // sign what was resolved, even if the tag moves
	switch {
	case sbomDoc != nil:
		out.SBOM, err = sign.AttestSBOMFile(ctx, ref, signer, sbomDoc, opts...)
	case f.sbomFromLock:
		lock, built, lerr := sign.LockFromImage(ctx, ref, opts...)
		if lerr != nil {
			return lerr
		}
		repo, _ := sign.Repository(ref, f.reg.NameOptions()...)
		in := document.SBOMInputFromLock(lock, repo, sbomCreated(built, envTime, g.Stderr))
		out.SBOM, err = sign.AttestSBOM(ctx, ref, signer, in, opts...)
	}
	if err != nil {
		return err
	}
	return printSign(g, f, out, signer)
}

// sbomInputs reads --sbom, and for --sbom-from-lock resolves
// SOURCE_DATE_EPOCH before anything is signed: the SBOM's creation time is
// the image's (its config's created, set by the build from
// SOURCE_DATE_EPOCH), as imagectl build --sign gives it; SOURCE_DATE_EPOCH
// stands in only for an image whose config has none.
func (f *signFlags) sbomInputs() (doc []byte, envTime time.Time, err error) {
	if f.sbomFile != "" {
		b, err := safefile.ReadFile(f.sbomFile, maxSBOMFile)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("--sbom: %w", err)
		}
		doc = b
	}
	if f.sbomFromLock {
		t, err := sourcedate.FromEnv()
		if err != nil {
			return nil, time.Time{}, &options.ExitError{Code: options.ExitUsage, Err: err}
		}
		envTime = t
	}
	return doc, envTime, nil
}

// signOptions are the sign package's options from the flags.
func (f *signFlags) signOptions() []sign.Option {
	opts := []sign.Option{sign.WithAllManifests(f.allManifests), sign.WithAttestationManifests(f.attestManifests)}
	if len(f.ann) > 0 {
		opts = append(opts, sign.WithAnnotations(f.ann))
	}
	if nopts := f.reg.NameOptions(); len(nopts) > 0 {
		opts = append(opts, sign.WithNameOptions(nopts...))
	}
	return opts
}

// printSign prints what was signed, as text or JSON.
func printSign(g *options.Globals, f *signFlags, out signResult, signer *sign.Signer) error {
	if f.output.JSON() {
		enc := json.NewEncoder(g.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintf(g.Stdout, "Signed %s with %s\n", out.Signed.Ref, signer)
	for _, t := range out.Signed.Targets {
		fmt.Fprintf(g.Stdout, "  %-12s %s -> %s\n", targetName(t), t.Digest, t.Tag)
	}
	if out.SBOM != nil {
		fmt.Fprintln(g.Stdout, "SBOM attestation:")
		for _, t := range out.SBOM.Targets {
			fmt.Fprintf(g.Stdout, "  %-12s %s -> %s\n", targetName(t), t.Digest, t.Tag)
		}
	}
	return nil
}

// sbomCreated is the creation time of an SBOM of an image built at built
// (its config's created): built, or env (SOURCE_DATE_EPOCH, else 0) when
// the config has none. A SOURCE_DATE_EPOCH set to another time is named on
// warn: the image's time wins.
func sbomCreated(built, env time.Time, warn io.Writer) time.Time {
	if built.IsZero() {
		return env
	}
	if os.Getenv(sourcedate.Env) != "" && !env.Equal(built) {
		fmt.Fprintf(warn, options.WarnPrefix+"warning: %s=%d is not the image's creation time %s; the SBOM uses the image's\n", sourcedate.Env, env.Unix(), built.Format(time.RFC3339))
	}
	return built
}

// targetName is what sign's report calls a signed manifest: its platform,
// else "index" for an index and "manifest" for a single image.
func targetName(t sign.Target) string {
	switch {
	case t.Platform != "":
		return t.Platform
	case types.MediaType(t.MediaType).IsIndex():
		return "index"
	}
	return "manifest"
}
