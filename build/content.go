package build

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync/atomic"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/content/proxy"
	"github.com/containerd/errdefs"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/imagectl/imagectl/imagespec"
)

// layerReadSize is how much of a layer one read of buildkitd's content
// store asks for.
const layerReadSize = 4 << 20

// maxMetadataBlob bounds an index, manifest or config read from
// buildkitd's content store.
const maxMetadataBlob = 16 << 20

// Image opens, from the content store of the buildkitd that built it
// (res.Builder), the image manifest want (a sha256 digest) that the
// solve of res exported: res.Exported itself, or a manifest of the index
// it names; with want "", the one image manifest it exported (the
// image's Digest says which). Nothing is read back from the registry it was pushed to: the
// SBOM scan reads the image's layers where BuildKit made them. The
// metadata (index, manifest, config) is read and checked against its
// digest at once, the layers when read; each layer's content is checked
// against its digest when read to its end. A layer the store does not
// hold is read from fallback (the same image in the registry, nil for
// none): buildkitd pushes a base's layers by cross-repository mount
// without pulling them, when it can. closeFn ends the connection once the
// image is no longer read; fromFallback counts the layers read from
// fallback so far. An image the store no longer holds (buildkitd pruned
// it) is an error.
func (b *BuildKit) Image(ctx context.Context, res *PlatformResult, want string, fallback v1.Image) (img v1.Image, closeFn func() error, fromFallback func() int, err error) {
	if res == nil || res.Exported == "" || res.Builder == "" {
		return nil, nil, nil, errors.New("no exported image to read from buildkitd")
	}
	var wantD digest.Digest
	if want != "" {
		if wantD, err = digest.Parse(want); err != nil {
			return nil, nil, nil, fmt.Errorf("manifest digest %q: %w", want, err)
		}
	}
	exported, err := digest.Parse(res.Exported)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("exported digest %q: %w", res.Exported, err)
	}
	c, err := b.dial(ctx, res.Builder)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("connecting to buildkitd at %s: %w", res.Builder, err)
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	store := proxy.NewContentStore(c.ContentClient())
	ci := &contentImage{ctx: ctx, store: store, builder: res.Builder, fallback: fallback}
	top, err := ci.blob(exported)
	if err != nil {
		return nil, nil, nil, err
	}
	var head struct {
		MediaType types.MediaType `json:"mediaType"`
		Manifests []v1.Descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(top, &head); err != nil {
		return nil, nil, nil, fmt.Errorf("%s in buildkitd at %s: %w", exported, res.Builder, err)
	}
	switch {
	case want == "" && !head.MediaType.IsIndex():
		ci.manifest = top
	case want == "":
		var images []v1.Descriptor
		for _, m := range head.Manifests {
			if m.Annotations[imagespec.AnnotationReferenceType] != imagespec.ReferenceTypeAttestation {
				images = append(images, m)
			}
		}
		if len(images) != 1 {
			return nil, nil, nil, fmt.Errorf("the index %s buildkitd at %s exported holds %d image manifests, want one", exported, res.Builder, len(images))
		}
		if ci.manifest, err = ci.blob(digest.Digest(images[0].Digest.String())); err != nil {
			return nil, nil, nil, err
		}
	case exported == wantD:
		ci.manifest = top
	case head.MediaType.IsIndex():
		found := false
		for _, m := range head.Manifests {
			if m.Digest.String() == want {
				found = true
			}
		}
		if !found {
			return nil, nil, nil, fmt.Errorf("the index %s buildkitd at %s exported does not hold the manifest %s", exported, res.Builder, want)
		}
		if ci.manifest, err = ci.blob(wantD); err != nil {
			return nil, nil, nil, err
		}
	default:
		return nil, nil, nil, fmt.Errorf("buildkitd at %s exported %s (%s), not the manifest %s", res.Builder, exported, head.MediaType, want)
	}
	var m v1.Manifest
	if err := json.Unmarshal(ci.manifest, &m); err != nil {
		return nil, nil, nil, fmt.Errorf("manifest %s in buildkitd at %s: %w", want, res.Builder, err)
	}
	ci.mediaType = m.MediaType
	ci.layers = map[v1.Hash]v1.Descriptor{}
	for _, l := range m.Layers {
		ci.layers[l.Digest] = l
	}
	if ci.config, err = ci.blob(digest.Digest(m.Config.Digest.String())); err != nil {
		return nil, nil, nil, err
	}
	img, err = partial.CompressedToImage(ci)
	if err != nil {
		return nil, nil, nil, err
	}
	return img, c.Close, func() int { return int(ci.fellBack.Load()) }, nil
}

// contentImage is an image in buildkitd's content store
// (partial.CompressedImageCore).
type contentImage struct {
	ctx       context.Context
	store     content.Store
	builder   string
	manifest  []byte
	config    []byte
	mediaType types.MediaType
	layers    map[v1.Hash]v1.Descriptor
	fallback  v1.Image
	fellBack  atomic.Int64
}

// blob reads a small blob and checks it against d.
func (ci *contentImage) blob(d digest.Digest) ([]byte, error) {
	ra, err := ci.store.ReaderAt(ci.ctx, ocispec.Descriptor{Digest: d})
	if err != nil {
		return nil, fmt.Errorf("%s in buildkitd at %s: %w", d, ci.builder, err)
	}
	defer ra.Close()
	if ra.Size() > maxMetadataBlob {
		return nil, fmt.Errorf("%s in buildkitd at %s: %d bytes, more than %d", d, ci.builder, ra.Size(), maxMetadataBlob)
	}
	b := make([]byte, ra.Size())
	if _, err := ra.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s in buildkitd at %s: %w", d, ci.builder, err)
	}
	if got := digest.FromBytes(b); got != d {
		return nil, fmt.Errorf("%s in buildkitd at %s: its content is %s", d, ci.builder, got)
	}
	return b, nil
}

func (ci *contentImage) RawConfigFile() ([]byte, error)      { return ci.config, nil }
func (ci *contentImage) MediaType() (types.MediaType, error) { return ci.mediaType, nil }
func (ci *contentImage) RawManifest() ([]byte, error)        { return ci.manifest, nil }

func (ci *contentImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	d, ok := ci.layers[h]
	if !ok {
		return nil, fmt.Errorf("layer %s is not in the manifest", h)
	}
	if _, err := ci.store.Info(ci.ctx, digest.Digest(h.String())); errdefs.IsNotFound(err) && ci.fallback != nil {
		ci.fellBack.Add(1)
		return ci.fallback.LayerByDigest(h)
	}
	return &contentLayer{ci: ci, desc: d}, nil
}

// contentLayer is one layer of a contentImage.
type contentLayer struct {
	ci   *contentImage
	desc v1.Descriptor
}

func (l *contentLayer) Digest() (v1.Hash, error)            { return l.desc.Digest, nil }
func (l *contentLayer) Size() (int64, error)                { return l.desc.Size, nil }
func (l *contentLayer) MediaType() (types.MediaType, error) { return l.desc.MediaType, nil }

// Compressed streams the layer from the content store; read to its end,
// it fails unless the content is the layer's digest and size.
func (l *contentLayer) Compressed() (io.ReadCloser, error) {
	ra, err := l.ci.store.ReaderAt(l.ci.ctx, ocispec.Descriptor{Digest: digest.Digest(l.desc.Digest.String()), Size: l.desc.Size})
	if err != nil {
		return nil, fmt.Errorf("layer %s in buildkitd at %s: %w", l.desc.Digest, l.ci.builder, err)
	}
	// Each read of the store is a gRPC call: read it in large pieces
	// (io.Copy's 32 KiB would be thousands of calls per layer).
	r := bufio.NewReaderSize(content.NewReader(ra), layerReadSize)
	return &verified{r: r, c: ra, h: sha256.New(), want: l.desc.Digest, size: l.desc.Size}, nil
}

// verified reads r, and at its end fails unless what was read has the
// digest and size wanted.
type verified struct {
	r    io.Reader
	c    io.Closer
	h    hash.Hash
	n    int64
	want v1.Hash
	size int64
}

func (v *verified) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if errors.Is(err, io.EOF) {
		if got := hex.EncodeToString(v.h.Sum(nil)); v.want.Algorithm != "sha256" || got != v.want.Hex || v.n != v.size {
			return n, fmt.Errorf("layer %s: read %d bytes of sha256 %s, want %d bytes", v.want, v.n, got, v.size)
		}
	}
	return n, err
}

func (v *verified) Close() error { return v.c.Close() }
