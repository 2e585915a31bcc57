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
	"sync"
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

// DefaultRenewMargin is how much validity a keyless signer's certificate
// must have left to sign with it; with less, a new one is obtained first.
// Fulcio's certificates are valid 10 minutes.
const DefaultRenewMargin = 3 * time.Minute

// KeylessOptions configure KeylessSigner.
type KeylessOptions struct {
	FulcioURL string // default DefaultFulcioURL
	RekorURL  string // default DefaultRekorURL
	// IDToken is an OIDC token; empty means SIGSTORE_ID_TOKEN, then the
	// ambient provider (GitHub Actions: ACTIONS_ID_TOKEN_REQUEST_URL and
	// ACTIONS_ID_TOKEN_REQUEST_TOKEN, job permission id-token: write).
	// SIGSTORE_ID_TOKEN is read, and the ambient provider asked, anew for
	// every certificate.
	IDToken string
	Timeout time.Duration // per network call; default 30s
	// RenewMargin is the validity a certificate must have left for a
	// signature to be made with it; with less, a fresh OIDC token and a new
	// certificate are obtained first. Default DefaultRenewMargin.
	RenewMargin time.Duration
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
//
// No certificate is obtained here: the first signature obtains one (with an
// OIDC token fetched for it), and every later signature reuses it only while
// it is valid for at least RenewMargin more; otherwise a fresh token and a
// new certificate for the same key are obtained first. Verifiers check the
// certificate against the time Rekor recorded the signature, so a signature
// made long after the signer was built (after a build, a push and SBOM
// scans) still verifies.
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
	if ko.RenewMargin == 0 {
		ko.RenewMargin = DefaultRenewMargin
	}
	if ko.RenewMargin < 0 {
		return nil, fmt.Errorf("keyless RenewMargin is %s, want a positive duration", ko.RenewMargin)
	}
	if ko.IDToken == "" && os.Getenv(IDTokenEnv) == "" {
		if _, ok := KeylessAvailable(ctx); !ok || !providers.Enabled(ctx) {
			return nil, errors.New("keyless signing needs an OIDC identity: run in GitHub Actions with `permissions: id-token: write` (ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN) or set " + IDTokenEnv)
		}
	}
	priv, err := cosign.GeneratePrivateKey()
	if err != nil {
		return nil, fmt.Errorf("generating ephemeral key: %w", err)
	}
	sv, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	rc, err := rekorclient.GetRekorClient(ko.RekorURL)
	if err != nil {
		return nil, fmt.Errorf("rekor client for %s: %w", ko.RekorURL, err)
	}
	certs := &certifier{
		ko:     ko,
		key:    &keypair{sv: sv},
		fulcio: sgsign.NewFulcio(&sgsign.FulcioOptions{BaseURL: ko.FulcioURL, Timeout: ko.Timeout, Retries: 2}),
		now:    time.Now,
	}
	return &Signer{sv: sv, certs: certs, tlog: &rekor{client: rc, timeout: ko.Timeout}, desc: "keyless (Fulcio " + ko.FulcioURL + ", Rekor " + ko.RekorURL + ")"}, nil
}

// certificate is a Fulcio certificate for the signer's key, in PEM. The
// chain is not attached: verifiers take Fulcio's roots and intermediates
// from their trust root.
type certificate struct {
	certPEM  []byte
	notAfter time.Time
}

// certifier holds a keyless signer's current certificate and obtains a new
// one when it has less than RenewMargin of validity left. It is safe for
// concurrent use.
type certifier struct {
	ko     KeylessOptions
	key    *keypair
	fulcio *sgsign.Fulcio
	now    func() time.Time

	mu  sync.Mutex
	cur *certificate
}

// current returns a certificate valid for at least RenewMargin from now,
// obtaining a fresh OIDC token and a new certificate when the one held is
// not.
func (c *certifier) current(ctx context.Context) (*certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil && c.cur.notAfter.Sub(c.now()) >= c.ko.RenewMargin {
		return c.cur, nil
	}
	tok, err := c.idToken(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, c.ko.Timeout)
	der, err := c.fulcio.GetCertificate(cctx, c.key, &sgsign.CertificateProviderOptions{IDToken: tok})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("getting a signing certificate from Fulcio %s: %w", c.ko.FulcioURL, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate from Fulcio %s: %w", c.ko.FulcioURL, err)
	}
	if left := cert.NotAfter.Sub(c.now()); left <= 0 {
		return nil, fmt.Errorf("the certificate from Fulcio %s expired at %s, want one valid now", c.ko.FulcioURL, cert.NotAfter.Format(time.RFC3339))
	}
	pemBytes, err := cryptoutils.MarshalCertificateToPEM(cert)
	if err != nil {
		return nil, err
	}
	c.cur = &certificate{certPEM: pemBytes, notAfter: cert.NotAfter}
	return c.cur, nil
}

// idToken returns KeylessOptions.IDToken, else SIGSTORE_ID_TOKEN, else a
// token fetched now from the ambient provider (GitHub Actions' tokens are
// short-lived, so each certificate gets its own).
func (c *certifier) idToken(ctx context.Context) (string, error) {
	if c.ko.IDToken != "" {
		return c.ko.IDToken, nil
	}
	if tok := os.Getenv(IDTokenEnv); tok != "" {
		return tok, nil
	}
	if !providers.Enabled(ctx) {
		return "", errors.New("keyless signing needs an OIDC identity: run in GitHub Actions with `permissions: id-token: write` (ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN) or set " + IDTokenEnv)
	}
	tctx, cancel := context.WithTimeout(ctx, c.ko.Timeout)
	defer cancel()
	tok, err := providers.Provide(tctx, "sigstore")
	if err != nil {
		return "", fmt.Errorf("getting an OIDC token from the CI provider: %w", err)
	}
	return tok, nil
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
