package registry

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/imagectl/imagectl/internal/ctxio"
)

// errNotInImage is returned by readImageFile when the file does not exist
// in the image's merged filesystem.
var errNotInImage = errors.New("not in the image")

// OCI layer whiteouts (image-spec layer.md): ".wh.<name>" deletes <name> of
// the layers below, ".wh..wh..opq" hides everything below in its directory.
const (
	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
)

// maxLayerBytes bounds how much of one uncompressed layer readImageFile
// reads while looking for a file (a code-server layer is under 1 GiB).
const maxLayerBytes = 4 << 30

// readImageFile returns the content of the regular file p (absolute, e.g.
// /app/code-server/lib/vscode/package.json) in img's merged filesystem, at
// most limit bytes. It reads the layers from the top down, each only until
// it finds p, and honours whiteouts: p (or a directory above it) deleted by
// a ".wh." entry, an opaque directory above it, or a directory above it
// replaced by a non-directory ends the search with errNotInImage. Layer
// blobs are fetched with the context img was made with; ctx also stops the
// reading.
func readImageFile(ctx context.Context, img v1.Image, p string, limit int64) ([]byte, error) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("listing layers: %w", err)
	}
	for i := len(layers) - 1; i >= 0; i-- {
		b, res, err := findInLayer(ctx, layers[i], p, limit)
		if err != nil {
			d, _ := layers[i].Digest()
			return nil, fmt.Errorf("layer %d (%s): %w", i, d, err)
		}
		switch res {
		case layerHas:
			return b, nil
		case layerHides:
			return nil, errNotInImage
		}
	}
	return nil, errNotInImage
}

// layerResult is what one layer says about a path.
type layerResult int

const (
	layerSilent layerResult = iota // look in the layers below
	layerHas                       // the layer holds the file
	layerHides                     // a whiteout, opaque directory or non-directory hides lower layers' file
)

// findInLayer scans one layer's tar for p (relative, cleaned).
func findInLayer(ctx context.Context, l v1.Layer, p string, limit int64) ([]byte, layerResult, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, layerSilent, err
	}
	defer rc.Close()
	lr := &io.LimitedReader{R: ctxio.Reader(ctx, rc), N: maxLayerBytes + 1}
	tr := tar.NewReader(lr)
	res := layerSilent
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, res, nil
		}
		if err != nil {
			if lr.N <= 0 {
				return nil, res, fmt.Errorf("larger than %d bytes uncompressed", int64(maxLayerBytes))
			}
			return nil, res, fmt.Errorf("reading tar: %w", err)
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		dir, base := path.Split(name)
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case base == opaqueWhiteout:
			if dir == "" || isBelow(p, dir) {
				res = layerHides
			}
		case strings.HasPrefix(base, whiteoutPrefix):
			if t := path.Join(dir, strings.TrimPrefix(base, whiteoutPrefix)); t == p || isBelow(p, t) {
				res = layerHides
			}
		case name == p:
			if h.Typeflag != tar.TypeReg {
				return nil, res, fmt.Errorf("/%s is not a regular file (tar type %q)", p, h.Typeflag)
			}
			if h.Size > limit {
				return nil, res, fmt.Errorf("/%s is %d bytes, more than the %d read", p, h.Size, limit)
			}
			b, err := io.ReadAll(io.LimitReader(tr, limit))
			if err != nil {
				return nil, res, fmt.Errorf("reading /%s: %w", p, err)
			}
			return b, layerHas, nil
		case isBelow(p, name) && h.Typeflag != tar.TypeDir:
			// A directory above p is a file or symlink here (symlinks
			// are not followed).
			res = layerHides
		}
	}
}

// isBelow reports whether p lies inside directory dir (both relative).
func isBelow(p, dir string) bool { return strings.HasPrefix(p, dir+"/") }
