package scan

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/imagectl/imagectl/sbom"
)

// countingLayer counts the reads of its content.
type countingLayer struct {
	v1.Layer
	reads *atomic.Int32
}

func (l countingLayer) Uncompressed() (io.ReadCloser, error) {
	l.reads.Add(1)
	return l.Layer.Uncompressed()
}

func (l countingLayer) Compressed() (io.ReadCloser, error) {
	l.reads.Add(1)
	return l.Layer.Compressed()
}

// TestScanReadsPrefetchedBaseLayers: with the base's layers prefetched
// into LayerDir, Scan reads none of the image's base layers and writes the
// same document as a scan that reads them all.
func TestScanReadsPrefetchedBaseLayers(t *testing.T) {
	ctx := context.Background()
	plain := testImage(t)
	layers, err := plain.Layers()
	if err != nil {
		t.Fatal(err)
	}
	base, err := mutate.AppendLayers(empty.Image, layers[0])
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]atomic.Int32, len(layers))
	counted := make([]v1.Layer, len(layers))
	for i, l := range layers {
		counted[i] = countingLayer{Layer: l, reads: &counts[i]}
	}
	img, err := mutate.AppendLayers(empty.Image, counted...)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := plain.ConfigFile()
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	if d1, d2 := digestOf(t, img), digestOf(t, plain); d1 != d2 {
		t.Fatalf("the counting image is %s, not the test image %s", d1, d2)
	}

	dir := filepath.Join(t.TempDir(), "layers")
	if err := sbom.Prefetch(ctx, base, dir); err != nil {
		t.Fatal(err)
	}
	diffID, _ := layers[0].DiffID()
	if _, err := os.Stat(filepath.Join(dir, "0-"+diffID.String())); err != nil {
		t.Fatalf("prefetched layer: %v", err)
	}
	o := sbom.Options{Name: "registry.example/code-server-ray", Platform: "linux/arm64", Extensions: testExtensions()}
	want, err := Scan(ctx, plain, o)
	if err != nil {
		t.Fatal(err)
	}
	o.LayerDir = dir
	got, err := Scan(ctx, img, o)
	if err != nil {
		t.Fatal(err)
	}
	if got.LayersPrefetched != 1 || want.LayersPrefetched != 0 {
		t.Errorf("LayersPrefetched = %d (and %d without a layer directory), want 1 (and 0)", got.LayersPrefetched, want.LayersPrefetched)
	}
	if n := counts[0].Load(); n != 0 {
		t.Errorf("Scan read the prefetched base layer %d times, want 0", n)
	}
	for i := 1; i < len(counts); i++ {
		if counts[i].Load() == 0 {
			t.Errorf("Scan did not read layer %d, which was not prefetched", i)
		}
	}
	if !bytes.Equal(got.Document, want.Document) {
		t.Errorf("the document from prefetched layers differs from a full read's (%d and %d bytes)", len(got.Document), len(want.Document))
	}
	if got.Counts["deb"] == 0 {
		t.Errorf("no dpkg package found in the prefetched base layer: %v", got.Counts)
	}
}

func digestOf(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
