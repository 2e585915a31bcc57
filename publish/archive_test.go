package publish

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// interruptedWhileWriting is a context that reports itself cancelled from
// the moment a temporary archive (.imagectl-oci-*.tar) exists in dir: a
// Ctrl-C that arrives while the archive is being written.
type interruptedWhileWriting struct {
	context.Context
	dir  string
	seen bool
}

func (c *interruptedWhileWriting) Err() error {
	if !c.seen {
		m, _ := filepath.Glob(filepath.Join(c.dir, ".imagectl-oci-*.tar"))
		c.seen = len(m) > 0
	}
	if c.seen {
		return context.Canceled
	}
	return nil
}

// TestArchivePublishInterrupted: an interrupt while the archive is written
// stops the write, leaves no destination and removes the temporary file.
func TestArchivePublishInterrupted(t *testing.T) {
	dir := t.TempDir()
	exports := []Export{
		{Platform: "linux/amd64", Archive: ociPart(t, dir, "linux/amd64", true)},
		{Platform: "linux/arm64/v8", Archive: ociPart(t, dir, "linux/arm64/v8", true)},
	}
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(out, "image.tar")
	ctx := &interruptedWhileWriting{Context: context.Background(), dir: out}
	_, err := NewArchive(dst, "registry.example/img", "1.0").Publish(ctx, exports)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Publish = %v, want %v", err, context.Canceled)
	}
	if !ctx.seen {
		t.Error("the context was not consulted while the temporary archive existed")
	}
	if entries, err := os.ReadDir(out); err != nil || len(entries) != 0 {
		t.Errorf("%s holds %v (%v), want nothing", out, entries, err)
	}
}
