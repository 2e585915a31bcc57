package scan

import (
	"io"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/imagectl/imagectl/sbom"
)

// fetchCounter is an image whose layers record when their content is
// read: the layers Scan never read came from Options.LayerDir.
type fetchCounter struct {
	v1.Image
	mu   sync.Mutex
	read map[v1.Hash]bool // by diff ID
}

func (c *fetchCounter) wrap(l v1.Layer) v1.Layer { return countedLayer{Layer: l, c: c} }

func (c *fetchCounter) Layers() ([]v1.Layer, error) {
	ls, err := c.Image.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]v1.Layer, len(ls))
	for i, l := range ls {
		out[i] = c.wrap(l)
	}
	return out, nil
}

func (c *fetchCounter) LayerByDigest(h v1.Hash) (v1.Layer, error) {
	l, err := c.Image.LayerByDigest(h)
	if err != nil {
		return nil, err
	}
	return c.wrap(l), nil
}

func (c *fetchCounter) LayerByDiffID(h v1.Hash) (v1.Layer, error) {
	l, err := c.Image.LayerByDiffID(h)
	if err != nil {
		return nil, err
	}
	return c.wrap(l), nil
}

// unread counts the image's layers whose content was not read.
func (c *fetchCounter) unread() (int, error) {
	cf, err := c.Image.ConfigFile()
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, d := range cf.RootFS.DiffIDs {
		if !c.read[d] {
			n++
		}
	}
	return n, nil
}

type countedLayer struct {
	v1.Layer
	c *fetchCounter
}

func (l countedLayer) mark() {
	d, err := l.Layer.DiffID()
	if err != nil {
		return
	}
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	if l.c.read == nil {
		l.c.read = map[v1.Hash]bool{}
	}
	l.c.read[d] = true
}

func (l countedLayer) Compressed() (io.ReadCloser, error) {
	l.mark()
	return l.Layer.Compressed()
}

func (l countedLayer) Uncompressed() (io.ReadCloser, error) {
	l.mark()
	return sbom.Uncompressed(l.Layer)
}
