package verify_test

import (
	"context"
	"os"
	"testing"

	"github.com/imagectl/imagectl/verify"
)

// TestKeylessVerification runs only where an image signed keylessly in CI
// and the internet exist (the Sigstore trust root comes from its TUF mirror).
func TestKeylessVerification(t *testing.T) {
	img := os.Getenv("IMAGECTL_KEYLESS_IMAGE")
	if img == "" {
		t.Skip("keyless verification needs internet access to the Sigstore TUF mirror and an image signed keylessly in CI (set IMAGECTL_KEYLESS_IMAGE, IMAGECTL_KEYLESS_IDENTITY_REGEXP, IMAGECTL_KEYLESS_ISSUER); not available on this offline machine")
	}
	rep, err := verify.Image(context.Background(), img,
		verify.WithKeylessIdentity(verify.Identity{
			SubjectRegExp: os.Getenv("IMAGECTL_KEYLESS_IDENTITY_REGEXP"),
			Issuer:        os.Getenv("IMAGECTL_KEYLESS_ISSUER"),
		}))
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
}
