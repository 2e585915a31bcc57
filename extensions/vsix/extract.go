package vsix

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/imagectl/imagectl/internal/ctxio"
)

// InstalledManifestName is where code-server keeps a copy of
// extension.vsixmanifest inside an installed extension's folder.
const InstalledManifestName = ".vsixmanifest"

// Extract writes the extension/ folder of the VSIX in r into dest, as
// code-server does on --install-extension: the contents of extension/ at the
// top, plus extension.vsixmanifest saved as .vsixmanifest. dest must not exist
// yet. Every file and directory gets mtime (so a layout is reproducible),
// mode 0644 (0755 when the zip entry was executable) and 0755 for directories.
// Archive safety is checked again (names, links, limits) and writes go
// through an os.Root, so nothing can land outside dest.
//
// When Extract fails after creating dest, it removes dest and the parent
// directories it created (those only if still empty), so that a retry starts
// from the same state; a directory that existed before is never touched.
// That includes a cancellation: every read goes through ctx, so Extract
// stops within one buffer (32 KiB) of ctx being done and cleans up.
func Extract(ctx context.Context, r io.ReaderAt, size int64, dest string, lim Limits, mtime time.Time) (err error) {
	lim = lim.withDefaults()
	zr, err := open(ctx, r, size, lim)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("extracting into %s: already exists", dest)
	}
	created, err := mkdirExclusive(dest)
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			return
		}
		// dest was made by this call (O_EXCL-like Mkdir), so everything in
		// it is ours. Parents go only if empty: another process may have
		// started using them meanwhile.
		if rerr := os.RemoveAll(dest); rerr != nil {
			err = fmt.Errorf("%w (and removing the partial %s: %v)", err, dest, rerr)
			return
		}
		for _, d := range created {
			if os.Remove(d) != nil {
				break
			}
		}
	}()
	return extractInto(ctx, zr, size, dest, lim, mtime)
}

// mkdirExclusive creates dest, failing if it exists, after creating its
// missing parents. It returns the parents it found missing, deepest first.
func mkdirExclusive(dest string) ([]string, error) {
	parent := filepath.Dir(dest)
	var missing []string
	for d := parent; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dest, 0o755); err != nil {
		for _, d := range missing {
			if os.Remove(d) != nil {
				break
			}
		}
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("extracting into %s: already exists", dest)
		}
		return nil, err
	}
	return missing, nil
}

func extractInto(ctx context.Context, zr *zip.Reader, size int64, dest string, lim Limits, mtime time.Time) error {
	root, err := os.OpenRoot(dest)
	if err != nil {
		return err
	}
	defer root.Close()

	remaining := lim.MaxTotalBytes
	var total uint64
	var written []string
	dirs := map[string]bool{".": true}
	mkdirs := func(dir string) error {
		if dirs[dir] {
			return nil
		}
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for d := dir; d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
		return nil
	}
	for _, f := range zr.File {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		var rel string
		switch {
		case f.Name == ManifestPath:
			rel = InstalledManifestName
		case strings.HasPrefix(f.Name, ExtensionDir):
			rel = strings.TrimSuffix(strings.TrimPrefix(f.Name, ExtensionDir), "/")
		default:
			continue // [Content_Types].xml, signatures, ...
		}
		if rel == "" {
			continue
		}
		if f.FileInfo().IsDir() {
			if err := mkdirs(rel); err != nil {
				return err
			}
			continue
		}
		if err := mkdirs(path.Dir(rel)); err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if f.Mode()&0o111 != 0 {
			mode = 0o755
		}
		n, err := extractOne(ctx, root, f, rel, mode, remaining)
		if err != nil {
			return err
		}
		remaining -= n
		total += uint64(n)
		written = append(written, rel)
		if err := lim.checkTotal(total, size, f.Name); err != nil {
			return err
		}
	}
	if err := fixTimes(root, written, dirs, mtime); err != nil {
		return err
	}
	if err := os.Chmod(dest, 0o755); err != nil {
		return err
	}
	return os.Chtimes(dest, mtime, mtime)
}

// fixTimes gives the written files and the directories fixed times,
// children before parents (directories last, deepest first), and the
// directories mode 0755.
func fixTimes(root *os.Root, written []string, dirs map[string]bool, mtime time.Time) error {
	for _, p := range written {
		if err := root.Chtimes(p, mtime, mtime); err != nil {
			return err
		}
	}
	ds := make([]string, 0, len(dirs))
	for d := range dirs {
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool {
		return strings.Count(ds[i], "/") > strings.Count(ds[j], "/") || (strings.Count(ds[i], "/") == strings.Count(ds[j], "/") && ds[i] > ds[j])
	})
	for _, d := range ds {
		if d == "." {
			continue
		}
		if err := root.Chmod(d, 0o755); err != nil { // umask-proof, as for files
			return err
		}
		if err := root.Chtimes(d, mtime, mtime); err != nil {
			return err
		}
	}
	return nil
}

func extractOne(ctx context.Context, root *os.Root, f *zip.File, rel string, mode fs.FileMode, remaining int64) (int64, error) {
	rc, err := f.Open()
	if err != nil {
		return 0, fmt.Errorf("entry %q: %w", f.Name, err)
	}
	defer rc.Close()
	out, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return 0, fmt.Errorf("entry %q: %w", f.Name, err)
	}
	limit := int64(f.UncompressedSize64)
	if limit > remaining {
		limit = remaining
	}
	n, err := ctxio.Copy(ctx, out, io.LimitReader(rc, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if ctx.Err() != nil {
			return n, context.Cause(ctx)
		}
		return n, fmt.Errorf("entry %q: %w", f.Name, err)
	}
	if n > limit {
		return n, fmt.Errorf("entry %q: more data than declared or than the size limit: %w", f.Name, errors.New("archive bomb"))
	}
	if err := root.Chmod(rel, mode); err != nil { // umask-proof
		return n, err
	}
	return n, nil
}
