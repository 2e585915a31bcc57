package sign

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v2/pkg/providers"
	// The GitHub Actions OIDC provider (ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN).
	_ "github.com/sigstore/cosign/v2/pkg/providers/github"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	rekorclient "github.com/sigstore/rekor/pkg/client"
	rekorgen "github.com/sigstore/rekor/pkg/generated/client"
	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	sigopts "github.com/sigstore/sigstore/pkg/signature/options"
)

// Public-good Sigstore endpoints.
const (
	DefaultFulcioURL = "https://fulcio.sigstore.dev"
	DefaultRekorURL  = "https://rekor.sigstore.dev"
	// IDTokenEnv holds an OIDC token directly (any CI).
	IDTokenEnv = "SIGSTORE_ID_TOKEN"
)

// KeylessOptions configure KeylessSigner.
type KeylessOptions struct {
	FulcioURL string // default DefaultFulcioURL
	RekorURL  string // default DefaultRekorURL
	// IDToken is an OIDC token; empty means SIGSTORE_ID_TOKEN, then the
	// ambient provider (GitHub Actions: ACTIONS_ID_TOKEN_REQUEST_URL and
	// ACTIONS_ID_TOKEN_REQUEST_TOKEN, job permission id-token: write).
	IDToken string
	Timeout time.Duration // per network call; default 30s
}

// KeylessAvailable reports whether the environment provides an OIDC
// identity for keyless signing, and which.
func KeylessAvailable(ctx context.Context) (string, bool) {
	if os.Getenv(IDTokenEnv) != "" {
		return IDTokenEnv, true
	}
	if os.Getenv("ACTIONS_ID_TOKEN_REQUEST_URL") != "" && os.Getenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN") != "" {
		return "GitHub Actions OIDC", true
	}
	return "", false
}

// KeylessSigner makes a signer for keyless signing: an ephemeral ECDSA key,
// certified by Fulcio for the OIDC identity, with every signature uploaded
// to Rekor. It needs the network (Fulcio, Rekor, the OIDC issuer): CI only.
func KeylessSigner(ctx context.Context, ko KeylessOptions) (*Signer, error) {
	if ko.FulcioURL == "" {
		ko.FulcioURL = DefaultFulcioURL
	}
	if ko.RekorURL == "" {
		ko.RekorURL = DefaultRekorURL
	}
	if ko.Timeout == 0 {
		ko.Timeout = 30 * time.Second
	}
	tok := ko.IDToken
	if tok == "" {
		tok = os.Getenv(IDTokenEnv)
	}
	if tok == "" {
		if _, ok := KeylessAvailable(ctx); !ok || !providers.Enabled(ctx) {
			return nil, errors.New("keyless signing needs an OIDC identity: run in GitHub Actions with `permissions: id-token: write` (ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN) or set " + IDTokenEnv)
		}
		tctx, cancel := context.WithTimeout(ctx, ko.Timeout)
		t, err := providers.Provide(tctx, "sigstore")
		cancel()
		if err != nil {
			return nil, fmt.Errorf("getting an OIDC token from the CI provider: %w", err)
		}
		tok = t
	}
	priv, err := cosign.GeneratePrivateKey()
	if err != nil {
		return nil, fmt.Errorf("generating ephemeral key: %w", err)
	}
	sv, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	fulcio := sgsign.NewFulcio(&sgsign.FulcioOptions{BaseURL: ko.FulcioURL, Timeout: ko.Timeout, Retries: 2})
	cctx, cancel := context.WithTimeout(ctx, ko.Timeout)
	der, err := fulcio.GetCertificate(cctx, &keypair{sv: sv}, &sgsign.CertificateProviderOptions{IDToken: tok})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("getting a signing certificate from Fulcio %s: %w", ko.FulcioURL, err)
	}
	cert, err := parseDER(der)
	if err != nil {
		return nil, err
	}
	rc, err := rekorclient.GetRekorClient(ko.RekorURL)
	if err != nil {
		return nil, fmt.Errorf("rekor client for %s: %w", ko.RekorURL, err)
	}
	return &Signer{sv: sv, certPEM: cert, tlog: &rekor{client: rc, timeout: ko.Timeout}, desc: "keyless (Fulcio " + ko.FulcioURL + ", Rekor " + ko.RekorURL + ")"}, nil
}

func parseDER(der []byte) ([]byte, error) {
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the Fulcio certificate: %w", err)
	}
	return cryptoutils.MarshalCertificateToPEM(c)
}

// keypair adapts a sigstore SignerVerifier to sigstore-go's Keypair for the
// Fulcio proof of possession.
type keypair struct{ sv signature.SignerVerifier }

func (k *keypair) GetHashAlgorithm() protocommon.HashAlgorithm {
	return protocommon.HashAlgorithm_SHA2_256
}
func (k *keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
}
func (k *keypair) GetHint() []byte {
	pk, _ := k.sv.PublicKey()
	der, _ := cryptoutils.MarshalPublicKeyToDER(pk)
	h := sha256.Sum256(der)
	return h[:]
}
func (k *keypair) GetKeyAlgorithm() string { return "ECDSA" }
func (k *keypair) GetPublicKey() crypto.PublicKey {
	pk, _ := k.sv.PublicKey()
	return pk
}
func (k *keypair) GetPublicKeyPem() (string, error) {
	pk, err := k.sv.PublicKey()
	if err != nil {
		return "", err
	}
	b, err := cryptoutils.MarshalPublicKeyToPEM(pk)
	return string(b), err
}
func (k *keypair) SignData(ctx context.Context, data []byte) ([]byte, []byte, error) {
	h := sha256.Sum256(data)
	sig, err := k.sv.SignMessage(bytes.NewReader(data), sigopts.WithContext(ctx))
	return sig, h[:], err
}

// rekor uploads to a Rekor v1 log.
type rekor struct {
	client  *rekorgen.Rekor
	timeout time.Duration
}

func (r *rekor) uploadSignature(ctx context.Context, sig, payload, signerPEM []byte) (*bundle.RekorBundle, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	h := sha256.New()
	h.Write(payload)
	e, err := cosign.TLogUpload(ctx, r.client, sig, h, signerPEM)
	if err != nil {
		return nil, err
	}
	return bundle.EntryToBundle(e), nil
}

func (r *rekor) uploadDSSE(ctx context.Context, envelope, signerPEM []byte) (*bundle.RekorBundle, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	e, err := cosign.TLogUploadDSSEEnvelope(ctx, r.client, envelope, signerPEM)
	if err != nil {
		return nil, err
	}
	return bundle.EntryToBundle(e), nil
}
