package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/imagectl/imagectl/imagespec"
)

// Published is what plan reads back from a published image: its digest and the
// labels build wrote.
type Published struct {
	Ref    string  `json:"ref"`
	Digest v1.Hash `json:"digest"`
	// Inputs is the dev.imagectl.inputs.digest label ("" when absent).
	Inputs string `json:"inputs,omitempty"`
	// Lock is the dev.imagectl.lock label decoded, nil when absent or invalid.
	Lock *imagespec.Set `json:"-"`
}

// Registry reads and writes manifests through go-containerregistry. It never
// pulls a layer. One Registry reuses one authenticated transport per
// repository, so a plan over many tags pings each registry once.
type Registry struct {
	puller *remote.Puller
	pusher *remote.Pusher
}

// New returns a Registry using opts for every request (auth,
// transport, user agent). Contexts are passed per call.
func New(opts ...remote.Option) (*Registry, error) {
	p, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	w, err := remote.NewPusher(append(append([]remote.Option(nil), opts...), remote.Reuse(p))...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return &Registry{puller: p, pusher: w}, nil
}

// IsNotFound reports whether err is a registry 404 (manifest or tag unknown).
func IsNotFound(err error) bool {
	var terr *transport.Error
	if errors.As(err, &terr) {
		return terr.StatusCode == http.StatusNotFound
	}
	return false
}

// Head returns the descriptor ref names, or nil when it does not exist. One
// HEAD request.
func (r *Registry) Head(ctx context.Context, ref name.Reference) (*v1.Descriptor, error) {
	d, err := r.puller.Head(ctx, ref)
	if IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("HEAD %s: %w", ref, err)
	}
	return d, nil
}

// Inspect reads the labels of the image ref names, or returns nil when ref
// does not exist. For an index it reads the first platform manifest (BuildKit
// attestation manifests, platform unknown/unknown, are skipped): build writes
// the same imagectl labels on every platform. Three GETs: the manifest (or
// index), the platform manifest and its config blob.
func (r *Registry) Inspect(ctx context.Context, ref name.Reference) (*Published, error) {
	desc, err := r.puller.Get(ctx, ref)
	if IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading manifest %s: %w", ref, err)
	}
	p := &Published{Ref: ref.String(), Digest: desc.Digest}
	var img v1.Image
	switch {
	case desc.MediaType.IsIndex():
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("reading index %s: %w", ref, err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("reading index %s: %w", ref, err)
		}
		var child *v1.Descriptor
		for i := range im.Manifests {
			m := &im.Manifests[i]
			if m.Platform != nil && !imagespec.IsAttestationManifest(*m) && m.MediaType.IsImage() {
				child = m
				break
			}
		}
		if child == nil {
			return nil, fmt.Errorf("index %s (%s) has no platform image manifest", ref, desc.Digest)
		}
		img, err = idx.Image(child.Digest)
		if err != nil {
			return nil, fmt.Errorf("reading %s platform %s: %w", ref, child.Platform, err)
		}
	case desc.MediaType.IsImage():
		img, err = desc.Image()
		if err != nil {
			return nil, fmt.Errorf("reading image %s: %w", ref, err)
		}
	default:
		return nil, fmt.Errorf("%s is a %s, not an image or index", ref, desc.MediaType)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading config of %s: %w", ref, err)
	}
	labels := cf.Config.Labels
	p.Inputs = labels[imagespec.LabelInputs]
	if raw := labels[imagespec.LabelLock]; raw != "" {
		// A lock that does not decode is no lock: plan then explains the
		// entry without it.
		if s, err := imagespec.DecodeLock(raw); err == nil {
			p.Lock = &s
		}
	}
	return p, nil
}

// Tag points tag at the manifest named by digest (PUT of the manifest bytes
// under the tag; no blob is written). The manifest is read first so the tag
// gets its exact bytes and media type.
func (r *Registry) Tag(ctx context.Context, tag name.Tag, digest name.Digest) error {
	desc, err := r.puller.Get(ctx, digest)
	if err != nil {
		return fmt.Errorf("reading %s to tag it %s: %w", digest, tag.TagStr(), err)
	}
	if err := r.pusher.Put(ctx, tag, desc); err != nil {
		return fmt.Errorf("writing tag %s -> %s: %w", tag, digest.DigestStr(), err)
	}
	return nil
}
