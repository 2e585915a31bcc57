package registry

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Images resolves image references to the digest they name now, reading
// manifests only (never layers). catalog.Refresh uses it to lock matrix.yaml's
// build.toolsImage.
type Images struct {
	settings
}

// NewImages returns an Images client; the options are New's.
func NewImages(opts ...Option) *Images {
	return &Images{settings: newSettings(opts)}
}

// Digest returns the digest ("sha256:<hex>") of the manifest ref names now:
// for a multi-platform tag, the index digest, so that a reference pinned to
// it still serves every build platform. It asks with HEAD and falls back to
// GET for a registry that refuses HEAD or answers it without a
// Docker-Content-Digest (not when the registry is unreachable).
func (im *Images) Digest(ctx context.Context, ref string) (string, error) {
	r, err := name.ParseReference(ref, im.nameOpts...)
	if err != nil {
		return "", fmt.Errorf("image %q: %w", ref, err)
	}
	opts := append([]remote.Option{remote.WithContext(ctx)}, im.opts...)
	desc, herr := remote.Head(r, opts...)
	if herr == nil {
		return desc.Digest.String(), nil
	}
	var ne net.Error
	if ctx.Err() != nil || errors.As(herr, &ne) {
		return "", fmt.Errorf("reading %s: %w", r, herr) // unreachable: GET would fail alike
	}
	full, err := remote.Get(r, opts...)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w (HEAD: %v)", r, err, herr)
	}
	return full.Digest.String(), nil
}
