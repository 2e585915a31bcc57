package sbom

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
	"golang.org/x/sync/errgroup"

	"github.com/imagectl/imagectl/internal/ctxio"
)

// MaxPrefetchLayerBytes bounds one uncompressed layer Prefetch writes: a
// base whose layer decompresses to more is refused, not written to disk.
const MaxPrefetchLayerBytes = 32 << 30

// Prefetch writes the uncompressed layers of base into dir, each checked
// against its diff ID, under the names Scan's layer reader looks for
// (<index>-<diff ID>). A Scan with Options.LayerDir = dir of an image
// whose first layers are base's (an image built FROM base) then reads
// them from dir instead of fetching and decompressing them itself; a build
// calls Prefetch while BuildKit solves, so the base's decompression, most
// of a scan's reading, overlaps the solve. A layer is written to a
// temporary name and renamed once complete and checked: dir never holds
// part of a layer under its name.
func Prefetch(ctx context.Context, base v1.Image, dir string) error {
	layers, err := base.Layers()
	if err != nil {
		return fmt.Errorf("layers of the base: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2)
	for i, l := range layers {
		g.Go(func() error { return prefetchLayer(gctx, l, i, dir) })
	}
	return g.Wait()
}

func prefetchLayer(ctx context.Context, l v1.Layer, i int, dir string) error {
	diffID, err := l.DiffID()
	if err != nil {
		return fmt.Errorf("base layer %d: diff ID: %w", i, err)
	}
	rc, err := Uncompressed(l)
	if err != nil {
		return fmt.Errorf("base layer %d (%s): %w", i, diffID, err)
	}
	defer rc.Close()
	f, err := os.CreateTemp(dir, "partial-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // once renamed, there is nothing left to remove
	defer f.Close()
	h := sha256.New()
	n, err := ctxio.Copy(ctx, io.MultiWriter(f, h), io.LimitReader(rc, MaxPrefetchLayerBytes+1))
	if err != nil {
		return fmt.Errorf("base layer %d (%s): %w", i, diffID, err)
	}
	if n > MaxPrefetchLayerBytes {
		return fmt.Errorf("base layer %d (%s): decompresses to more than %d bytes", i, diffID, int64(MaxPrefetchLayerBytes))
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID.String() {
		return fmt.Errorf("base layer %d: decompressed content is %s, not its diff ID %s", i, got, diffID)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, layerFileName(i, diffID.String())))
}

// layerFileName is the name stereoscope gives the uncompressed layer at
// index i with diff ID diffID in its layer directory (it reads a layer
// already there instead of fetching it).
func layerFileName(i int, diffID string) string { return fmt.Sprintf("%d-%s", i, diffID) }

// Uncompressed is l's uncompressed content. A layer whose media type says
// it is not gzip is go-containerregistry's Uncompressed; any other whose
// compressed content begins with gzip's magic is decompressed with
// klauspost/compress's gzip, which takes about a fifth less CPU than the
// standard library's that go-containerregistry uses (BenchmarkGunzip);
// any other layer is go-containerregistry's Uncompressed. Reading it to
// its end reads the compressed content to its end, which checks it
// against l's digest (go-containerregistry's remote layers do).
func Uncompressed(l v1.Layer) (io.ReadCloser, error) {
	if mt, err := l.MediaType(); err == nil && (mt == types.OCIUncompressedLayer || mt == types.OCILayerZStd || mt == types.DockerUncompressedLayer) {
		return l.Uncompressed()
	}
	c, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(c, 1<<20)
	if magic, err := br.Peek(2); err != nil || magic[0] != 0x1f || magic[1] != 0x8b {
		c.Close()
		return l.Uncompressed()
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &gunzipped{zr: zr, c: c}, nil
}

// gunzipped is a gzip stream read in multistream mode (klauspost's
// default, as the standard library's): it ends only where the compressed
// content ends (after each member it reads the next header, and bytes
// that are not one are an error), so a verifying reader under it sees all
// of it.
type gunzipped struct {
	zr *gzip.Reader
	c  io.Closer
}

func (g *gunzipped) Read(p []byte) (int, error) { return g.zr.Read(p) }

func (g *gunzipped) Close() error {
	zerr := g.zr.Close()
	if err := g.c.Close(); err != nil {
		return err
	}
	return zerr
}
