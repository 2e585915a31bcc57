package sbom

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// lyingLayer claims another diff ID than its content's.
type lyingLayer struct{ v1.Layer }

func (l lyingLayer) DiffID() (v1.Hash, error) {
	return v1.NewHash("sha256:" + strings.Repeat("ab", 32))
}

func TestPrefetchRefusesContentThatIsNotTheDiffID(t *testing.T) {
	layers, err := testImage(t).Layers()
	if err != nil {
		t.Fatal(err)
	}
	base, err := mutate.AppendLayers(empty.Image, lyingLayer{layers[0]})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	err = Prefetch(context.Background(), base, dir)
	if err == nil || !strings.Contains(err.Error(), "not its diff ID") {
		t.Fatalf("Prefetch of a layer whose content is not its diff ID = %v, want an error saying so", err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 0 {
		t.Errorf("Prefetch left %d files in the layer directory, want none: %v", len(left), left)
	}
}

func TestPrefetchHonoursCancellation(t *testing.T) {
	layers, err := testImage(t).Layers()
	if err != nil {
		t.Fatal(err)
	}
	base, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	if err := Prefetch(ctx, base, dir); err == nil {
		t.Fatal("Prefetch with a cancelled context succeeded")
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 0 {
		t.Errorf("a cancelled Prefetch left %d files, want none", len(left))
	}
}

// testImage is a small image of two layers, each a tar of a few files.
func testImage(t testing.TB) v1.Image {
	t.Helper()
	return testImageOf(t,
		map[string]string{"etc/os-release": "ID=debian\n", "var/lib/dpkg/status": "Package: libc6\n"},
		map[string]string{"opt/app/a.txt": strings.Repeat("a", 1<<16), "opt/app/b.txt": "b"})
}

// testImageOf is an image of one layer per map of files (path -> content).
func testImageOf(t testing.TB, layerFiles ...map[string]string) v1.Image {
	t.Helper()
	var layers []v1.Layer
	for i, files := range layerFiles {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, n := range slices.Sorted(maps.Keys(files)) {
			if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[n]))}); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write([]byte(files[n])); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
		if err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestUncompressed: uncompressed gives go-containerregistry's Uncompressed
// content for a gzip layer (klauspost's gzip), an uncompressed one and a
// zstd one (go-containerregistry's), one whose content is not the gzip its
// media type says (go-containerregistry's, after peeking), and a gzip layer that
// is cut short or whose compressed content is not its digest fails.
func TestUncompressed(t *testing.T) {
	content := bytes.Repeat([]byte("a line of a layer's tar, more or less\n"), 1<<15)
	gz, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(content)), nil })
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := gz.MediaType(); mt != types.DockerLayer {
		t.Fatalf("a tarball layer is %s, want gzip", mt)
	}
	plain := static.NewLayer(content, types.OCIUncompressedLayer)
	zst, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(content)), nil }, tarball.WithCompression("zstd"))
	if err != nil {
		t.Fatal(err)
	}
	mislabelled := static.NewLayer(content, types.DockerLayer) // a gzip media type, plain content
	for name, l := range map[string]v1.Layer{"gzip": gz, "uncompressed": plain, "zstd": zst, "gzip media type, plain content": mislabelled} {
		want := readAll(t, l.Uncompressed)
		got := readAll(t, func() (io.ReadCloser, error) { return Uncompressed(l) })
		if !bytes.Equal(got, want) {
			t.Errorf("%s: uncompressed gave %d bytes, not go-containerregistry's %d", name, len(got), len(want))
		}
	}

	// A remote layer whose registry serves other bytes than its digest:
	// go-containerregistry's verifying reader fails the read, through
	// uncompressed's.
	compressed := readAll(t, gz.Compressed)
	var other bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&other, gzip.BestCompression)
	zw.Write(readAll(t, gz.Uncompressed))
	zw.Close()
	if bytes.Equal(other.Bytes(), compressed) {
		t.Fatal("the other gzip of the layer is the same bytes")
	}
	for name, served := range map[string][]byte{
		"cut short":                        compressed[:len(compressed)/2],
		"another gzip of the same content": other.Bytes(),
		"a corrupted stream":               splice(compressed, len(compressed)/2, "\xff\xff\xff\xff"),
	} {
		t.Run(name, func(t *testing.T) {
			l := servedLayer(t, gz, served)
			rc, err := Uncompressed(l)
			if err == nil {
				_, err = io.Copy(io.Discard, rc)
				rc.Close()
			}
			if err == nil {
				t.Error("read without an error")
			}
		})
	}
	if got := readAll(t, func() (io.ReadCloser, error) { return Uncompressed(servedLayer(t, gz, compressed)) }); !bytes.Equal(got, readAll(t, gz.Uncompressed)) {
		t.Error("a remote layer served as pushed: not its content")
	}
}

// servedLayer pushes l to an in-process registry that answers the pull of
// its blob with served, and returns it as a remote layer.
func servedLayer(t *testing.T, l v1.Layer, served []byte) v1.Layer {
	t.Helper()
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+d.String()) {
			w.Write(served)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	repo, err := name.NewRepository(strings.TrimPrefix(srv.URL, "http://") + "/layer")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteLayer(repo, l); err != nil {
		t.Fatal(err)
	}
	rl, err := remote.Layer(repo.Digest(d.String()))
	if err != nil {
		t.Fatal(err)
	}
	return rl
}

func readAll(t *testing.T, open func() (io.ReadCloser, error)) []byte {
	t.Helper()
	rc, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkGunzip decompresses 64 MiB of text-like content, gzip'd at the
// default level (as BuildKit compresses layers), with the standard
// library's gzip (go-containerregistry's Uncompressed) and with
// uncompressed (klauspost/compress).
func BenchmarkGunzip(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	words := strings.Fields("the layer of a base image holds files libraries binaries and text of many kinds usr lib share doc")
	var raw bytes.Buffer
	for raw.Len() < 64<<20 {
		raw.WriteString(words[r.IntN(len(words))])
		raw.WriteByte(" \n/"[r.IntN(3)])
	}
	var zbuf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&zbuf, gzip.DefaultCompression)
	if err != nil {
		b.Fatal(err)
	}
	zw.Write(raw.Bytes())
	zw.Close()
	compressed := zbuf.Bytes()
	// A tarball layer of gzip'd bytes keeps them as its compressed content
	// and decompresses them with go-containerregistry's gzip.
	src, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(compressed)), nil })
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d MiB, %d MiB compressed", raw.Len()>>20, len(compressed)>>20)
	for _, c := range []struct {
		name string
		open func() (io.ReadCloser, error)
	}{{"go-containerregistry", src.Uncompressed}, {"klauspost", func() (io.ReadCloser, error) { return Uncompressed(src) }}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(raw.Len()))
			for b.Loop() {
				rc, err := c.open()
				if err != nil {
					b.Fatal(err)
				}
				if n, err := io.Copy(io.Discard, rc); err != nil || n != int64(raw.Len()) {
					b.Fatalf("%d bytes, %v", n, err)
				}
				rc.Close()
			}
		})
	}
}

// splice returns b with s written at off.
func splice(b []byte, off int, s string) []byte {
	b = bytes.Clone(b)
	copy(b[off:], s)
	return b
}
