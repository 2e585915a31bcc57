package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/attest"
	"github.com/imagectl/imagectl/imagespec"
)

// exported is what one platform's solve exported: BuildKit's index of the
// image manifest and, with attestations, the attestation manifest.
type exported struct {
	image v1.Descriptor
	// attestations are BuildKit's attestation manifests for image.
	attestations []v1.Descriptor
}

// splitExported picks the image manifest and its attestation manifests out
// of a BuildKit index for one platform.
func splitExported(im *v1.IndexManifest, platform string) (exported, error) {
	var e exported
	var images []v1.Descriptor
	for _, d := range im.Manifests {
		if imagespec.IsAttestationManifest(d) {
			e.attestations = append(e.attestations, d)
			continue
		}
		images = append(images, d)
	}
	if len(images) != 1 {
		return e, fmt.Errorf("BuildKit's index for %s lists %d image manifests, want 1", platform, len(images))
	}
	e.image = images[0]
	if e.image.Platform == nil {
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return e, err
		}
		e.image.Platform = p
	}
	if got := e.image.Platform.String(); got != platform {
		return e, fmt.Errorf("BuildKit built %s for %s, want %s", e.image.Digest, got, platform)
	}
	return e, nil
}

// newIndex is the multi-platform index: the image manifests only, in the
// given order, without annotations, so its bytes depend on nothing but the
// platform manifests. It is go-containerregistry's empty.Index with the
// manifests appended (mutate.AppendManifests), whose bytes are
// json.Marshal of the v1.IndexManifest.
func newIndex(images []v1.Descriptor) ([]byte, v1.Hash, error) {
	if len(images) == 0 {
		// empty.Index lists "manifests":[]; an index of no image is never
		// what a build means.
		return nil, v1.Hash{}, errors.New("no platform image to index")
	}
	adds := make([]mutate.IndexAddendum, len(images))
	for i, d := range images {
		adds[i] = mutate.IndexAddendum{Add: described{v1.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size, Platform: d.Platform}}}
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	raw, err := idx.RawManifest()
	if err != nil {
		return nil, v1.Hash{}, err
	}
	h, err := idx.Digest()
	return raw, h, err
}

// described is a manifest known by its descriptor only, appended to an
// index with mutate.AppendManifests: the index never needs its content.
// Its Descriptor is used as is (partial.Descriptor), so nothing is added
// to it (no artifactType read from a manifest).
type described struct{ d v1.Descriptor }

func (d described) Digest() (v1.Hash, error)            { return d.d.Digest, nil }
func (d described) Size() (int64, error)                { return d.d.Size, nil }
func (d described) MediaType() (types.MediaType, error) { return d.d.MediaType, nil }
func (d described) Descriptor() (*v1.Descriptor, error) { c := d.d; return &c, nil }

// referrer turns a BuildKit attestation manifest into an OCI referrer of
// subject: the same manifest plus subject and artifactType.
//
// Hand-written on purpose: go-containerregistry's mutate.Subject re-encodes
// the manifest through v1.Manifest (its field order, unknown fields
// dropped) and has no artifactType for an image, while the referrers
// published so far are the manifest decoded into a map and re-encoded
// (keys sorted), with both fields added; the same bytes keep the same
// referrer digests (TestReferrerBytesPinned).
func referrer(raw []byte, subject v1.Descriptor) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decoding attestation manifest: %w", err)
	}
	m["subject"] = v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}
	m["artifactType"] = imagespec.ProvenanceArtifactType
	return json.Marshal(m)
}

// rawManifest is a remote.Taggable for bytes we wrote.
type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mt, nil }

// Published is what Publish pushed.
type Published struct {
	Index v1.Hash
	// Platforms maps an OCI platform to its image manifest.
	Platforms map[string]v1.Descriptor
	// Provenance maps an OCI platform to BuildKit's provenance statement for
	// it (empty without Spec.Provenance).
	Provenance map[string]attest.Statement
}

// Export is one platform's solve as BuildKit exported it: an index holding
// the image manifest and, with attestations, their manifest.
type Export struct {
	// Platform is the OCI platform built.
	Platform string
	// Digest is the exported index's digest in the repository (pushed).
	Digest string
	// Archive is the OCI layout tarball BuildKit wrote (not pushed).
	Archive string
}

// Publish reads each platform's export from the registry, pushes the
// multi-platform index (by digest, then every tag) and each attestation as a
// referrer of its platform manifest.
func Publish(ctx context.Context, repo name.Repository, results []Export, tags []string, ropts []remote.Option) (*Published, error) {
	ropts = append([]remote.Option{remote.WithContext(ctx)}, ropts...)
	var images []v1.Descriptor
	pub := &Published{Platforms: map[string]v1.Descriptor{}, Provenance: map[string]attest.Statement{}}
	type att struct {
		raw     []byte
		mt      types.MediaType
		subject v1.Descriptor
	}
	var atts []att
	for _, r := range results {
		ref := repo.Digest(r.Digest)
		idx, err := remote.Index(ref, ropts...)
		if err != nil {
			return nil, fmt.Errorf("reading %s's export %s: %w", r.Platform, ref, err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("reading %s's export %s: %w", r.Platform, ref, err)
		}
		e, err := splitExported(im, r.Platform)
		if err != nil {
			return nil, err
		}
		images = append(images, e.image)
		pub.Platforms[r.Platform] = e.image
		for _, a := range e.attestations {
			d, err := remote.Get(repo.Digest(a.Digest.String()), ropts...)
			if err != nil {
				return nil, fmt.Errorf("reading %s's attestation %s: %w", r.Platform, a.Digest, err)
			}
			st, err := provenanceStatement(repo, d, ropts)
			if err != nil {
				return nil, fmt.Errorf("reading %s's attestation %s: %w", r.Platform, a.Digest, err)
			}
			if st != nil {
				pub.Provenance[r.Platform] = *st
			}
			raw, err := referrer(d.Manifest, e.image)
			if err != nil {
				return nil, fmt.Errorf("%s's attestation %s: %w", r.Platform, a.Digest, err)
			}
			atts = append(atts, att{raw: raw, mt: d.MediaType, subject: e.image})
		}
	}
	raw, h, err := newIndex(images)
	if err != nil {
		return nil, err
	}
	idx := rawManifest{raw: raw, mt: types.OCIImageIndex}
	if err := remote.Put(repo.Digest(h.String()), idx, ropts...); err != nil {
		return nil, fmt.Errorf("pushing index %s@%s: %w", repo, h, err)
	}
	for _, a := range atts {
		ah, _, err := v1.SHA256(bytes.NewReader(a.raw))
		if err != nil {
			return nil, err
		}
		if err := remote.Put(repo.Digest(ah.String()), rawManifest{raw: a.raw, mt: a.mt}, ropts...); err != nil {
			return nil, fmt.Errorf("pushing provenance of %s as a referrer: %w", a.subject.Digest, err)
		}
	}
	for _, t := range tags {
		if err := remote.Put(repo.Tag(t), idx, ropts...); err != nil {
			return nil, fmt.Errorf("tagging %s:%s: %w", repo, t, err)
		}
	}
	pub.Index = h
	return pub, nil
}

// provenanceStatement returns the SLSA provenance statement in a BuildKit
// attestation manifest, or nil if it has none.
func provenanceStatement(repo name.Repository, d *remote.Descriptor, ropts []remote.Option) (*attest.Statement, error) {
	img, err := d.Image()
	if err != nil {
		return nil, err
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	for _, l := range m.Layers {
		pt := l.Annotations[imagespec.AnnotationPredicateType]
		if !imagespec.IsProvenance(pt) {
			continue
		}
		layer, err := remote.Layer(repo.Digest(l.Digest.String()), ropts...)
		if err != nil {
			return nil, err
		}
		rc, err := layer.Compressed()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(io.LimitReader(rc, 16<<20))
		rc.Close()
		if err != nil {
			return nil, err
		}
		st, err := attest.ParseStatement(b)
		if err != nil {
			return nil, fmt.Errorf("provenance layer %s: %w", l.Digest, err)
		}
		if st.PredicateType != pt || len(st.Predicate) == 0 {
			return nil, fmt.Errorf("provenance layer %s: predicate type %q, want %q with a predicate", l.Digest, st.PredicateType, pt)
		}
		return st, nil
	}
	return nil, nil
}
