package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/oci"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// repositoryClaims is the claim check of every signature: cosign's
// SimpleClaimVerifier (the payload names the manifest digest), and the
// signed repository (critical.identity.docker-reference, which cosign
// writes but does not check) must be the verified repository or an allowed
// mirror source. This follows containers/image's signedIdentity
// matchRepository policy: the digest is checked separately, so only the
// repository of the signed reference counts (its tag or digest, if any, is
// ignored). cosign calls verify only for signatures that verified
// cryptographically, so a rejection here is a trusted signature for another
// repository; rejections are remembered per digest for the report.
type repositoryClaims struct {
	verified string          // the verified repository, name.Repository.Name()
	accepted map[string]bool // verified and allowed repositories

	mu      sync.Mutex
	refused map[string][]string // manifest digest -> signed repositories refused
}

func newRepositoryClaims(verified name.Repository, allowed []string, opts []name.Option) (*repositoryClaims, error) {
	c := &repositoryClaims{verified: verified.Name(), accepted: map[string]bool{verified.Name(): true}, refused: map[string][]string{}}
	for _, a := range allowed {
		r, err := name.NewRepository(a, opts...)
		if err != nil {
			return nil, fmt.Errorf("allowed repository %q: %w (want a repository such as ghcr.io/example/code-server-ray, no tag or digest)", a, err)
		}
		c.accepted[r.Name()] = true
	}
	return c, nil
}

// verify is a cosign.CheckOpts.ClaimVerifier.
func (c *repositoryClaims) verify(sig oci.Signature, digest v1.Hash, annotations map[string]any) error {
	if err := cosign.SimpleClaimVerifier(sig, digest, annotations); err != nil {
		return err
	}
	p, err := sig.Payload()
	if err != nil {
		return err
	}
	var ss payload.SimpleContainerImage
	if err := json.Unmarshal(p, &ss); err != nil {
		return fmt.Errorf("reading the signed payload: %w", err)
	}
	signed := ss.Critical.Identity.DockerReference
	repo, err := signedRepository(signed)
	if err != nil {
		return err
	}
	if c.accepted[repo] {
		return nil
	}
	c.mu.Lock()
	if !slices.Contains(c.refused[digest.String()], repo) {
		c.refused[digest.String()] = append(c.refused[digest.String()], repo)
		slices.Sort(c.refused[digest.String()])
	}
	c.mu.Unlock()
	return fmt.Errorf("signature names repository %s (critical.identity.docker-reference %q), not %s", repo, signed, c.verified)
}

// rejected returns the signed repositories refused for digest, sorted.
func (c *repositoryClaims) rejected(digest string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.refused[digest])
}

// signedRepository returns the repository (registry/path, as
// name.Repository.Name spells it) of a signed docker-reference, which is a
// repository (what cosign writes) or, signed with --sign-container-identity,
// a tagged or digested reference.
func signedRepository(ref string) (string, error) {
	if ref == "" {
		return "", errors.New("the signature names no repository (empty critical.identity.docker-reference)")
	}
	if r, err := name.NewRepository(ref); err == nil {
		return r.Name(), nil
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("signed critical.identity.docker-reference %q: %w", ref, err)
	}
	return r.Context().Name(), nil
}
