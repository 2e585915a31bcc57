package ctxio_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/imagectl/imagectl/internal/ctxio"
)

// cancelAfter cancels its context once n bytes were read through it.
type cancelAfter struct {
	r      io.Reader
	n      int64
	read   int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	if c.read >= c.n {
		c.cancel()
	}
	return n, err
}

func TestCopyStopsPromptly(t *testing.T) {
	const size, stopAt = 64 << 20, 1 << 20
	f, err := os.Create(filepath.Join(t.TempDir(), "big"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil { // sparse: cheap to make, slow to read
		t.Fatal(err)
	}
	for _, dst := range []struct {
		name string
		w    func() io.Writer
	}{
		{"buffer", func() io.Writer { return new(bytes.Buffer) }},
		{"file", func() io.Writer { // *os.File has ReadFrom: must not bypass the check
			out, err := os.Create(filepath.Join(t.TempDir(), "out"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { out.Close() })
			return out
		}},
	} {
		t.Run(dst.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			src := &cancelAfter{r: io.NewSectionReader(f, 0, size), n: stopAt, cancel: cancel}
			n, err := ctxio.Copy(ctx, dst.w(), src)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if src.read > stopAt+64<<10 || n > stopAt+64<<10 {
				t.Errorf("read %d and copied %d bytes after a cancel at %d: the copy did not stop promptly", src.read, n, stopAt)
			}
		})
	}
}

func TestReaderAt(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	r := ctxio.ReaderAt(ctx, bytes.NewReader([]byte("hello")))
	b := make([]byte, 5)
	if n, err := r.ReadAt(b, 0); n != 5 || err != nil {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	cause := errors.New("stop")
	cancel(cause)
	if _, err := r.ReadAt(b, 0); !errors.Is(err, cause) {
		t.Fatalf("after cancel: %v, want the cause", err)
	}
}
