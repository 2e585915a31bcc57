package sign

import (
	"context"
	"crypto"
	"fmt"
	"github.com/imagectl/imagectl/keys"
	"os"
	"path/filepath"
	"strings"

	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/imagectl/imagectl/internal/safefile"
)

// maxPasswordFile bounds a key password file.
const maxPasswordFile = 64 << 10

// PasswordEnv is the environment variable cosign (and imagectl) read the
// private key password from.
const PasswordEnv = "COSIGN_PASSWORD"

// Password returns the bytes of a key password.
type Password func() ([]byte, error)

// PasswordFromFile reads the password from a file; one trailing newline is
// dropped.
func PasswordFromFile(path string) Password {
	return func() ([]byte, error) {
		b, err := safefile.ReadFile(path, maxPasswordFile)
		if err != nil {
			return nil, fmt.Errorf("reading key password file: %w", err)
		}
		return []byte(strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")), nil
	}
}

// PasswordFromEnv reads the password from COSIGN_PASSWORD. An unset variable is
// an error (an empty password must be set explicitly as COSIGN_PASSWORD=).
func PasswordFromEnv() Password {
	return func() ([]byte, error) {
		v, ok := os.LookupEnv(PasswordEnv)
		if !ok {
			return nil, fmt.Errorf("no key password: set %s or pass a password file", PasswordEnv)
		}
		return []byte(v), nil
	}
}

// StaticPassword is a fixed password (tests, callers that already hold it).
func StaticPassword(p []byte) Password {
	return func() ([]byte, error) { return p, nil }
}

// Signer signs payloads for Image and AttestSBOM. Build one with LoadKey or
// KeylessSigner.
type Signer struct {
	sv signature.SignerVerifier
	// certs, set in keyless mode, provides a Fulcio certificate for sv's
	// key that is valid long enough for the next signature.
	certs *certifier
	// tlog, when set, uploads every signature to a transparency log and
	// returns the bundle to attach. Nil in key mode.
	tlog tlogUploader
	// desc names the signer in errors and reports, never the secret.
	desc string
}

// PublicKey returns the signer's public key.
func (s *Signer) PublicKey() (crypto.PublicKey, error) { return s.sv.PublicKey() }

// PublicKeyPEM returns the signer's public key in PEM, as cosign.pub holds it.
func (s *Signer) PublicKeyPEM() ([]byte, error) {
	pk, err := s.sv.PublicKey()
	if err != nil {
		return nil, err
	}
	return cryptoutils.MarshalPublicKeyToPEM(pk)
}

// Keyless reports whether the signer signs with Fulcio certificates.
func (s *Signer) Keyless() bool { return s.certs != nil }

// String describes the signer without any secret.
func (s *Signer) String() string { return s.desc }

// LoadKey loads an encrypted cosign private key (the PEM that
// `cosign generate-key-pair` writes) and decrypts it with the password.
func LoadKey(ctx context.Context, keyPath string, password Password) (*Signer, error) {
	raw, err := keys.ReadPrivate(keyPath)
	if err != nil {
		return nil, err
	}
	if password == nil {
		password = PasswordFromEnv()
	}
	pw, err := password()
	if err != nil {
		return nil, err
	}
	sv, err := keys.DecryptPrivate(raw, keyPath, pw)
	if err != nil {
		return nil, err
	}
	return &Signer{sv: sv, desc: "key " + keyPath}, nil
}

// NewSigner wraps an already loaded sigstore SignerVerifier (key mode).
func NewSigner(sv signature.SignerVerifier, desc string) *Signer {
	return &Signer{sv: sv, desc: desc}
}

// KeyPair is the PEM of a generated cosign key pair.
type KeyPair struct {
	// PrivateKey is the encrypted private key ("ENCRYPTED SIGSTORE PRIVATE KEY").
	PrivateKey []byte
	PublicKey  []byte
}

// GenerateKeyPair makes a new ECDSA P-256 cosign key pair, the private key
// encrypted with the password, like `cosign generate-key-pair`.
func GenerateKeyPair(password []byte) (*KeyPair, error) {
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return password, nil })
	if err != nil {
		return nil, fmt.Errorf("generating key pair: %w", err)
	}
	return &KeyPair{PrivateKey: kb.PrivateBytes, PublicKey: kb.PublicBytes}, nil
}

// WriteKeyPair generates a key pair and writes PREFIX.key (mode 0600) and
// PREFIX.pub. It refuses to overwrite existing files. It returns both paths.
func WriteKeyPair(prefix string, password []byte) (keyPath, pubPath string, err error) {
	keyPath, pubPath = prefix+".key", prefix+".pub"
	for _, p := range []string{keyPath, pubPath} {
		if _, err := os.Stat(p); err == nil {
			return "", "", fmt.Errorf("%s already exists; refusing to overwrite a key", p)
		}
	}
	kp, err := GenerateKeyPair(password)
	if err != nil {
		return "", "", err
	}
	if dir := filepath.Dir(keyPath); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", "", err
		}
	}
	if err := writeNew(keyPath, kp.PrivateKey, 0o600); err != nil {
		return "", "", err
	}
	if err := writeNew(pubPath, kp.PublicKey, 0o644); err != nil {
		return "", "", err
	}
	return keyPath, pubPath, nil
}

// writeNew writes data to a temp file beside path and renames it into place.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
