package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
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
	// Path is the blob's path (not stored in the index).
	Path string `json:"-"`
}

// Cache is a cache rooted at a directory.
type Cache struct {
	root string
	// afterCorruptHash, when set (by tests), runs after a blob at the path
	// it is given was found corrupt and before it is removed.
	afterCorruptHash func(path string)
}

// Open returns the cache at dir, creating its directories.
func Open(dir string) (*Cache, error) {
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
	return &Cache{root: abs}, nil
}

// Dir returns the root directory.
func (c *Cache) Dir() string { return c.root }

// BlobPath returns where the blob with digest hex lives.
func (c *Cache) BlobPath(hex string) string { return filepath.Join(c.root, "blobs", "sha256", hex) }

func (c *Cache) indexPath(k Key) string {
	return filepath.Join(c.root, "index", strings.ToLower(k.ID), k.Version, k.TargetPlatform+".json")
}

// HashFile returns the sha256 hex digest and size of the file at p.
func HashFile(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// verifyBlob checks that the blob named digest still hashes to digest. A
// blob that does not is removed (see discardCorrupt).
func (c *Cache) verifyBlob(digest string) (int64, bool, error) {
	p := c.BlobPath(digest)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, false, fmt.Errorf("reading blob %s: %w", p, err)
	}
	if hex.EncodeToString(h.Sum(nil)) == digest {
		return n, true, nil
	}
	if c.afterCorruptHash != nil {
		c.afterCorruptHash(p)
	}
	if err := discardCorrupt(p, f); err != nil {
		return 0, false, err
	}
	return 0, false, nil
}

// discardCorrupt removes the blob at p if it is still the file held open as
// bad. Another process may have renamed a good blob (Commit checks the digest
// before its rename) onto p since bad was hashed, and that one must stay:
// the file at p is first renamed aside (atomic, so nothing can slip in
// between the check and the removal), then removed only if it is bad;
// otherwise it is renamed back.
func discardCorrupt(p string, bad *os.File) error {
	held, err := bad.Stat()
	if err != nil {
		return fmt.Errorf("corrupt blob %s: %w", p, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-corrupt-*")
	if err != nil {
		return fmt.Errorf("corrupt blob %s: %w", p, err)
	}
	aside := tmp.Name()
	tmp.Close()
	if err := os.Rename(p, aside); err != nil {
		os.Remove(aside)
		if errors.Is(err, fs.ErrNotExist) { // someone else removed it
			return nil
		}
		return fmt.Errorf("moving corrupt blob %s aside: %w", p, err)
	}
	moved, err := os.Lstat(aside)
	if err != nil {
		return fmt.Errorf("corrupt blob %s moved to %s: %w", p, aside, err)
	}
	if os.SameFile(held, moved) {
		if err := os.Remove(aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing corrupt blob %s: %w", aside, err)
		}
		return nil
	}
	// Not the file that was hashed: a fresh, checked blob. Put it back (if
	// yet another one arrived meanwhile, it has the same content).
	if err := os.Rename(aside, p); err != nil {
		return fmt.Errorf("putting blob %s back from %s: %w", p, aside, err)
	}
	return nil
}

// Get returns the entry for k when it is present and intact. When want (a
// locked sha256) is set, only a blob with that digest is a hit: the index is
// consulted first, then the blob store directly (a file with the locked
// digest is that file, whichever key cached it). It makes no network
// request and never returns a blob whose content does not match its digest.
func (c *Cache) Get(k Key, want string) (Entry, bool, error) {
	if err := k.Check(); err != nil {
		return Entry{}, false, err
	}
	want = strings.ToLower(want)
	if want != "" && !hexRE.MatchString(want) {
		return Entry{}, false, fmt.Errorf("%s: locked sha256 %q is not a hex sha256", k, want)
	}
	e, err := c.readIndex(k)
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
	n, ok, err := c.verifyBlob(digest)
	if err != nil || !ok {
		return Entry{}, false, err
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

func (c *Cache) readIndex(k Key) (Entry, error) {
	b, err := os.ReadFile(c.indexPath(k))
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil || !hexRE.MatchString(e.SHA256) {
		// A damaged index entry is as good as none.
		return Entry{}, fs.ErrNotExist
	}
	return e, nil
}

func (c *Cache) writeIndex(e Entry) error {
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

// writeAtomic writes a temp file beside p and renames it to p.
func writeAtomic(p string, fill func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := fill(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// Writer receives a download. Its file lives in the blob directory, so
// Commit is an atomic rename.
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

// NewWriter starts a blob.
func (c *Cache) NewWriter() (*Writer, error) {
	f, err := os.CreateTemp(filepath.Join(c.root, "blobs", "sha256"), ".tmp-*")
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
	w.f.Close()
	os.Remove(w.f.Name())
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
	if err := w.f.Close(); err != nil {
		return Entry{}, err
	}
	w.done = true
	tmp := w.f.Name()
	defer os.Remove(tmp)
	// Verify what is on disk, not only what passed through.
	if d, _, err := HashFile(tmp); err != nil || d != got {
		return Entry{}, fmt.Errorf("%s: blob changed on disk while writing (%s vs %s): %v", e.Key, d, got, err)
	}
	if err := os.Chmod(tmp, 0o444); err != nil {
		return Entry{}, err
	}
	if err := os.Rename(tmp, w.c.BlobPath(got)); err != nil {
		return Entry{}, err
	}
	e.SHA256, e.Size, e.Path = got, w.h.n, w.c.BlobPath(got)
	if err := w.c.writeIndex(e); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// List returns every index entry, sorted by id, version and target platform,
// with its blob verified; entries whose blob is missing or corrupt are left
// out (and a corrupt blob removed).
func (c *Cache) List() ([]Entry, error) {
	var out []Entry
	root := filepath.Join(c.root, "index")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") || strings.HasPrefix(d.Name(), ".tmp-") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var e Entry
		if json.Unmarshal(b, &e) != nil || !hexRE.MatchString(e.SHA256) {
			return nil
		}
		n, ok, err := c.verifyBlob(e.SHA256)
		if err != nil {
			return err
		}
		if ok {
			e.Size, e.Path = n, c.BlobPath(e.SHA256)
			out = append(out, e)
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
