package sign_test

import (
	"context"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/sign"
)

func TestKeylessWithoutIdentityFailsClearly(t *testing.T) {
	t.Setenv(sign.IDTokenEnv, "")
	t.Setenv("ACTIONS_ID_TOKEN_REQUEST_URL", "")
	t.Setenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "")
	_, err := sign.KeylessSigner(context.Background(), sign.KeylessOptions{})
	if err == nil || !strings.Contains(err.Error(), "OIDC identity") {
		t.Fatalf("KeylessSigner without an identity: err = %v, want one naming the missing OIDC identity", err)
	}
}

func TestKeylessSigner(t *testing.T) {
	// Keyless signing needs an OIDC token (GitHub Actions with
	// id-token: write, or SIGSTORE_ID_TOKEN) AND the public-good Fulcio and
	// Rekor over the internet. This machine has neither, so this always
	// skips here; CI with OIDC runs it.
	src, ok := sign.KeylessAvailable(context.Background())
	if !ok {
		t.Skip("keyless signing needs an OIDC identity (GitHub Actions ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN or SIGSTORE_ID_TOKEN) and internet access to fulcio.sigstore.dev and rekor.sigstore.dev; none is available here")
	}
	s, err := sign.KeylessSigner(context.Background(), sign.KeylessOptions{})
	if err != nil {
		t.Fatalf("KeylessSigner with %s: %v", src, err)
	}
	if !s.Keyless() {
		t.Error("keyless signer has no certificate")
	}
}
