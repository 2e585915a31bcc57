package sign_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/sigstore/pkg/tuf"

	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/sign"
)

// The identity the fake OIDC issuer vouches for, as GitHub Actions names a
// workflow run.
const (
	testOIDCSubject = "repo:imagectl/imagectl:ref:refs/heads/main"
	testSAN         = "https://github.com/imagectl/imagectl/.github/workflows/release.yml@refs/heads/main"
)

// oidcIssuer is GitHub Actions' token endpoint (ACTIONS_ID_TOKEN_REQUEST_URL):
// it answers a GET carrying the request bearer token with a signed JWT for
// the asked audience, valid for ttl.
type oidcIssuer struct {
	t      *testing.T
	srv    *httptest.Server
	key    *ecdsa.PrivateKey
	bearer string
	ttl    time.Duration

	mu     sync.Mutex
	issued int
}

func newOIDCIssuer(t *testing.T, ttl time.Duration) *oidcIssuer {
	t.Helper()
	o := &oidcIssuer{t: t, key: newECKey(t), bearer: "request-token", ttl: ttl}
	o.srv = httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *oidcIssuer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.Header.Get("Authorization") != "bearer "+o.bearer {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	aud := r.URL.Query().Get("audience")
	if aud == "" {
		http.Error(w, "no audience", http.StatusBadRequest)
		return
	}
	now := time.Now()
	claims := map[string]any{"iss": o.srv.URL, "sub": testOIDCSubject, "aud": aud, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(o.ttl).Unix()}
	tok, err := signJWT(o.key, claims)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	o.mu.Lock()
	o.issued++
	o.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]string{"value": tok})
}

func (o *oidcIssuer) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.issued
}

func signJWT(key *ecdsa.PrivateKey, claims map[string]any) (string, error) {
	enc := func(v any) (string, error) {
		b, err := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b), err
	}
	h, err := enc(map[string]string{"alg": "ES256", "typ": "JWT"})
	if err != nil {
		return "", err
	}
	c, err := enc(claims)
	if err != nil {
		return "", err
	}
	digest := sha256.Sum256([]byte(h + "." + c))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return h + "." + c + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// verifyJWT checks an ES256 token from issuer the way Fulcio does: the
// signature, the sigstore audience and the validity window.
func verifyJWT(tok string, issuer *oidcIssuer, now time.Time) (map[string]any, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("token has %d parts, want 3", len(parts))
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return nil, fmt.Errorf("token signature is not a 64-byte ES256 signature")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(&issuer.key.PublicKey, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return nil, fmt.Errorf("token signature does not verify with the issuer's key")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		return nil, err
	}
	if claims["iss"] != issuer.srv.URL || claims["aud"] != "sigstore" {
		return nil, fmt.Errorf("token is from %v for %v, want %s for sigstore", claims["iss"], claims["aud"], issuer.srv.URL)
	}
	if exp, _ := claims["exp"].(float64); now.Unix() >= int64(exp) {
		return nil, fmt.Errorf("token expired at %s", time.Unix(int64(exp), 0).UTC())
	}
	return claims, nil
}

// testFulcio is a certificate authority speaking Fulcio's v2 signingCert
// API: it checks the OIDC token and the proof of possession of the key, and
// certifies the key for the token's identity from now for validity (Fulcio
// itself: 10 minutes, pkg/ca/common.go).
type testFulcio struct {
	t        *testing.T
	srv      *httptest.Server
	issuer   *oidcIssuer
	root     *x509.Certificate
	rootKey  *ecdsa.PrivateKey
	validity time.Duration

	mu     sync.Mutex
	serial int64
}

func newTestFulcio(t *testing.T, issuer *oidcIssuer, validity time.Duration) *testFulcio {
	t.Helper()
	f := &testFulcio{t: t, issuer: issuer, rootKey: newECKey(t), validity: validity}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test fulcio root"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &f.rootKey.PublicKey, f.rootKey)
	if err != nil {
		t.Fatal(err)
	}
	if f.root, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v2/signingCert", f.signingCert)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *testFulcio) signingCert(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		http.Error(w, "no bearer token", http.StatusUnauthorized)
		return
	}
	claims, err := verifyJWT(tok, f.issuer, now)
	if err != nil {
		http.Error(w, "invalid identity token: "+err.Error(), http.StatusUnauthorized)
		return
	}
	var req struct {
		PublicKeyRequest struct {
			PublicKey struct {
				Content string `json:"content"`
			} `json:"publicKey"`
			ProofOfPossession string `json:"proofOfPossession"`
		} `json:"publicKeyRequest"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	block, _ := pem.Decode([]byte(req.PublicKeyRequest.PublicKey.Content))
	if block == nil {
		http.Error(w, "public key is not PEM", http.StatusBadRequest)
		return
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ecPub, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		http.Error(w, "not an ECDSA key", http.StatusBadRequest)
		return
	}
	pop, err := base64.StdEncoding.DecodeString(req.PublicKeyRequest.ProofOfPossession)
	subject, _ := claims["sub"].(string)
	h := sha256.Sum256([]byte(subject))
	if err != nil || !ecdsa.VerifyASN1(ecPub, h[:], pop) {
		http.Error(w, "the proof of possession is not a signature of the token's subject by the key", http.StatusBadRequest)
		return
	}
	san, err := url.Parse(testSAN)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	f.mu.Lock()
	f.serial++
	serial := f.serial + 1
	f.mu.Unlock()
	tmpl := &x509.Certificate{
		SerialNumber:    big.NewInt(serial),
		NotBefore:       now,
		NotAfter:        now.Add(f.validity),
		KeyUsage:        x509.KeyUsageDigitalSignature,
		ExtKeyUsage:     []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		URIs:            []*url.URL{san},
		ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}, Value: []byte(f.issuer.srv.URL)}},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.root, ecPub, f.rootKey)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	leaf := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	root := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.root.Raw})
	json.NewEncoder(w).Encode(map[string]any{"signedCertificateEmbeddedSct": map[string]any{"chain": map[string]any{"certificates": []string{string(leaf), string(root)}}}})
}

func (f *testFulcio) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int(f.serial)
}

// testRekor is a Rekor v1 log that takes hashedrekord entries: it checks
// the signature over the hash with the key of the entry's certificate,
// records the entry at the time it arrives (its integrated time, whole
// seconds as Rekor's) and answers with a signed entry timestamp.
type testRekor struct {
	t   *testing.T
	srv *httptest.Server
	key *ecdsa.PrivateKey

	mu      sync.Mutex
	entries int64
}

func newTestRekor(t *testing.T) *testRekor {
	t.Helper()
	rk := &testRekor{t: t, key: newECKey(t)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/log/entries", rk.createEntry)
	rk.srv = httptest.NewServer(mux)
	t.Cleanup(rk.srv.Close)
	return rk
}

func (rk *testRekor) logID() string {
	id, err := cosign.GetTransparencyLogID(&rk.key.PublicKey)
	if err != nil {
		rk.t.Fatal(err)
	}
	return id
}

func (rk *testRekor) createEntry(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var e struct {
		Kind string `json:"kind"`
		Spec struct {
			Data struct {
				Hash struct {
					Algorithm string `json:"algorithm"`
					Value     string `json:"value"`
				} `json:"hash"`
			} `json:"data"`
			Signature struct {
				Content   string `json:"content"`
				PublicKey struct {
					Content string `json:"content"`
				} `json:"publicKey"`
			} `json:"signature"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.Kind != "hashedrekord" || e.Spec.Data.Hash.Algorithm != "sha256" {
		http.Error(w, "want a hashedrekord entry with a sha256 hash", http.StatusBadRequest)
		return
	}
	sig, err1 := base64.StdEncoding.DecodeString(e.Spec.Signature.Content)
	certPEM, err2 := base64.StdEncoding.DecodeString(e.Spec.Signature.PublicKey.Content)
	digest, err3 := hex.DecodeString(e.Spec.Data.Hash.Value)
	block, _ := pem.Decode(certPEM)
	if err1 != nil || err2 != nil || err3 != nil || block == nil {
		http.Error(w, "entry fields are not base64, PEM and hex", http.StatusBadRequest)
		return
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || !ecdsa.VerifyASN1(pub, digest, sig) {
		http.Error(w, "the signature does not verify with the certificate's key", http.StatusBadRequest)
		return
	}
	rk.mu.Lock()
	index := rk.entries
	rk.entries++
	rk.mu.Unlock()
	// The body is the entry as proposed (Rekor stores it canonicalized,
	// which changes no field cosign reads).
	payload := bundle.RekorPayload{Body: base64.StdEncoding.EncodeToString(raw), IntegratedTime: time.Now().Unix(), LogIndex: index, LogID: rk.logID()}
	// The entry timestamp signs the payload's canonical JSON (RFC 8785):
	// for these fields (base64, hex, integers) that is encoding/json's
	// encoding of a map, whose keys it sorts.
	canon, err := json.Marshal(map[string]any{"body": payload.Body, "integratedTime": payload.IntegratedTime, "logIndex": payload.LogIndex, "logID": payload.LogID})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := sha256.Sum256(canon)
	set, err := ecdsa.SignASN1(rand.Reader, rk.key, h[:])
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{fmt.Sprintf("%064x", index): map[string]any{
		"body": payload.Body, "integratedTime": payload.IntegratedTime, "logIndex": payload.LogIndex, "logID": payload.LogID,
		"verification": map[string]any{"signedEntryTimestamp": base64.StdEncoding.EncodeToString(set)},
	}})
}

func newECKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKeylessSignaturesVerifyPastCertificateValidity signs in batches
// spread over longer than a certificate is valid (a test CA issuing
// certificates for 4 s, standing in for Fulcio's 10 minutes against a
// release that takes longer), then verifies every signature as cosign
// does: the certificate chains to the CA and was valid at the time Rekor
// recorded the signature (cosign.CheckExpiry with the bundle's integrated
// time, and cosign.VerifyImageSignatures, which applies it).
func TestKeylessSignaturesVerifyPastCertificateValidity(t *testing.T) {
	if testing.Short() {
		t.Skip("signs in batches over 4.5 s of wall-clock time; skipped under -short")
	}
	const (
		validity = 4 * time.Second
		// margin bounds the time from choosing a certificate to Rekor
		// recording the signature; generous for a loaded machine.
		margin  = 2 * time.Second
		batches = 4
		pause   = 1500 * time.Millisecond
	)
	issuer := newOIDCIssuer(t, validity)
	fulcio := newTestFulcio(t, issuer, validity)
	rekor := newTestRekor(t)
	t.Setenv(sign.IDTokenEnv, "")
	t.Setenv("ACTIONS_ID_TOKEN_REQUEST_URL", issuer.srv.URL+"/token?api-version=2.0")
	t.Setenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN", issuer.bearer)

	ctx := context.Background()
	s, err := sign.KeylessSigner(ctx, sign.KeylessOptions{FulcioURL: fulcio.srv.URL, RekorURL: rekor.srv.URL, RenewMargin: margin, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("KeylessSigner: %v", err)
	}
	reg := testutil.Registry(t)
	var signed []string
	start := time.Now()
	for i := range batches {
		if i > 0 {
			time.Sleep(pause)
		}
		idx, err := random.Index(64, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.ParseReference(fmt.Sprintf("%s/keyless:batch%d", reg, i))
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.WriteIndex(ref, idx); err != nil {
			t.Fatal(err)
		}
		res, err := sign.Image(ctx, ref.String(), s)
		if err != nil {
			t.Fatalf("batch %d: sign.Image: %v", i, err)
		}
		for _, tg := range res.Targets {
			signed = append(signed, ref.Context().Digest(tg.Digest).String())
		}
	}
	if took := time.Since(start); took <= validity {
		t.Fatalf("the batches took %s, not longer than a certificate's validity %s: the test proves nothing", took, validity)
	}

	roots := x509.NewCertPool()
	roots.AddCert(fulcio.root)
	co := &cosign.CheckOpts{
		RootCerts:     roots,
		RekorPubKeys:  &cosign.TrustedTransparencyLogPubKeys{Keys: map[string]cosign.TransparencyLogPubKey{rekor.logID(): {PubKey: crypto.PublicKey(&rekor.key.PublicKey), Status: tuf.Active}}},
		IgnoreSCT:     true,
		ClaimVerifier: cosign.SimpleClaimVerifier,
		Identities:    []cosign.Identity{{Issuer: issuer.srv.URL, Subject: testSAN}},
	}
	for _, ref := range signed {
		d, err := name.NewDigest(ref)
		if err != nil {
			t.Fatal(err)
		}
		sigs, err := ociremote.SignedUnknown(d).Signatures()
		if err != nil {
			t.Fatalf("reading the signatures of %s: %v", ref, err)
		}
		list, err := sigs.Get()
		if err != nil || len(list) != 1 {
			t.Fatalf("%s has %d signatures (%v), want 1", ref, len(list), err)
		}
		cert, err := list[0].Cert()
		if err != nil || cert == nil {
			t.Fatalf("the signature of %s carries no certificate (%v)", ref, err)
		}
		b, err := list[0].Bundle()
		if err != nil || b == nil {
			t.Fatalf("the signature of %s carries no Rekor bundle (%v)", ref, err)
		}
		if err := cosign.CheckExpiry(cert, time.Unix(b.Payload.IntegratedTime, 0)); err != nil {
			t.Errorf("%s: cosign.CheckExpiry: %v", ref, err)
		}
		if _, _, err := cosign.VerifyImageSignatures(ctx, d, co); err != nil {
			t.Errorf("%s: cosign.VerifyImageSignatures: %v", ref, err)
		}
	}
	if fulcio.count() < 2 {
		t.Errorf("the CA issued %d certificates over %s of signing with certificates valid %s, want a renewal", fulcio.count(), time.Since(start), validity)
	}
	if issuer.count() != fulcio.count() {
		t.Errorf("%d OIDC tokens were fetched for %d certificates, want a fresh token for each", issuer.count(), fulcio.count())
	}
}

func TestKeylessSignerRejectsNegativeRenewMargin(t *testing.T) {
	t.Setenv(sign.IDTokenEnv, "token")
	_, err := sign.KeylessSigner(context.Background(), sign.KeylessOptions{RenewMargin: -time.Second})
	if err == nil || !strings.Contains(err.Error(), "RenewMargin") {
		t.Fatalf("KeylessSigner with RenewMargin -1s: err = %v, want one naming RenewMargin", err)
	}
}
