package release

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/registry"
)

// Verifiers runs every verifier in order and stops at the first failure.
func Verifiers(vs ...Verifier) Verifier {
	return VerifierFunc(func(ctx context.Context, ref name.Digest, e Entry) error {
		for _, v := range vs {
			if err := v.Verify(ctx, ref, e); err != nil {
				return err
			}
		}
		return nil
	})
}

// InputsVerifier checks that the image carries the inputs digest the plan
// computed for the entry (e.InputsDigest, not computed again), so a tag
// never moves to an image built from other inputs (a stale cache, a
// concurrent run).
func InputsVerifier(reg *registry.Registry) Verifier {
	return VerifierFunc(func(ctx context.Context, ref name.Digest, e Entry) error {
		want := e.InputsDigest
		if want == "" {
			return fmt.Errorf("%s: the plan computed no inputs digest", e.Name)
		}
		pub, err := reg.Inspect(ctx, ref)
		if err != nil {
			return err
		}
		if pub == nil {
			return fmt.Errorf("%s does not exist", ref)
		}
		if pub.Inputs != want {
			return fmt.Errorf("%s carries inputs digest %s, want %s", ref, orNone(pub.Inputs), want)
		}
		return nil
	})
}
