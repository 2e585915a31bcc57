package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/imagespec"
)

// Platform is one platform image of the image under test.
type Platform struct {
	// Platform is os/arch[/variant], e.g. linux/arm64.
	Platform string
	Digest   v1.Hash
	Image    v1.Image
	Config   *v1.ConfigFile
}

// Arch is the platform's architecture (amd64, arm64, ...).
func (p *Platform) Arch() string {
	parts := strings.Split(p.Platform, "/")
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

// source is an opened image: its digest and platform images.
type source struct {
	ref       string
	digest    string
	platforms []*Platform
	cleanup   func()
}

// openRemote reads ref (a tag or digest reference, index or single
// manifest) from its registry.
func openRemote(ctx context.Context, ref string, nopts []name.Option, ropts []remote.Option) (*source, error) {
	r, err := name.ParseReference(ref, nopts...)
	if err != nil {
		return nil, fmt.Errorf("image reference %q: %w", ref, err)
	}
	ropts = append([]remote.Option{remote.WithContext(ctx)}, ropts...)
	desc, err := remote.Get(r, ropts...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r, err)
	}
	src := &source{ref: r.String(), digest: desc.Digest.String(), cleanup: func() {}}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("reading index %s: %w", r, err)
		}
		src.platforms, err = indexPlatforms(idx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		return src, nil
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("reading image %s: %w", r, err)
	}
	p, err := newPlatform(img, "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	src.platforms = []*Platform{p}
	return src, nil
}

// openArchive reads the OCI archive imagectl build writes (an OCI image
// layout as a tar file whose index.json names one image index), or an OCI
// layout directory. The tar is unpacked into a directory under tmpDir, which
// cleanup removes.
func openArchive(p, tmpDir string, maxBytes int64) (*source, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	src := &source{ref: p, cleanup: func() {}}
	dir := p
	if !fi.IsDir() {
		dir, err = os.MkdirTemp(tmpDir, "imagectl-smoke-archive-")
		if err != nil {
			return nil, err
		}
		src.cleanup = func() { os.RemoveAll(dir) }
		if err := untarLayout(p, dir, maxBytes); err != nil {
			src.cleanup()
			return nil, fmt.Errorf("archive %s: %w", p, err)
		}
	}
	lp, err := layout.FromPath(dir)
	if err != nil {
		src.cleanup()
		return nil, fmt.Errorf("archive %s: not an OCI image layout: %w", p, err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		src.cleanup()
		return nil, fmt.Errorf("archive %s: index.json: %w", p, err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		src.cleanup()
		return nil, fmt.Errorf("archive %s: index.json: %w", p, err)
	}
	if len(im.Manifests) != 1 {
		src.cleanup()
		return nil, fmt.Errorf("archive %s: index.json lists %d entries, want the one image (index) imagectl build writes", p, len(im.Manifests))
	}
	d := im.Manifests[0]
	src.digest = d.Digest.String()
	switch {
	case d.MediaType.IsIndex():
		idx, err := top.ImageIndex(d.Digest)
		if err != nil {
			src.cleanup()
			return nil, fmt.Errorf("archive %s: index %s: %w", p, d.Digest, err)
		}
		if src.platforms, err = indexPlatforms(idx); err != nil {
			src.cleanup()
			return nil, fmt.Errorf("archive %s: %w", p, err)
		}
	case d.MediaType.IsImage():
		img, err := top.Image(d.Digest)
		if err != nil {
			src.cleanup()
			return nil, fmt.Errorf("archive %s: image %s: %w", p, d.Digest, err)
		}
		pl, err := newPlatform(img, "")
		if err != nil {
			src.cleanup()
			return nil, fmt.Errorf("archive %s: %w", p, err)
		}
		src.platforms = []*Platform{pl}
	default:
		src.cleanup()
		return nil, fmt.Errorf("archive %s: index.json names a %s, want an image index or manifest", p, d.MediaType)
	}
	return src, nil
}

var layoutEntry = regexp.MustCompile(`^(oci-layout|index\.json|blobs/sha256/[0-9a-f]{64})$`)

// untarLayout unpacks an OCI layout tar into dir: only oci-layout,
// index.json and blobs/sha256/<hex> regular files, at most maxBytes in all.
func untarLayout(p, dir string, maxBytes int64) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading tar: %w", err)
		}
		n := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if h.Typeflag == tar.TypeDir {
			continue
		}
		if h.Typeflag != tar.TypeReg || !layoutEntry.MatchString(n) {
			return fmt.Errorf("unexpected entry %q (an OCI layout holds oci-layout, index.json and blobs/sha256/<hex> files)", h.Name)
		}
		if total += h.Size; total > maxBytes {
			return fmt.Errorf("more than %d bytes", maxBytes)
		}
		dst := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.CopyN(out, tr, h.Size); err != nil {
			out.Close()
			return fmt.Errorf("%s: %w", n, err)
		}
		if err := out.Close(); err != nil {
			return err
		}
	}
}

// indexPlatforms lists the platform images of idx, skipping attestation
// manifests (imagespec.IsAttestationManifest).
func indexPlatforms(idx v1.ImageIndex) ([]*Platform, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []*Platform
	for _, d := range im.Manifests {
		if imagespec.IsAttestationManifest(d) {
			continue
		}
		if !d.MediaType.IsImage() {
			if d.MediaType == types.OCIImageIndex || d.MediaType == types.DockerManifestList {
				return nil, fmt.Errorf("nested index %s: want platform manifests", d.Digest)
			}
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("platform manifest %s: %w", d.Digest, err)
		}
		want := ""
		if d.Platform != nil {
			want = d.Platform.String()
		}
		p, err := newPlatform(img, want)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("the index lists no platform image")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Platform < out[j].Platform })
	return out, nil
}

func newPlatform(img v1.Image, indexPlatform string) (*Platform, error) {
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", d, err)
	}
	p := cf.Platform()
	if p == nil || p.OS == "" || p.Architecture == "" {
		return nil, fmt.Errorf("image %s: its config names no os/architecture", d)
	}
	plat := imagespec.PlatformName(p.OS, p.Architecture, p.Variant)
	if indexPlatform != "" && !imagespec.SamePlatform(indexPlatform, plat) {
		return nil, fmt.Errorf("image %s: the index says %s, its config %s", d, indexPlatform, plat)
	}
	return &Platform{Platform: plat, Digest: d, Image: img, Config: cf}, nil
}

// selectPlatforms picks the requested platforms (all when want is empty).
func selectPlatforms(all []*Platform, want []string) ([]*Platform, error) {
	if len(want) == 0 {
		return all, nil
	}
	var out []*Platform
	for _, w := range want {
		found := false
		for _, p := range all {
			if imagespec.SamePlatform(p.Platform, w) {
				out = append(out, p)
				found = true
				break
			}
		}
		if !found {
			var have []string
			for _, p := range all {
				have = append(have, p.Platform)
			}
			return nil, fmt.Errorf("platform %s: not in the image (it has %s)", w, strings.Join(have, ", "))
		}
	}
	return out, nil
}
