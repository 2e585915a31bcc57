package safefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/internal/safefile"
	"github.com/imagectl/imagectl/internal/testutil"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	exact := filepath.Join(dir, "exact")
	if err := os.WriteFile(exact, []byte("12345678"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		opts    []safefile.Option
		want    string
		wantErr string
	}{
		{name: "regular", path: small, want: "hello"},
		{name: "exactly the limit", path: exact, want: "12345678"},
		{name: "symlink followed by default", path: link, want: "hello"},
		{name: "symlink refused with NoFollow", path: link, opts: []safefile.Option{safefile.NoFollow()}, wantErr: link + ": not a regular file (a symbolic link)"},
		{name: "directory", path: dir, wantErr: dir + ": not a regular file (a directory)"},
		{name: "character device", path: "/dev/zero", wantErr: "/dev/zero: not a regular file (a character device)"},
		{name: "missing", path: filepath.Join(dir, "nope"), wantErr: "no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := safefile.ReadFile(tc.path, 8, tc.opts...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ReadFile(%s) = %q, %v; want error containing %q", tc.path, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadFile(%s): %v", tc.path, err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("ReadFile(%s) (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}

// A sparse file of 4 GiB is rejected by its size, before anything is read:
// the call must return at once and allocate nothing like its size.
func TestReadFileSparseTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sparse")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil {
		testutil.SkipOrFail(t, "cannot create a sparse file here: %v", err)
	}
	f.Close()
	_, err = safefile.ReadFile(p, 1<<20)
	var tl *safefile.TooLargeError
	if !errors.As(err, &tl) || tl.Path != p || tl.Limit != 1<<20 {
		t.Fatalf("ReadFile(4 GiB sparse file) error = %v, want a TooLargeError naming %s and 1 MiB", err, p)
	}
	if want := p + ": larger than the limit of 1 MiB"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

// A FIFO with no writer must neither block the open nor the read: it is
// refused as not a regular file.
func TestReadFileFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		testutil.SkipOrFail(t, "mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := safefile.ReadFile(p, 1<<20)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, safefile.ErrNotRegular) || !strings.Contains(err.Error(), p+": not a regular file (a FIFO)") {
			t.Fatalf("ReadFile(FIFO) error = %v, want one naming the FIFO", err)
		}
	case <-time.After(5 * time.Second):
		// Unblock the open so the goroutine ends, then fail.
		if w, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatal("ReadFile(FIFO) blocked")
	}
}

// A file that grows past the limit while it is read is cut at limit+1 bytes.
func TestReadAllGrowing(t *testing.T) {
	r := strings.NewReader(strings.Repeat("x", 100))
	_, err := safefile.ReadAll(r, "stream", 99)
	var tl *safefile.TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("ReadAll(100 bytes, limit 99) error = %v, want TooLargeError", err)
	}
	b, err := safefile.ReadAll(strings.NewReader("abc"), "stream", 3)
	if err != nil || string(b) != "abc" {
		t.Fatalf("ReadAll(3 bytes, limit 3) = %q, %v", b, err)
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{1 << 20: "1 MiB", 64 << 10: "64 KiB", 32 << 30: "32 GiB", 1500: "1500 bytes", 0: "0 bytes"} {
		if got := safefile.FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
