package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/internal/ctxio"
	"github.com/imagectl/imagectl/internal/safefile"
	"github.com/imagectl/imagectl/internal/safetext"
)

// EnvDir overrides the default cache directory.
const EnvDir = "IMAGECTL_CACHE_DIR"

// DefaultDir returns $IMAGECTL_CACHE_DIR, else <user cache dir>/imagectl/extensions.
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (set %s or --cache-dir): %w", EnvDir, err)
	}
	return filepath.Join(d, "imagectl", "extensions"), nil
}

// Key names one VSIX.
type Key struct {
	ID             string `json:"id"`
	Version        string `json:"version"`
	TargetPlatform string `json:"targetPlatform"`
}

func (k Key) String() string { return k.ID + "@" + k.Version + " (" + k.TargetPlatform + ")" }

var (
	idRE      = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*\.[a-z0-9][a-z0-9._-]*$`)
	versionRE = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]*$`)
	tpRE      = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	hexRE     = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Check reports whether every part of k is safe as a path element.
func (k Key) Check() error {
	if !idRE.MatchString(strings.ToLower(k.ID)) || strings.Contains(k.ID, "..") {
		return fmt.Errorf("cache key: bad extension id %q", k.ID)
	}
	if !versionRE.MatchString(k.Version) || strings.Contains(k.Version, "..") {
		return fmt.Errorf("cache key %s: bad version %q", k.ID, k.Version)
	}
	if !tpRE.MatchString(k.TargetPlatform) {
		return fmt.Errorf("cache key %s@%s: bad target platform %q", k.ID, k.Version, k.TargetPlatform)
	}
	return nil
}

// Entry is one cached VSIX.
type Entry struct {
	Key
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// URL is where it was downloaded from.
	URL string `json:"url,omitempty"`
	// Limits, when set, are the archive limits the file was accepted under,
	// larger than vsix.DefaultLimits in some respect (Fetcher records them
	// when they are). A reader whose own limits the file exceeds identifies
	// it under these instead, so every verb treats the file as fetch did.
	Limits *vsix.Limits `json:"limits,omitempty"`
	// Path is the blob's path (not stored in the index).
	Path string `json:"-"`
}

// DefaultMaxBlobBytes bounds a blob read from the cache: the download limit
// (vsix.DefaultMaxDownloadBytes), so nothing larger than a download can be
// hashed or read.
const DefaultMaxBlobBytes = vsix.DefaultMaxDownloadBytes

// maxIndexBytes bounds an index entry (a few hundred bytes of JSON).
const maxIndexBytes = 64 << 10

// StaleTempAge is how old a temporary file nobody holds must be before Open
// removes it: far longer than any download takes, so only what a killed
// process left behind goes.
const StaleTempAge = time.Hour

// IdentifyFunc returns the key the file in r (size bytes) describes itself
// as: for a VSIX, the Identity and TargetPlatform of its manifest.
type IdentifyFunc func(ctx context.Context, r io.ReaderAt, size int64) (Key, error)

// IdentifyVSIX reads extension.vsixmanifest (vsix.Identify).
func IdentifyVSIX(ctx context.Context, r io.ReaderAt, size int64) (Key, error) {
	info, err := vsix.Identify(ctx, r, size)
	if err != nil {
		return Key{}, err
	}
	return Key{ID: info.ID(), Version: info.Version, TargetPlatform: info.TargetPlatform}, nil
}

// IdentifyVSIXWithin is IdentifyVSIX with the archive limits lim (those the
// files were fetched under): a file accepted under raised limits is still a
// hit, not removed and fetched again.
func IdentifyVSIXWithin(lim vsix.Limits) IdentifyFunc {
	return func(ctx context.Context, r io.ReaderAt, size int64) (Key, error) {
		info, err := vsix.IdentifyWithin(ctx, r, size, lim)
		if err != nil {
			return Key{}, err
		}
		return Key{ID: info.ID(), Version: info.Version, TargetPlatform: info.TargetPlatform}, nil
	}
}

// Cache is a cache rooted at a directory.
type Cache struct {
	root     string
	identify IdentifyFunc
	maxBlob  int64
	warnings io.Writer
	// afterCorruptHash, when set (by tests), runs after a blob at the path
	// it is given was found corrupt and before it is removed.
	afterCorruptHash func(path string)

	// checked remembers the blobs this Cache hashed (and identified) and
	// found good, by digest: a build gets each file twice (the fetch, then
	// the validation before layout), and a file that is still the same
	// file, unchanged since (same inode, size, modification time and inode
	// change time, which every write, chmod or utimes moves and nothing
	// sets back), is not read again. Where the change time cannot be read,
	// nothing is remembered.
	mu      sync.Mutex
	checked map[string]checkedBlob
}

// checkedBlob is a blob checkBlob found good: the file it read and the key
// it identified (zero without an identify function).
type checkedBlob struct {
	fi    os.FileInfo
	ctime int64
	id    Key
}

// Option configures Open.
type Option func(*Cache)

// WithIdentify sets how a hit's file is identified (default IdentifyVSIX):
// a hit whose file does not describe itself as its key is not served. nil
// turns the check off, for a cache of files that are not VSIX (tests).
func WithIdentify(f IdentifyFunc) Option { return func(c *Cache) { c.identify = f } }

// WithMaxBlobBytes bounds the size of a blob read from the cache (default
// DefaultMaxBlobBytes); a larger file is treated as corrupt.
func WithMaxBlobBytes(n int64) Option { return func(c *Cache) { c.maxBlob = n } }

// WithWarnings receives a line for every entry the cache drops as damaged
// (a blob that is not a regular file or not its digest, an index entry whose
// file describes itself as another key) and every stale temporary file it
// removes (default: discarded).
func WithWarnings(w io.Writer) Option { return func(c *Cache) { c.warnings = w } }

// Open returns the cache at dir, creating its directories, and removes the
// temporary files older than StaleTempAge that no live writer holds (what a
// process killed mid-download left behind).
func Open(dir string, opts ...Option) (*Cache, error) {
	if dir == "" {
		return nil, errors.New("cache: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"blobs/sha256", "index"} {
		if err := os.MkdirAll(filepath.Join(abs, d), 0o755); err != nil {
			return nil, fmt.Errorf("cache %s: %w", abs, err)
		}
	}
	c := &Cache{root: abs, identify: IdentifyVSIX, maxBlob: DefaultMaxBlobBytes, warnings: io.Discard}
	for _, o := range opts {
		o(c)
	}
	if c.maxBlob <= 0 {
		c.maxBlob = DefaultMaxBlobBytes
	}
	if c.warnings == nil {
		c.warnings = io.Discard
	}
	// Best effort: a sweep that cannot read a directory must not stop a
	// fetch; the next Open tries again.
	_, _ = c.Sweep(StaleTempAge)
	return c, nil
}

func (c *Cache) warnf(format string, args ...any) {
	fmt.Fprintf(c.warnings, "warning: cache %s: "+format+"\n", append([]any{c.root}, args...)...)
}

// Dir returns the root directory.
func (c *Cache) Dir() string { return c.root }

// BlobPath returns where the blob with digest hex lives.
func (c *Cache) BlobPath(hex string) string { return filepath.Join(c.root, "blobs", "sha256", hex) }

func (c *Cache) indexPath(k Key) string {
	return filepath.Join(c.root, "index", strings.ToLower(k.ID), k.Version, k.TargetPlatform+".json")
}

// openRegular opens p for reading the one safe way for every file the cache
// reads (internal/safefile): without following a symbolic link at p
// (O_NOFOLLOW: a link to /dev/zero fails), without blocking (O_NONBLOCK:
// opening a FIFO returns at once), and only if it is a regular file of at
// most max bytes. The returned FileInfo is the open file's.
func openRegular(p string, max int64) (*os.File, fs.FileInfo, error) {
	f, err := safefile.Open(p, safefile.NoFollow())
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if fi.Size() > max {
		f.Close()
		return nil, nil, &safefile.TooLargeError{Path: p, Limit: max}
	}
	return f, fi, nil
}

// unusable reports an error of openRegular that makes the file worthless
// (not a regular file, or larger than anything the cache writes), rather
// than unreadable for a reason of the moment.
func unusable(err error) bool {
	var tl *safefile.TooLargeError
	return errors.Is(err, safefile.ErrNotRegular) || errors.As(err, &tl)
}

// hashOpen hashes the first size bytes of f through ctx and fails unless
// there are exactly size.
func hashOpen(ctx context.Context, f *os.File, size int64) (string, error) {
	h := sha256.New()
	n, err := ctxio.Copy(ctx, h, io.NewSectionReader(f, 0, size+1))
	if err != nil {
		return "", err
	}
	if n != size {
		return "", fmt.Errorf("%s: %d bytes read, the file said %d", f.Name(), n, size)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// HashFile returns the sha256 hex digest and size of the regular file at p
// (opened as every cache file is: no link followed, no FIFO waited on, at
// most DefaultMaxBlobBytes).
func HashFile(p string) (string, int64, error) {
	f, fi, err := openRegular(p, DefaultMaxBlobBytes)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	d, err := hashOpen(context.Background(), f, fi.Size())
	if err != nil {
		return "", 0, err
	}
	return d, fi.Size(), nil
}

// blobState is what checking a blob found.
type blobState int

const (
	blobMissing blobState = iota
	blobGood
	blobOtherKey // intact, but it describes itself as another key
	// blobOverLimits: intact, but over the archive limits it was checked
	// under (vsix.ErrLimit): never served, never removed.
	blobOverLimits
)

// checkBlob checks that the blob named digest is a regular file that still
// hashes to digest and, when k is given and an identify function is set,
// that it describes itself as *k; a file over the identify function's
// archive limits is identified again under rec, the limits its index entry
// records (when it does). A blob that is not a regular file, not its digest,
// or not a readable VSIX is removed (see discardCorrupt) and reported
// missing; one that is over the limits either way is kept and reported
// blobOverLimits, with the identification error.
func (c *Cache) checkBlob(ctx context.Context, digest string, k *Key, rec *vsix.Limits) (int64, blobState, Key, error) {
	p := c.BlobPath(digest)
	f, fi, err := openRegular(p, c.maxBlob)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, blobMissing, Key{}, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0, blobMissing, Key{}, context.Cause(ctx)
		}
		// A link, a FIFO, a device, a directory, or a file larger than
		// any download: never read it, drop it.
		held, lerr := os.Lstat(p)
		if lerr != nil {
			if errors.Is(lerr, fs.ErrNotExist) {
				return 0, blobMissing, Key{}, nil
			}
			return 0, blobMissing, Key{}, lerr
		}
		if !unusable(err) {
			return 0, blobMissing, Key{}, err
		}
		c.warnf("blob %s: %v; removing it", digest, err)
		return 0, blobMissing, Key{}, c.discardCorrupt(p, held)
	}
	defer f.Close()
	if id, ok := c.checkedBefore(digest, fi); ok {
		if k != nil && c.identify != nil && !sameKey(id, *k) {
			return fi.Size(), blobOtherKey, id, nil
		}
		return fi.Size(), blobGood, Key{}, nil
	}
	got, err := hashOpen(ctx, f, fi.Size())
	if err != nil {
		if ctx.Err() != nil {
			return 0, blobMissing, Key{}, context.Cause(ctx)
		}
		return 0, blobMissing, Key{}, fmt.Errorf("reading blob %s: %w", p, err)
	}
	if got != digest {
		if c.afterCorruptHash != nil {
			c.afterCorruptHash(p)
		}
		c.warnf("blob %s hashes to %s; removing it", digest, got)
		return 0, blobMissing, Key{}, c.discardCorrupt(p, fi)
	}
	var id Key
	if k != nil && c.identify != nil {
		var err error
		id, err = c.identify(ctx, f, fi.Size())
		if errors.Is(err, vsix.ErrLimit) && rec != nil && ctx.Err() == nil {
			id, err = IdentifyVSIXWithin(*rec)(ctx, f, fi.Size())
		}
		if err != nil {
			if ctx.Err() != nil {
				return 0, blobMissing, Key{}, context.Cause(ctx)
			}
			if errors.Is(err, vsix.ErrLimit) {
				// Intact, and perhaps accepted under larger limits than
				// these: not a hit here, but not damaged either.
				return fi.Size(), blobOverLimits, Key{}, err
			}
			// Intact (its digest matches) but not a readable VSIX: it can
			// never be a hit for any key.
			c.warnf("blob %s: %v; removing it", digest, err)
			return 0, blobMissing, Key{}, c.discardCorrupt(p, fi)
		}
		if !sameKey(id, *k) {
			c.remember(digest, fi, id, true)
			return fi.Size(), blobOtherKey, id, nil
		}
	}
	c.remember(digest, fi, id, k != nil && c.identify != nil)
	return fi.Size(), blobGood, Key{}, nil
}

// checkedBefore returns the key identified when this Cache last found the
// blob digest good, if fi is still that file, unchanged.
func (c *Cache) checkedBefore(digest string, fi os.FileInfo) (Key, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.checked[digest]
	if !ok || !os.SameFile(b.fi, fi) || b.fi.Size() != fi.Size() || !b.fi.ModTime().Equal(fi.ModTime()) {
		return Key{}, false
	}
	if ct, ok := changeTime(fi); !ok || ct != b.ctime {
		return Key{}, false
	}
	return b.id, true
}

// remember records that the blob digest, the file fi, hashed to its
// digest; identified says whether id is the key it was identified as. A
// blob only hashed is not remembered: a later check that must identify it
// reads it again.
func (c *Cache) remember(digest string, fi os.FileInfo, id Key, identified bool) {
	if !identified && c.identify != nil {
		return
	}
	ct, ok := changeTime(fi)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checked == nil {
		c.checked = map[string]checkedBlob{}
	}
	c.checked[digest] = checkedBlob{fi: fi, ctime: ct, id: id}
}

// sameKey compares keys as the Marketplace does: ids case-insensitively,
// versions and target platforms exactly.
func sameKey(a, b Key) bool {
	return strings.EqualFold(a.ID, b.ID) && a.Version == b.Version && a.TargetPlatform == b.TargetPlatform
}

// discardCorrupt removes the file at p if it is still the file held (as
// found bad: its FileInfo from the open file, or from Lstat for what could
// not be opened). Another process may have renamed a good blob (Commit
// checks the digest before its rename) onto p since, and that one must
// stay: the file at p is first renamed aside (atomic, so nothing can slip in
// between the check and the removal), then removed only if it is the bad
// one; otherwise it is renamed back.
func (c *Cache) discardCorrupt(p string, held fs.FileInfo) error {
	return removeIfSame(p, held, "corrupt blob")
}

func removeIfSame(p string, held fs.FileInfo, what string) error {
	// The place aside is of the same kind (a directory can only be
	// renamed over an empty directory).
	var aside string
	if held.IsDir() {
		d, err := os.MkdirTemp(filepath.Dir(p), ".tmp-corrupt-*")
		if err != nil {
			return fmt.Errorf("%s %s: %w", what, p, err)
		}
		aside = d
	} else {
		tmp, err := createTemp(filepath.Dir(p), ".tmp-corrupt-*")
		if err != nil {
			return fmt.Errorf("%s %s: %w", what, p, err)
		}
		aside = tmp.Name()
		tmp.Close()
	}
	// syscall.Rename: os.Rename refuses to replace a directory.
	if err := syscall.Rename(p, aside); err != nil {
		os.Remove(aside)
		if errors.Is(err, fs.ErrNotExist) { // someone else removed it
			return nil
		}
		return fmt.Errorf("moving %s %s aside: %w", what, p, err)
	}
	moved, err := os.Lstat(aside)
	if errors.Is(err, fs.ErrNotExist) { // swept meanwhile
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s moved to %s: %w", what, p, aside, err)
	}
	if os.SameFile(held, moved) {
		if err := os.RemoveAll(aside); err != nil {
			return fmt.Errorf("removing %s %s: %w", what, aside, err)
		}
		return nil
	}
	// Not the file that was found bad: a fresh one. Put it back (if yet
	// another one arrived meanwhile, it has the same content).
	if err := syscall.Rename(aside, p); err != nil {
		return fmt.Errorf("putting %s back from %s: %w", p, aside, err)
	}
	return nil
}

// Get returns the entry for k when it is present and intact. When want (a
// locked sha256) is set, only a blob with that digest is a hit: the index is
// consulted first, then the blob store directly (a file with the locked
// digest is that file, whichever key cached it). It makes no network
// request and never returns a blob whose content does not match its digest,
// nor (with the default identify function) one whose manifest names another
// id, version or target platform than k: an index entry that points at such
// a blob is removed and the lookup is a miss, and a locked digest that names
// one is an error. A blob over the archive limits (the identify function's,
// and those the index entry records) is a miss, with a warning, and stays.
// Hashing stops when ctx is done.
func (c *Cache) Get(ctx context.Context, k Key, want string) (Entry, bool, error) {
	if err := k.Check(); err != nil {
		return Entry{}, false, err
	}
	want = strings.ToLower(want)
	if want != "" && !hexRE.MatchString(want) {
		return Entry{}, false, fmt.Errorf("%s: locked sha256 %q is not a hex sha256", k, want)
	}
	e, held, err := c.readIndexFile(c.indexPath(k))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Entry{}, false, err
	}
	digest := e.SHA256
	if want != "" {
		digest = want
	}
	if digest == "" {
		return Entry{}, false, nil
	}
	var rec *vsix.Limits
	if e.SHA256 == digest {
		rec = e.Limits
	}
	n, state, other, err := c.checkBlob(ctx, digest, &k, rec)
	if state == blobOverLimits {
		c.warnf("blob %s (%s) is over the archive limits it was checked under: %v; kept, not used (it needs the larger limits it was fetched with)", digest, k, err)
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	switch state {
	case blobMissing:
		return Entry{}, false, nil
	case blobOtherKey:
		if want != "" {
			return Entry{}, false, fmt.Errorf("%s: the locked sha256 %s names a cached file that is %s", k, want, safetext.Sanitize(other.String()))
		}
		c.warnf("index entry %s names blob %s, which is %s; removing the entry", k, digest, safetext.Sanitize(other.String()))
		if err := removeIfSame(c.indexPath(k), held, "index entry"); err != nil {
			return Entry{}, false, err
		}
		return Entry{}, false, nil
	}
	if e.SHA256 != digest { // found by digest: record it under k
		// The index entry (if any) described another file: its URL is not
		// where this blob came from, which is unknown here.
		e = Entry{Key: k, SHA256: digest, Size: n}
		if err := c.writeIndex(e); err != nil {
			return Entry{}, false, err
		}
	}
	e.Size, e.Path = n, c.BlobPath(digest)
	return e, true, nil
}

// readIndexFile reads the index entry at p. A missing or damaged entry is
// fs.ErrNotExist; one that is not a regular file (a link, a FIFO, a
// directory) or is too large is removed first, so that it is never read and
// the next write can take its place. The FileInfo is the entry file's, for
// removal.
func (c *Cache) readIndexFile(p string) (Entry, fs.FileInfo, error) {
	f, fi, err := openRegular(p, maxIndexBytes)
	if err != nil {
		if !unusable(err) {
			return Entry{}, nil, err
		}
		held, lerr := os.Lstat(p)
		if lerr != nil {
			return Entry{}, nil, fs.ErrNotExist
		}
		c.warnf("index entry %s: %v; removing it", p, err)
		if err := removeIfSame(p, held, "index entry"); err != nil {
			return Entry{}, nil, err
		}
		return Entry{}, nil, fs.ErrNotExist
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIndexBytes+1))
	if err != nil {
		return Entry{}, nil, err
	}
	var e Entry
	if len(b) > maxIndexBytes || json.Unmarshal(b, &e) != nil || !hexRE.MatchString(e.SHA256) {
		// A damaged index entry is as good as none.
		return Entry{}, nil, fs.ErrNotExist
	}
	return e, fi, nil
}

func (c *Cache) writeIndex(e Entry) error {
	// A URL's userinfo (user:password@) is a secret: never on disk.
	e.URL = safetext.URL(e.URL)
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	p := c.indexPath(e.Key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return writeAtomic(p, func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err })
}

// writeAtomic writes a locked temp file beside p and renames it to p (the
// lock is held until after the rename, so Sweep never takes it).
func writeAtomic(p string, fill func(io.Writer) error) error {
	f, err := createTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	defer f.Close()
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	return renameOnto(tmp, p)
}

// renameOnto renames the regular file tmp to p, first removing what p is if
// it is not a regular file (a directory or FIFO planted there would make the
// rename fail forever, or be followed).
func renameOnto(tmp, p string) error {
	if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
		if err := removeIfSame(p, fi, "non-regular file"); err != nil {
			return err
		}
	}
	return os.Rename(tmp, p)
}

// Writer receives a download. Its file lives in the blob directory, so
// Commit is an atomic rename; it is locked (flock) while the Writer is live,
// so Sweep never removes it, however long the download takes.
type Writer struct {
	c    *Cache
	f    *os.File
	h    hashWriter
	done bool
}

type hashWriter struct {
	w io.Writer
	h interface {
		io.Writer
		Sum([]byte) []byte
	}
	n int64
}

func (hw *hashWriter) Write(p []byte) (int, error) {
	n, err := hw.w.Write(p)
	hw.h.Write(p[:n])
	hw.n += int64(n)
	return n, err
}

// createTemp creates a temporary file in dir named by pattern (.tmp-*) and
// takes an exclusive flock on it, held until the file is closed (or the
// process dies): Sweep skips every file it cannot lock.
func createTemp(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return f, nil
}

// NewWriter starts a blob.
func (c *Cache) NewWriter() (*Writer, error) {
	f, err := createTemp(filepath.Join(c.root, "blobs", "sha256"), ".tmp-*")
	if err != nil {
		return nil, err
	}
	return &Writer{c: c, f: f, h: hashWriter{w: f, h: sha256.New()}}, nil
}

// Write appends to the blob.
func (w *Writer) Write(p []byte) (int, error) { return w.h.Write(p) }

// File returns the temporary file (for validation before Commit; read it
// with ReadAt).
func (w *Writer) File() *os.File { return w.f }

// Size returns the bytes written so far.
func (w *Writer) Size() int64 { return w.h.n }

// SHA256 returns the digest of what was written.
func (w *Writer) SHA256() string { return hex.EncodeToString(w.h.h.Sum(nil)) }

// Abort drops the blob. It is safe to call after Commit.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	os.Remove(w.f.Name())
	w.f.Close()
}

// Commit checks the digest against want (when set), moves the blob into
// place and records e under its key. The returned entry has SHA256, Size and
// Path filled in.
func (w *Writer) Commit(e Entry, want string) (Entry, error) {
	if w.done {
		return Entry{}, errors.New("cache: writer already finished")
	}
	defer w.Abort()
	if err := e.Key.Check(); err != nil {
		return Entry{}, err
	}
	got := w.SHA256()
	if want != "" && !strings.EqualFold(got, want) {
		return Entry{}, fmt.Errorf("%s: sha256 %s, but the lock says %s", e.Key, got, strings.ToLower(want))
	}
	if err := w.f.Sync(); err != nil {
		return Entry{}, err
	}
	tmp := w.f.Name()
	// Verify what is on disk, not only what passed through.
	if d, err := hashOpen(context.Background(), w.f, w.h.n); err != nil || d != got {
		return Entry{}, fmt.Errorf("%s: blob changed on disk while writing (%s vs %s): %v", e.Key, d, got, err)
	}
	if err := w.f.Chmod(0o444); err != nil {
		return Entry{}, err
	}
	// Renamed while still open and locked: Sweep cannot take it between.
	if err := renameOnto(tmp, w.c.BlobPath(got)); err != nil {
		return Entry{}, err
	}
	w.done = true
	if err := w.f.Close(); err != nil {
		return Entry{}, err
	}
	e.SHA256, e.Size, e.Path = got, w.h.n, w.c.BlobPath(got)
	if err := w.c.writeIndex(e); err != nil {
		return Entry{}, err
	}
	e.URL = safetext.URL(e.URL)
	return e, nil
}

// OpenBlob opens the blob of e for reading, as every cache file is opened
// (no link followed, no FIFO waited on, a regular file only), and fails
// unless it still has e.Size bytes.
func (c *Cache) OpenBlob(e Entry) (*os.File, error) {
	if !hexRE.MatchString(e.SHA256) {
		return nil, fmt.Errorf("%s: sha256 %q is not a hex sha256", e.Key, e.SHA256)
	}
	f, fi, err := openRegular(c.BlobPath(e.SHA256), c.maxBlob)
	if err != nil {
		return nil, err
	}
	if fi.Size() != e.Size {
		f.Close()
		return nil, fmt.Errorf("blob %s: %d bytes, want %d", f.Name(), fi.Size(), e.Size)
	}
	return f, nil
}

// List returns every index entry, sorted by id, version and target platform,
// with its blob verified; entries whose blob is missing or corrupt are left
// out (and a corrupt blob removed), and so are (with the default identify
// function) entries whose blob is a file of another key (the entry is
// removed). An entry whose blob is over the archive limits, both the
// identify function's and those the entry records, is left out with a
// warning, and its blob kept: a listing never removes a file a fetch with
// larger limits accepted. It stops when ctx is done.
func (c *Cache) List(ctx context.Context) ([]Entry, error) {
	var out []Entry
	root := filepath.Join(c.root, "index")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") || strings.HasPrefix(d.Name(), ".tmp-") {
			return err
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		e, held, err := c.readIndexFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if e.Key.Check() != nil || p != c.indexPath(e.Key) {
			// Not where its key says: edited or misplaced; not listed.
			return nil
		}
		n, state, other, err := c.checkBlob(ctx, e.SHA256, &e.Key, e.Limits)
		if state == blobOverLimits {
			c.warnf("blob %s (%s) is over the archive limits it was checked under: %v; kept, not listed (it needs the larger limits it was fetched with)", e.SHA256, e.Key, err)
			return nil
		}
		if err != nil {
			return err
		}
		switch state {
		case blobGood:
			e.Size, e.Path = n, c.BlobPath(e.SHA256)
			out = append(out, e)
		case blobOtherKey:
			c.warnf("index entry %s names blob %s, which is %s; removing the entry", e.Key, e.SHA256, safetext.Sanitize(other.String()))
			return removeIfSame(p, held, "index entry")
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.TargetPlatform < b.TargetPlatform
	})
	return out, err
}

// Blobs returns the digests of every blob file present (including any not
// indexed), sorted. Temporary files are not listed.
func (c *Cache) Blobs() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(c.root, "blobs", "sha256"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Sweep removes the temporary files (.tmp-*) in the blob store and the index
// last modified more than age ago that no live writer holds: each is opened
// (no link followed) and locked without waiting; a file another process
// holds locked is skipped, whatever its age. It returns the paths removed.
func (c *Cache) Sweep(age time.Duration) ([]string, error) {
	cutoff := time.Now().Add(-age)
	var removed []string
	visit := func(p string, d fs.DirEntry) error {
		if !strings.HasPrefix(d.Name(), ".tmp-") {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		if fi.ModTime().After(cutoff) {
			return nil
		}
		ok, err := removeUnlocked(p, fi)
		if err != nil {
			return err
		}
		if ok {
			removed = append(removed, p)
			c.warnf("removed %s, a temporary file left by an interrupted write", p)
		}
		return nil
	}
	var errs []error
	blobs := filepath.Join(c.root, "blobs", "sha256")
	ents, err := os.ReadDir(blobs)
	if err != nil {
		return nil, err
	}
	for _, d := range ents {
		if err := visit(filepath.Join(blobs, d.Name()), d); err != nil {
			errs = append(errs, err)
		}
	}
	err = filepath.WalkDir(filepath.Join(c.root, "index"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if err := visit(p, d); err != nil {
			errs = append(errs, err)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// removeUnlocked removes the temporary file p (found as fi by Lstat) unless
// a live process holds its lock. A regular file is removed only while this
// process holds its lock and p still names the locked file; anything else
// (a link, a FIFO someone planted) is removed as it is, never opened.
func removeUnlocked(p string, fi fs.FileInfo) (bool, error) {
	if !fi.Mode().IsRegular() {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		return true, nil
	}
	f, held, err := openRegular(p, math.MaxInt64)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil // a live writer's
		}
		return false, fmt.Errorf("locking %s: %w", p, err)
	}
	// Locked: no live writer. Remove p only if it still names this file (a
	// writer that finished renamed its file away; the name may be reused).
	now, err := os.Lstat(p)
	if err != nil || !os.SameFile(held, now) {
		return false, nil
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, nil
}
