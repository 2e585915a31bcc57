package sign

import (
	"context"

	"github.com/sigstore/cosign/v2/pkg/cosign/bundle"
)

// tlogUploader records signatures in a transparency log (Rekor) and returns
// the bundle cosign attaches to the signature. Key mode has none: offline,
// nothing is uploaded and no bundle is invented.
type tlogUploader interface {
	uploadSignature(ctx context.Context, sig, payload, signerPEM []byte) (*bundle.RekorBundle, error)
	uploadDSSE(ctx context.Context, envelope, signerPEM []byte) (*bundle.RekorBundle, error)
}
