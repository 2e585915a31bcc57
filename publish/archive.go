package publish

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/imagectl/imagectl/internal/ctxio"
)

// Limits on the per-platform OCI tarballs BuildKit writes, read back here.
const (
	maxArchiveEntries = 100000
	maxArchiveBytes   = 64 << 30
	maxIndexBytes     = 4 << 20
)

// WriteArchive merges the per-platform OCI layout tarballs into one OCI
// layout tarball at dst whose index.json names one multi-platform index
// (the same bytes a push would create), annotated with the image name so
// `docker load` tags it. It returns the index digest and the platform
// manifests.
//
// The indexes are go-containerregistry's (newIndex, topIndex); the tarball
// is read and written here, not through its layout package, because
// layout writes a directory, not a tarball (every layer would be unpacked
// to disk and packed again, where this copies each blob from BuildKit's
// tarball straight into the new one), and its oci-layout file
// ("{\n    \"imageLayoutVersion\": ...}") and index.json
// (json.MarshalIndent on AppendIndex) are indented, where this archive's
// are compact JSON (pinned by TestWriteArchiveBytesPinned). ggcr's
// tarball package writes `docker save` tarballs, not OCI layouts.
//
// Once ctx ends, reading and copying stop at the next chunk and the
// temporary file (.imagectl-oci-*.tar beside dst) is removed: dst is
// either the whole archive or untouched.
func WriteArchive(ctx context.Context, dst string, results []Export, repoName, tag string) (v1.Hash, map[string]v1.Descriptor, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return v1.Hash{}, nil, err
	}
	blobs := map[string][]byte{} // small blobs (manifests, indexes) kept in memory
	files := map[string]string{} // blob path -> source archive for big blobs
	var images []v1.Descriptor
	plats := map[string]v1.Descriptor{}
	for i := range results {
		part := results[i].Archive
		rootIndex, err := scanLayout(ctx, part, blobs, files)
		if err != nil {
			return v1.Hash{}, nil, fmt.Errorf("reading %s's OCI archive %s: %w", results[i].Platform, part, err)
		}
		if len(rootIndex.Manifests) != 1 {
			return v1.Hash{}, nil, fmt.Errorf("%s: index.json lists %d entries, want 1", part, len(rootIndex.Manifests))
		}
		exp := rootIndex.Manifests[0]
		raw, ok := blobs[blobPath(exp.Digest)]
		if !ok {
			return v1.Hash{}, nil, fmt.Errorf("%s: exported index %s missing", part, exp.Digest)
		}
		var im v1.IndexManifest
		if err := json.Unmarshal(raw, &im); err != nil {
			return v1.Hash{}, nil, fmt.Errorf("%s: exported index %s: %w", part, exp.Digest, err)
		}
		e, err := splitExported(&im, results[i].Platform)
		if err != nil {
			return v1.Hash{}, nil, err
		}
		images = append(images, e.image)
		plats[results[i].Platform] = e.image
	}
	raw, h, err := newIndex(images)
	if err != nil {
		return v1.Hash{}, nil, err
	}
	blobs[blobPath(h)] = raw
	topRaw, err := topIndex(raw, h, repoName, tag)
	if err != nil {
		return v1.Hash{}, nil, err
	}
	if err := ctx.Err(); err != nil {
		return v1.Hash{}, nil, context.Cause(ctx)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".imagectl-oci-*.tar")
	if err != nil {
		return v1.Hash{}, nil, err
	}
	defer os.Remove(tmp.Name())
	if err := writeLayoutTar(ctx, tmp, topRaw, blobs, files); err != nil {
		tmp.Close()
		return v1.Hash{}, nil, fmt.Errorf("writing %s: %w", dst, err)
	}
	if err := tmp.Close(); err != nil {
		return v1.Hash{}, nil, err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return v1.Hash{}, nil, err
	}
	if err := ctx.Err(); err != nil {
		return v1.Hash{}, nil, context.Cause(ctx)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return v1.Hash{}, nil, err
	}
	return h, plats, nil
}

// topIndex is the archive's index.json: empty.Index naming the
// multi-platform index (raw, digest h) with the image name, so `docker
// load` and containerd tag it.
func topIndex(raw []byte, h v1.Hash, repoName, tag string) ([]byte, error) {
	ref := repoName
	if tag != "" {
		ref += ":" + tag
	}
	idx := described{v1.Descriptor{MediaType: types.OCIImageIndex, Digest: h, Size: int64(len(raw))}}
	return mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: idx, Descriptor: v1.Descriptor{
		Annotations: map[string]string{
			"io.containerd.image.name":          ref,
			"org.opencontainers.image.ref.name": tag,
		},
	}}).RawManifest()
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// scanLayout reads an OCI layout tarball written by BuildKit: it keeps
// index.json and small blobs in memory and remembers where big blobs are.
// Only regular files under blobs/<alg>/<hex>, oci-layout and index.json are
// accepted.
func scanLayout(ctx context.Context, archive string, blobs map[string][]byte, files map[string]string) (*v1.IndexManifest, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(ctxio.Reader(ctx, f))
	var index *v1.IndexManifest
	var total int64
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if n > maxArchiveEntries {
			return nil, fmt.Errorf("more than %d entries", maxArchiveEntries)
		}
		p := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%s: not a regular file", hdr.Name)
		}
		total += hdr.Size
		if total > maxArchiveBytes {
			return nil, fmt.Errorf("more than %d bytes", int64(maxArchiveBytes))
		}
		switch {
		case p == "index.json":
			b, err := io.ReadAll(io.LimitReader(tr, maxIndexBytes))
			if err != nil {
				return nil, err
			}
			index = &v1.IndexManifest{}
			if err := json.Unmarshal(b, index); err != nil {
				return nil, fmt.Errorf("index.json: %w", err)
			}
		case p == "oci-layout":
		case strings.HasPrefix(p, "blobs/sha256/") && strings.Count(p, "/") == 2:
			h, err := v1.NewHash("sha256:" + path.Base(p))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", hdr.Name, err)
			}
			if hdr.Size <= maxIndexBytes {
				b, err := io.ReadAll(tr)
				if err != nil {
					return nil, err
				}
				got, _, err := v1.SHA256(bytes.NewReader(b))
				if err != nil {
					return nil, err
				}
				if got != h {
					return nil, fmt.Errorf("%s: content digest %s", hdr.Name, got)
				}
				blobs[blobPath(h)] = b
			} else if _, ok := files[blobPath(h)]; !ok {
				files[blobPath(h)] = archive
			}
		default:
			return nil, fmt.Errorf("unexpected entry %s", hdr.Name)
		}
	}
	if index == nil {
		return nil, errors.New("no index.json")
	}
	return index, nil
}

// writeLayoutTar writes an OCI layout tarball with sorted entries and fixed
// times; it stops with ctx's error once ctx ends.
func writeLayoutTar(ctx context.Context, w io.Writer, index []byte, blobs map[string][]byte, files map[string]string) error {
	tw := tar.NewWriter(w)
	mtime := time.Unix(0, 0)
	put := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := put("index.json", index); err != nil {
		return err
	}
	names := make([]string, 0, len(blobs)+len(files))
	for n := range blobs {
		names = append(names, n)
	}
	for n := range files {
		if _, ok := blobs[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if b, ok := blobs[n]; ok {
			if err := put(n, b); err != nil {
				return err
			}
			continue
		}
		if err := copyBlob(ctx, tw, files[n], n, mtime); err != nil {
			return err
		}
	}
	return tw.Close()
}

// copyBlob copies blob name from the OCI tarball src into tw.
func copyBlob(ctx context.Context, tw *tar.Writer, src, name string, mtime time.Time) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(ctxio.Reader(ctx, f))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: %s vanished", src, name)
		}
		if err != nil {
			return err
		}
		if path.Clean(strings.TrimPrefix(hdr.Name, "./")) != name {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: hdr.Size, ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err = ctxio.Copy(ctx, tw, tr)
		return err
	}
}
