package buildtest

import (
	"archive/tar"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/imagespec/imagetest"
)

// Call is one Build call: the spec (without its status channel) and what
// the image's layer holds (path in the contexts -> bytes).
type Call struct {
	Spec  build.Spec
	Files map[string][]byte
}

// Builder is the fake. The zero value is ready to use.
type Builder struct {
	// RemoteOptions are used for pushes (a transport).
	RemoteOptions []remote.Option

	mu       sync.Mutex
	calls    []Call
	exported map[string]v1.ImageIndex // what Build exported, by digest
}

// Calls returns the Build calls so far, in order.
func (b *Builder) Calls() []Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

// Build implements build.Interface.
func (b *Builder) Build(ctx context.Context, s build.Spec) (*build.PlatformResult, error) {
	files, err := readTree(s.Contexts.Root)
	if err != nil {
		return nil, fmt.Errorf("fake buildkit: reading the contexts of %s: %w", s.Platform, err)
	}
	s.Status = nil
	b.mu.Lock()
	b.calls = append(b.calls, Call{Spec: s, Files: files})
	b.mu.Unlock()
	idx, err := export(s, files)
	if err != nil {
		return nil, fmt.Errorf("fake buildkit: %s: %w", s.Platform, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.exported == nil {
		b.exported = map[string]v1.ImageIndex{}
	}
	b.exported[d.String()] = idx
	b.mu.Unlock()
	switch {
	case s.Push:
		repo, err := name.NewRepository(s.Repo)
		if err != nil {
			return nil, err
		}
		if err := remote.WriteIndex(repo.Digest(d.String()), idx, append([]remote.Option{remote.WithContext(ctx)}, b.RemoteOptions...)...); err != nil {
			return nil, fmt.Errorf("fake buildkit: pushing %s: %w", s.Platform, err)
		}
	case s.Archive != "":
		if err := writeArchive(s.Archive, idx); err != nil {
			return nil, fmt.Errorf("fake buildkit: writing %s: %w", s.Archive, err)
		}
	case s.Prepare:
	default:
		return nil, fmt.Errorf("fake buildkit: %s: nothing to export", s.Platform)
	}
	return &build.PlatformResult{Platform: s.Platform, Exported: d.String(), Builder: "fake", BuildPlatform: s.Platform, Steps: 1, Duration: build.Duration(time.Millisecond)}, nil
}

// export is what BuildKit exports for s: an index of the platform image
// and, with provenance, its attestation manifest.
func export(s build.Spec, files map[string][]byte) (v1.ImageIndex, error) {
	p, err := v1.ParsePlatform(s.Platform)
	if err != nil {
		return nil, err
	}
	l, err := imagetest.Layer(files)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{Layer: l})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: s.SourceDateEpoch.UTC()}
	cf.Config.Labels = s.Labels
	cf.Config.Env = imagetest.Env()
	if img, err = mutate.ConfigFile(mutate.ConfigMediaType(img, types.OCIConfigJSON), cf); err != nil {
		return nil, err
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	if !s.Provenance {
		return idx, nil
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	att, err := imagetest.AttestationManifest(d, imagespec.PredicateSLSA02)
	if err != nil {
		return nil, err
	}
	return mutate.AppendManifests(idx, mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{
		Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"},
		Annotations: map[string]string{
			imagespec.AnnotationReferenceDigest: d.String(),
			imagespec.AnnotationReferenceType:   imagespec.ReferenceTypeAttestation,
		},
	}}), nil
}

// readTree reads every regular file under root, by path relative to root.
func readTree(root string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	return out, err
}

// writeArchive writes idx as an OCI layout tarball at dst, its index.json
// naming idx, as BuildKit's OCI exporter does.
func writeArchive(dst string, idx v1.ImageIndex) error {
	dir, err := os.MkdirTemp("", "fake-buildkit-oci-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendIndex(idx); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755})
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o644, Size: int64(len(b))}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// StoreBuilder is a Builder that also opens the images it exported, as
// build.BuildKit.Image opens them from buildkitd's content store: the
// pipeline scans what it built from there (and, with Spec.Prepare, while
// it pushes) instead of reading it back from the registry.
type StoreBuilder struct{ *Builder }

// Image opens the manifest want of the index res.Exported names (with want
// "", its one image manifest), which b's Build exported; the contract of
// build.BuildKit.Image, which this fake's images satisfy without fallback
// (every layer is in its store: fromFallback stays 0).
func (b StoreBuilder) Image(_ context.Context, res *build.PlatformResult, want string, _ v1.Image) (v1.Image, func() error, func() int, error) {
	if res == nil || res.Exported == "" || res.Builder != "fake" {
		return nil, nil, nil, fmt.Errorf("fake buildkit: no exported image of this builder to read (%+v)", res)
	}
	b.mu.Lock()
	idx := b.exported[res.Exported]
	b.mu.Unlock()
	if idx == nil {
		return nil, nil, nil, fmt.Errorf("fake buildkit: the store does not hold %s", res.Exported)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, nil, nil, err
	}
	var images []v1.Hash
	for _, m := range im.Manifests {
		image := m.Annotations[imagespec.AnnotationReferenceType] != imagespec.ReferenceTypeAttestation
		if want == "" && image || want != "" && m.Digest.String() == want {
			images = append(images, m.Digest)
		}
	}
	if len(images) != 1 {
		return nil, nil, nil, fmt.Errorf("fake buildkit: the index %s holds %d image manifests matching %q, want one", res.Exported, len(images), want)
	}
	img, err := idx.Image(images[0])
	if err != nil {
		return nil, nil, nil, err
	}
	return img, func() error { return nil }, func() int { return 0 }, nil
}
