package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// tarBlock is one 512-byte ustar header.
func tarBlock(t *testing.T, name string, typ byte, size int64) []byte {
	t.Helper()
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:108], "0000644\x00")
	copy(b[108:116], "0000000\x00")
	copy(b[116:124], "0000000\x00")
	copy(b[124:136], fmt.Sprintf("%011o\x00", size))
	copy(b[136:148], fmt.Sprintf("%011o\x00", 1748736000))
	copy(b[148:156], "        ")
	b[156] = typ
	copy(b[257:263], "ustar\x00")
	copy(b[263:265], "00")
	var sum int64
	for _, c := range b {
		sum += int64(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

func pad512(b []byte) []byte {
	if r := len(b) % 512; r != 0 {
		b = append(b, make([]byte, 512-r)...)
	}
	return b
}

// sparseLayer is a layer of a few KiB holding one GNU sparse file (PAX
// format 0.1) of size bytes: all holes but for its last byte. Its tar
// stream, once mutate.Extract has flattened it, carries size bytes.
func sparseLayer(t *testing.T, name string, size int64) v1.Layer {
	t.Helper()
	var recs strings.Builder
	for _, kv := range [][2]string{
		{"GNU.sparse.size", fmt.Sprint(size)},
		{"GNU.sparse.numblocks", "1"},
		{"GNU.sparse.map", fmt.Sprintf("%d,1", size-1)},
	} {
		body := " " + kv[0] + "=" + kv[1] + "\n"
		n := len(body) + 1 // the record's length counts its own digits
		for len(body)+len(fmt.Sprint(n)) != n {
			n = len(body) + len(fmt.Sprint(n))
		}
		fmt.Fprintf(&recs, "%d%s", n, body)
	}
	var tb []byte
	tb = append(tb, tarBlock(t, "PaxHeaders/"+name, 'x', int64(recs.Len()))...)
	tb = append(tb, pad512([]byte(recs.String()))...)
	tb = append(tb, tarBlock(t, name, '0', 1)...)
	tb = append(tb, pad512([]byte("x"))...)
	tb = append(tb, make([]byte, 1024)...)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(tb)), nil })
	if err != nil {
		t.Fatal(err)
	}
	if c, err := l.Size(); err != nil || c > 10<<10 {
		t.Fatalf("the sparse layer is %d bytes (%v), want at most 10 KiB", c, err)
	}
	return l
}

// The sparse layer really flattens to a file of that size with the last
// byte set: else the cancel tests below prove nothing.
func TestSparseLayerFixture(t *testing.T) {
	root := t.TempDir()
	const size = 3<<20 + 17
	if err := unpack(context.Background(), imageOf(t, sparseLayer(t, "big", size)), root, DefaultLimits); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != size || b[size-1] != 'x' || bytes.Count(b[:size-1], []byte{0}) != size-1 {
		t.Fatalf("unpacked %d bytes ending in %q, want %d zero bytes then x", len(b), b[len(b)-1:], size-1)
	}
	// Its holes stay holes on disk.
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(root, "big"), &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > size/2 {
		t.Errorf("the sparse file takes %d bytes on disk, want far fewer than its %d", used, size)
	}
}

// A file's runs of zero bytes (anywhere, at the end too) come out as they
// went in.
func TestUnpackKeepsZeroRuns(t *testing.T) {
	z := func(n int) string { return string(make([]byte, n)) }
	files := map[string]string{
		"zeros-then-data": z(3<<20+5) + "abc",
		"data-then-zeros": "abc" + z(2<<20+7),
		"mixed":           "a" + z(100<<10) + "b" + z(1<<20) + "c" + z(70<<10),
		"only-zeros":      z(1<<20 + 1),
		"empty":           "",
	}
	var es []entry
	for n, b := range files {
		es = append(es, entry{name: n, body: b, typ: '0'})
	}
	root := t.TempDir()
	if err := unpack(context.Background(), imageOf(t, layerOf(t, es...)), root, DefaultLimits); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files, tree(t, root)); diff != "" {
		t.Errorf("unpacked files differ (-want +got):\n%s", diff)
	}
}

// Cancelling the context stops unpacking within a file: a 10 GiB sparse
// file in a layer of a few KiB (issue 35 item 3; io.CopyN took 16-23 s to
// notice).
func TestUnpackCancelInsideLargeFile(t *testing.T) {
	root := t.TempDir()
	img := imageOf(t, sparseLayer(t, "big", 10<<30))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- unpack(ctx, img, root, DefaultLimits) }()
	time.Sleep(300 * time.Millisecond)
	cancel()
	cancelled := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("unpack = %v, want context.Canceled", err)
		}
		if d := time.Since(cancelled); d > 3*time.Second {
			t.Errorf("unpack returned %v after the cancel, want within 3s", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("unpack still running 5s after its context was cancelled")
	}
}

// A smoke cancelled while unpacking returns at once and leaves neither the
// half-written root filesystem nor the scripts directory behind. Runc
// unpacks before it runs anything, so a runc that is never run stands in.
func TestSmokeCancelledDuringUnpackCleansUp(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "runc")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"runc must not run: $*\" >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	img := imageOf(t, sparseLayer(t, "big", 10<<30))
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	src := &source{ref: "test/sparse", digest: d.String(), cleanup: func() {},
		platforms: []*Platform{{Platform: "linux/amd64", Digest: d, Image: img, Config: cf}}}
	o := newOptions([]Option{WithWorkDir(work), WithRuntime(NewRunc(WithRuncBinary(bin), WithRuncWorkDir(work)))})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := run(ctx, src, o)
		done <- result{rep, err}
	}()
	// Wait until the root filesystem is being written.
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, _ := filepath.Glob(filepath.Join(work, "imagectl-smoke-amd64-*", "rootfs", "big"))
		if len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("unpacking never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	cancelled := time.Now()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("run = %v, want context.Canceled", r.err)
		}
		if d := time.Since(cancelled); d > 3*time.Second {
			t.Errorf("run returned %v after the cancel, want within 3s", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("smoke still running 5s after its context was cancelled")
	}
	if left, _ := os.ReadDir(work); len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("left in the work directory: %v", names)
	}
}
