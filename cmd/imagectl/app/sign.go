package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/internal/safefile"
	"github.com/imagectl/imagectl/internal/sourcedate"
	"github.com/imagectl/imagectl/sign"
)

// maxSBOMFile bounds --sbom: the SBOM goes into one in-toto statement, and
// verify reads statements of at most 32 MiB.
const maxSBOMFile = 16 << 20

func newSignCommand(g *globals) *cobra.Command {
	var (
		allManifests        bool
		attestManifests     bool
		sbomFile            string
		sbomFromLabels      bool
		keyless             bool
		fulcioURL, rekorURL string
		annotations         []string
		generateKey         string
		ann                 map[string]string
	)
	key := keyOptions{keyUsage: "cosign private key file", keyEnv: "COSIGN_KEY"}
	var reg registryOptions
	output := newOutputOptions("text", "json")
	validate := func() error {
		ann = map[string]string{}
		for _, a := range annotations {
			k, v, ok := strings.Cut(a, "=")
			if !ok || k == "" {
				return fmt.Errorf("--annotation %q: expected key=value", a)
			}
			ann[k] = v
		}
		if generateKey != "" {
			return nil
		}
		if keyless == (key.Key != "") {
			return errors.New("pass exactly one of --key cosign.key and --keyless")
		}
		if sbomFile != "" && sbomFromLabels {
			return errors.New("pass at most one of --sbom and --sbom-from-labels")
		}
		return nil
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

--sbom FILE attaches an SPDX or CycloneDX JSON document, and --sbom-from-labels
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
  COSIGN_PASSWORD=... imagectl sign 127.0.0.1:5000/code-server-ray:ray2.46.0 --key cosign.key --sbom-from-labels
  imagectl sign docker.io/example/code-server-ray@sha256:... --key cosign.key --key-password-file pw.txt --sbom sbom.spdx.json
  imagectl sign ghcr.io/example/code-server-ray:ray2.46.0 --keyless   # in GitHub Actions`,
		Args: func(cmd *cobra.Command, args []string) error {
			if generateKey != "" {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			password := key.Password()
			if generateKey != "" {
				pw, err := password()
				if err != nil {
					return &exitError{2, err}
				}
				k, p, err := sign.WriteKeyPair(generateKey, pw)
				if err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "Private key written to %s\nPublic key written to %s\n", k, p)
				return nil
			}
			var sbomDoc []byte
			if sbomFile != "" {
				b, err := safefile.ReadFile(sbomFile, maxSBOMFile)
				if err != nil {
					return &exitError{2, fmt.Errorf("--sbom: %w", err)}
				}
				sbomDoc = b
			}
			// The SBOM's creation time is the image's (its config's created,
			// set by the build from SOURCE_DATE_EPOCH), as imagectl build
			// --sign gives it; SOURCE_DATE_EPOCH, checked before anything is
			// signed, stands in only for an image whose config has none.
			var envTime time.Time
			if sbomFromLabels {
				t, err := sourcedate.FromEnv()
				if err != nil {
					return &exitError{2, err}
				}
				envTime = t
			}

			var signer *sign.Signer
			var err error
			if keyless {
				signer, err = sign.KeylessSigner(ctx, sign.KeylessOptions{FulcioURL: fulcioURL, RekorURL: rekorURL})
			} else {
				signer, err = sign.LoadKey(ctx, key.Key, password)
			}
			if err != nil {
				return err
			}
			opts := []sign.Option{sign.WithAllManifests(allManifests), sign.WithAttestationManifests(attestManifests)}
			if len(ann) > 0 {
				opts = append(opts, sign.WithAnnotations(ann))
			}
			if nopts := reg.NameOptions(); len(nopts) > 0 {
				opts = append(opts, sign.WithNameOptions(nopts...))
			}
			out := struct {
				Signed *sign.Result `json:"signed"`
				SBOM   *sign.Result `json:"sbom,omitempty"`
			}{}
			out.Signed, err = sign.Image(ctx, args[0], signer, opts...)
			if err != nil {
				return err
			}
			ref := out.Signed.Ref // sign what was resolved, even if the tag moves
			switch {
			case sbomDoc != nil:
				out.SBOM, err = sign.AttestSBOMFile(ctx, ref, signer, sbomDoc, opts...)
			case sbomFromLabels:
				lock, built, lerr := sign.LockFromImage(ctx, ref, opts...)
				if lerr != nil {
					return lerr
				}
				repo, _ := sign.Repository(ref, reg.NameOptions()...)
				in := sign.SBOMInputFromLock(lock, repo, sbomCreated(built, envTime, g.stderr))
				out.SBOM, err = sign.AttestSBOM(ctx, ref, signer, in, opts...)
			}
			if err != nil {
				return err
			}
			if output.JSON() {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			fmt.Fprintf(g.stdout, "Signed %s with %s\n", out.Signed.Ref, signer)
			for _, t := range out.Signed.Targets {
				fmt.Fprintf(g.stdout, "  %-12s %s -> %s\n", orIndex(t.Platform), t.Digest, t.Tag)
			}
			if out.SBOM != nil {
				fmt.Fprintln(g.stdout, "SBOM attestation:")
				for _, t := range out.SBOM.Targets {
					fmt.Fprintf(g.stdout, "  %-12s %s -> %s\n", orIndex(t.Platform), t.Digest, t.Tag)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&allManifests, "all-manifests", true, "also sign every platform manifest of an index")
	f.BoolVar(&attestManifests, "attestation-manifests", false, "also sign BuildKit's attestation manifests (unknown/unknown)")
	f.StringVar(&sbomFile, "sbom", "", "attach this SPDX or CycloneDX JSON file as a signed SBOM attestation")
	f.BoolVar(&sbomFromLabels, "sbom-from-labels", false, "attach an SPDX SBOM built from the image's dev.imagectl.lock label")
	f.BoolVar(&keyless, "keyless", false, "keyless signing with the CI's OIDC identity (Fulcio + Rekor; needs network)")
	f.StringVar(&fulcioURL, "fulcio-url", sign.DefaultFulcioURL, "Fulcio for --keyless")
	f.StringVar(&rekorURL, "rekor-url", sign.DefaultRekorURL, "Rekor for --keyless")
	f.StringArrayVarP(&annotations, "annotation", "a", nil, "key=value added to the signed payload (repeatable)")
	f.StringVar(&generateKey, "generate-key", "", "write a new key pair to PREFIX.key and PREFIX.pub and exit")
	addOptions(cmd, &key, &reg, &output, check(validate))
	return cmd
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
		fmt.Fprintf(warn, "warning: %s=%d is not the image's creation time %s; the SBOM uses the image's\n", sourcedate.Env, env.Unix(), built.Format(time.RFC3339))
	}
	return built
}

func orIndex(platform string) string {
	if platform == "" {
		return "index"
	}
	return platform
}
