package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"golang.org/x/sys/unix"
)

// Limits bound what unpacking an image may write.
type Limits struct {
	// MaxBytes bounds the bytes of all regular files.
	MaxBytes int64
	// MaxEntries bounds the number of filesystem entries.
	MaxEntries int
}

// DefaultLimits fit the real image (about 2 GB unpacked) with room to spare.
var DefaultLimits = Limits{MaxBytes: 16 << 30, MaxEntries: 2_000_000}

// unpack writes the flattened filesystem of img (whiteouts and opaque
// directories applied by go-containerregistry's mutate.Extract) under root,
// which must exist and be empty. No entry can write outside root: names
// with ".." are refused, and every parent directory is resolved with
// symbolic links scoped to root (filepath-securejoin), so a link in the
// image pointing at "/" or "../.." stays inside. Owners, modes and times
// are kept; device nodes are skipped (the runtime provides /dev).
//
// Cancelling ctx stops it within one read of at most copyChunk bytes, in
// the middle of a file too: the stream is closed, so a read waiting on a
// layer ends as well. What was written stays for the caller to remove.
func unpack(ctx context.Context, img v1.Image, root string, lim Limits) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	stop := context.AfterFunc(ctx, func() { rc.Close() })
	defer stop()
	tr := tar.NewReader(rc)
	u := &unpacker{ctx: ctx, root: root, lim: lim, implicit: map[string]bool{}}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			// mutate.Extract closes its tar stream (end-of-archive marker)
			// before it reports an error (an unsafe name, a layer whose
			// digest does not match) on the pipe: read on to get it.
			if _, err := io.Copy(io.Discard, rc); err != nil {
				return u.readErr(err)
			}
			break
		}
		if err != nil {
			return u.readErr(err)
		}
		if err := u.entry(h, tr); err != nil {
			return err
		}
	}
	// Hard links last: with mutate.Extract's top-down layer order a link can
	// come before the file it names.
	for _, h := range u.links {
		if err := u.hardlink(h); err != nil {
			return err
		}
	}
	return nil
}

type unpacker struct {
	ctx      context.Context
	root     string
	lim      Limits
	bytes    int64
	entries  int
	links    []*tar.Header
	implicit map[string]bool // directories created as parents, not yet seen as entries
}

// cleanName turns a tar entry name into a clean relative path; names that
// climb out are refused.
func cleanName(n string) (string, error) {
	if n == "" || strings.ContainsRune(n, 0) {
		return "", fmt.Errorf("bad entry name %q", n)
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", fmt.Errorf("entry %q climbs out of the root filesystem", n)
		}
	}
	c := strings.TrimPrefix(path.Clean("/"+n), "/")
	return c, nil
}

// target resolves the parent of rel inside root (creating it) and returns
// the host path of rel itself, not following a final symbolic link.
func (u *unpacker) target(rel string) (string, error) {
	parent, err := securejoin.SecureJoin(u.root, path.Dir(rel))
	if err != nil {
		return "", fmt.Errorf("%s: resolving parent: %w", rel, err)
	}
	if err := u.mkdirs(parent); err != nil {
		return "", fmt.Errorf("%s: %w", rel, err)
	}
	t := filepath.Join(parent, path.Base(rel))
	if r, err := filepath.Rel(u.root, t); err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return "", fmt.Errorf("entry %q resolves outside the root filesystem", rel)
	}
	return t, nil
}

// mkdirs creates dir and its missing parents (all inside root, already
// resolved), remembering them as implicit so a later entry sets their owner
// and mode.
func (u *unpacker) mkdirs(dir string) error {
	if fi, err := os.Lstat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if dir == u.root {
		return nil
	}
	if err := u.mkdirs(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	u.implicit[dir] = true
	return nil
}

func (u *unpacker) entry(h *tar.Header, r io.Reader) error {
	rel, err := cleanName(h.Name)
	if err != nil {
		return err
	}
	if rel == "" {
		return nil // the root itself
	}
	if strings.HasPrefix(path.Base(rel), ".wh.") {
		return nil // whiteouts are applied by mutate.Extract; never written
	}
	if u.entries++; u.lim.MaxEntries > 0 && u.entries > u.lim.MaxEntries {
		return fmt.Errorf("image filesystem has more than %d entries", u.lim.MaxEntries)
	}
	t, err := u.target(rel)
	if err != nil {
		return err
	}
	existing, statErr := os.Lstat(t)
	if statErr == nil && existing.IsDir() && h.Typeflag != tar.TypeDir {
		// A directory an upper layer filled hides a lower layer's
		// non-directory of the same name, as in an overlay.
		return nil
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if statErr != nil {
			if err := os.Mkdir(t, 0o755); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
		} else if !u.implicit[t] {
			return nil // seen already
		}
		delete(u.implicit, t)
		return u.meta(t, rel, h, false)
	case tar.TypeReg:
		if u.bytes += h.Size; u.lim.MaxBytes > 0 && u.bytes > u.lim.MaxBytes {
			return fmt.Errorf("image filesystem larger than %d bytes", u.lim.MaxBytes)
		}
		if statErr == nil {
			return nil // an upper layer's entry of that name was written
		}
		f, err := os.OpenFile(t, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if err := u.copyFile(f, r, h.Size); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", rel, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		return u.meta(t, rel, h, false)
	case tar.TypeSymlink:
		if statErr == nil {
			return nil
		}
		if err := os.Symlink(h.Linkname, t); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		return u.meta(t, rel, h, true)
	case tar.TypeLink:
		u.links = append(u.links, h)
		return nil
	case tar.TypeFifo:
		if statErr == nil {
			return nil
		}
		if err := unix.Mkfifo(t, uint32(h.Mode&0o777)); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		return u.meta(t, rel, h, false)
	case tar.TypeChar, tar.TypeBlock:
		return nil
	default:
		return nil // PAX/GNU metadata entries are consumed by archive/tar
	}
}

// readErr wraps an error reading the image's filesystem stream; after a
// cancel (which closes the stream) it is the context's error.
func (u *unpacker) readErr(err error) error {
	if cerr := u.ctx.Err(); cerr != nil {
		return cerr
	}
	return fmt.Errorf("reading image filesystem: %w", err)
}

// copyChunk is how much copyFile reads between two looks at the context.
const copyChunk = 256 << 10

var zeroChunk [copyChunk]byte

// copyFile writes size bytes of r to f, a new empty file, a chunk at a
// time, and stops when the context is cancelled. A chunk of zero bytes is
// skipped over rather than written, so a sparse file in a layer (a few KiB
// standing for gigabytes of zeros) stays sparse on disk; the final size is
// set at the end.
func (u *unpacker) copyFile(f *os.File, r io.Reader, size int64) error {
	buf := make([]byte, copyChunk)
	for left := size; left > 0; {
		if err := u.ctx.Err(); err != nil {
			return err
		}
		n := int(min(left, copyChunk))
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			if cerr := u.ctx.Err(); cerr != nil {
				return cerr
			}
			return err
		}
		if bytes.Equal(buf[:n], zeroChunk[:n]) {
			if _, err := f.Seek(int64(n), io.SeekCurrent); err != nil {
				return err
			}
		} else if _, err := f.Write(buf[:n]); err != nil {
			return err
		}
		left -= int64(n)
	}
	return f.Truncate(size)
}

// meta applies owner, mode and modification time.
func (u *unpacker) meta(t, rel string, h *tar.Header, link bool) error {
	if err := os.Lchown(t, h.Uid, h.Gid); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	if link {
		return nil
	}
	// After chown, which clears set-id bits.
	mode := os.FileMode(h.Mode & 0o777)
	if h.Mode&0o4000 != 0 {
		mode |= os.ModeSetuid
	}
	if h.Mode&0o2000 != 0 {
		mode |= os.ModeSetgid
	}
	if h.Mode&0o1000 != 0 {
		mode |= os.ModeSticky
	}
	if err := os.Chmod(t, mode); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	if h.Typeflag != tar.TypeDir && !h.ModTime.IsZero() {
		if err := os.Chtimes(t, h.ModTime, h.ModTime); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
	}
	return nil
}

func (u *unpacker) hardlink(h *tar.Header) error {
	rel, err := cleanName(h.Name)
	if err != nil {
		return err
	}
	lrel, err := cleanName(h.Linkname)
	if err != nil {
		return fmt.Errorf("hard link %s: %w", rel, err)
	}
	src, err := securejoin.SecureJoin(u.root, lrel)
	if err != nil {
		return fmt.Errorf("hard link %s -> %s: %w", rel, lrel, err)
	}
	fi, err := os.Lstat(src)
	if err != nil {
		return fmt.Errorf("hard link %s -> %s: the target is not in the image: %w", rel, lrel, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("hard link %s -> %s: the target is not a regular file", rel, lrel)
	}
	t, err := u.target(rel)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(t); err == nil {
		return nil // an upper layer's entry of that name was written
	}
	if err := os.Link(src, t); err != nil {
		return fmt.Errorf("hard link %s -> %s: %w", rel, lrel, err)
	}
	return nil
}
