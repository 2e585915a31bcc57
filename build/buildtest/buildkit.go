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

	mu    sync.Mutex
	calls []Call
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
