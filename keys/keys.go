package keys

import (
	"crypto"
	"errors"
	"fmt"

	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/imagectl/imagectl/internal/safefile"
)

// maxKeyFile bounds a key file read by path: a cosign key is a few hundred
// bytes.
const maxKeyFile = 64 << 10

// LoadPublic reads a PEM public key (cosign.pub).
func LoadPublic(path string) (signature.Verifier, error) {
	raw, err := safefile.ReadFile(path, maxKeyFile)
	if err != nil {
		return nil, fmt.Errorf("reading public key: %w", err)
	}
	return PublicFromPEM(raw)
}

// PublicFromPEM parses a PEM public key.
func PublicFromPEM(raw []byte) (signature.Verifier, error) {
	pk, err := cryptoutils.UnmarshalPEMToPublicKey(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing public key PEM: %w", err)
	}
	v, err := signature.LoadVerifier(pk, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("loading public key: %w", err)
	}
	return v, nil
}

// LoadPrivate reads an encrypted cosign private key and decrypts it with
// password. Its errors never carry the password.
func LoadPrivate(path string, password []byte) (signature.SignerVerifier, error) {
	raw, err := ReadPrivate(path)
	if err != nil {
		return nil, err
	}
	return DecryptPrivate(raw, path, password)
}

// ReadPrivate reads the PEM of an encrypted cosign private key, so that a
// missing file is reported before a password is asked for.
func ReadPrivate(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no signing key: pass the path of cosign.key")
	}
	raw, err := safefile.ReadFile(path, maxKeyFile)
	if err != nil {
		return nil, fmt.Errorf("reading signing key: %w", err)
	}
	return raw, nil
}

// DecryptPrivate decrypts raw, the PEM ReadPrivate read from path, with
// password. Its errors never carry the password.
func DecryptPrivate(raw []byte, path string, password []byte) (signature.SignerVerifier, error) {
	sv, err := cosign.LoadPrivateKey(raw, password, nil)
	if err != nil {
		// cosign's error says "decrypt: ..." for a wrong password.
		return nil, fmt.Errorf("loading signing key %s: %w", path, err)
	}
	return sv, nil
}
