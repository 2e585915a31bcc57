package rayjobs

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Limits and names Ray uses for uploaded packages.
const (
	// PkgPrefix starts every package name Ray derives from a directory
	// (packaging.py RAY_PKG_PREFIX).
	PkgPrefix = "_ray_pkg_"
	// DashboardMaxBody is the dashboard's aiohttp client_max_size
	// (ray_constants.py DASHBOARD_CLIENT_MAX_SIZE, 100 MiB): aiohttp
	// refuses a request body of this size or more, so a package PUT to
	// /api/packages must be smaller.
	DashboardMaxBody = 100 << 20
	// GCSMaxSize is packaging.py's GCS_STORAGE_MAX_SIZE default (the gRPC
	// message limit, ray_constants.py GRPC_CPP_MAX_MESSAGE_SIZE, 512 MiB;
	// RAY_max_grpc_message_size changes it on the cluster): the GCS refuses
	// a package of this size or more.
	GCSMaxSize = 512 << 20
	// FileSizeWarning is the size from which Ray warns about one file
	// (packaging.py FILE_SIZE_WARNING, 10 MiB).
	FileSizeWarning = 10 << 20
	// IgnoreGitignoreEnv, set to "1", makes Ray (and Package) ignore
	// .gitignore files (ray_constants.py RAY_RUNTIME_ENV_IGNORE_GITIGNORE).
	IgnoreGitignoreEnv = "RAY_RUNTIME_ENV_IGNORE_GITIGNORE"
)

// Archive is a local directory packaged as Ray's job SDK packages a
// working_dir or a py_modules entry.
type Archive struct {
	// Dir is the directory as given, made absolute (not resolved).
	Dir string
	// URI is gcs://_ray_pkg_<Hash>.zip, Ray's content address.
	URI string
	// Hash is the 16 hex digits of packaging.py's _hash_directory.
	Hash string
	// Zip is the archive to upload.
	Zip []byte
	// Entries are the archive's entries in the order written.
	Entries []Entry
	// Warnings are what Ray would log as warnings (files of 10 MiB or more).
	Warnings []string
}

// Name is the package's file name, the URI without gcs://.
func (p *Archive) Name() string { return strings.TrimPrefix(p.URI, "gcs://") }

// Entry is one member of a package's zip as Python's zipfile writes it
// (ZipInfo.from_file): the mode is the stat mode of the file or directory
// (symbolic links followed), directories end in "/".
type Entry struct {
	Name string
	Mode uint32 // st_mode & 0xFFFF
	Size int64
	Dir  bool
	// Modified is the local time Python's time.localtime gives the mtime,
	// as the DOS date and time store it (2 s steps, clamped to 1980-2107).
	Modified time.Time
}

type packageOptions struct {
	excludes        []string
	includeParent   bool
	ignoreGitignore *bool
	maxSize         int64
	loc             *time.Location
	// order, when set, sorts a directory's names instead of by name (the
	// tests replay the order Ray's os.scandir gave).
	order func(dir string, names []string)
}

// PackageOption configures Package.
type PackageOption func(*packageOptions)

// WithParentDir puts the directory itself at the top of the zip, as the SDK
// packages a py_modules entry (include_parent_dir=True). The URI does not
// change: Ray hashes the same files either way.
func WithParentDir() PackageOption { return func(o *packageOptions) { o.includeParent = true } }

// WithIgnoreGitignore decides whether .gitignore files are ignored; by
// default Package does as Ray, which ignores them when the environment
// variable RAY_RUNTIME_ENV_IGNORE_GITIGNORE is "1".
func WithIgnoreGitignore(ignore bool) PackageOption {
	return func(o *packageOptions) { o.ignoreGitignore = &ignore }
}

// WithMaxSize refuses a zip of n bytes or more (default DashboardMaxBody).
func WithMaxSize(n int64) PackageOption { return func(o *packageOptions) { o.maxSize = n } }

// WithLocation sets the time zone of the zip's DOS timestamps (default
// time.Local, as Python's time.localtime).
func WithLocation(loc *time.Location) PackageOption { return func(o *packageOptions) { o.loc = loc } }

// Package packages dir the way Ray's SDK does before an upload
// (packaging.py get_uri_for_directory and create_package/_zip_files):
//
//   - dir is walked from the top; a path is skipped with everything below it
//     when a pattern of excludes (gitwildmatch, relative to dir) or of a
//     .gitignore file in it or above it (relative to that file's directory)
//     matches its relative path; symbolic links are followed;
//   - the hash XORs the first 8 bytes of SHA-1(relative path [+ content])
//     of every path kept, dir itself (".") and directories included, into
//     "00000000"; the URI is gcs://_ray_pkg_<hex>.zip;
//   - the zip holds every kept file and every kept directory that is empty
//     on disk, stored (not compressed), with the stat mode and the mtime
//     of each.
//
// A symbolic link that points to one of its own ancestors is refused (Ray
// follows it until the kernel's limit of 40 links). A zip of
// DashboardMaxBody bytes or more is refused, naming dir and the limit.
func Package(ctx context.Context, dir string, excludes []string, opts ...PackageOption) (*Archive, error) {
	o := packageOptions{excludes: excludes, maxSize: DashboardMaxBody, loc: time.Local}
	for _, opt := range opts {
		opt(&o)
	}
	ignoreGitignore := os.Getenv(IgnoreGitignoreEnv) == "1"
	if o.ignoreGitignore != nil {
		ignoreGitignore = *o.ignoreGitignore
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("directory %s: %w", dir, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("directory %s must be an existing directory", abs)
	}
	userSpec, err := compilePathSpec(o.excludes)
	if err != nil {
		return nil, fmt.Errorf("excludes of %s: %w", abs, err)
	}
	w := &walker{
		ctx: ctx, root: abs, ignoreGitignore: ignoreGitignore, order: o.order,
		hash: []byte("00000000"), loc: o.loc, includeParent: o.includeParent, maxSize: o.maxSize,
	}
	w.zw = zip.NewWriter(&w.buf)
	root := matcher{base: abs, spec: userSpec}
	if err := w.travel(abs, []matcher{root}, nil); err != nil {
		return nil, err
	}
	if err := w.zw.Close(); err != nil {
		return nil, fmt.Errorf("packaging %s: %w", abs, err)
	}
	if int64(w.buf.Len()) >= o.maxSize {
		return nil, w.tooLarge()
	}
	h := hex.EncodeToString(w.hash)
	return &Archive{
		Dir: abs, URI: "gcs://" + PkgPrefix + h + ".zip", Hash: h,
		Zip: w.buf.Bytes(), Entries: w.entries, Warnings: w.warnings,
	}, nil
}

// matcher is one PathSpec with the directory its patterns are relative to
// (the top directory for excludes, a .gitignore's directory).
type matcher struct {
	base string
	spec pathSpec
}

func (m matcher) match(p string) bool {
	rel, err := filepath.Rel(m.base, p)
	if err != nil {
		return false
	}
	return m.spec.match(filepath.ToSlash(rel))
}

type walker struct {
	ctx             context.Context
	root            string
	ignoreGitignore bool
	includeParent   bool
	loc             *time.Location
	maxSize         int64
	order           func(dir string, names []string)

	hash     []byte
	buf      bytes.Buffer
	zw       *zip.Writer
	entries  []Entry
	warnings []string
}

func (w *walker) tooLarge() error {
	return fmt.Errorf("directory %s: the package is %s or more, and Ray's dashboard takes a package smaller than %s (its request body limit, DASHBOARD_CLIENT_MAX_SIZE; the GCS's own is %s): exclude large files with runtime_env excludes or .gitignore, or use a remote URI",
		w.root, mib(w.maxSize), mib(w.maxSize), mib(GCSMaxSize))
}

func mib(n int64) string { return fmt.Sprintf("%.2fMiB", float64(n)/(1<<20)) }

// travel is packaging.py's _dir_travel: the .gitignore of p (when p is a
// directory holding one) joins the matchers for p and everything below it.
func (w *walker) travel(p string, ms []matcher, ancestors []fileID) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if !w.ignoreGitignore {
		gi, err := gitignore(p)
		if err != nil {
			return err
		}
		if gi != nil {
			ms = append(ms[:len(ms):len(ms)], *gi)
		}
	}
	for _, m := range ms {
		if m.match(p) {
			return nil
		}
	}
	st, statErr := os.Stat(p) // follows symbolic links, as Path.is_dir()
	isDir := statErr == nil && st.IsDir()
	if err := w.handle(p, st, statErr); err != nil {
		return err
	}
	if !isDir {
		return nil
	}
	id, ok := idOf(st)
	if ok {
		for _, a := range ancestors {
			if a == id {
				return fmt.Errorf("directory %s: %s leads back to its own ancestor (a symbolic link loop); Ray would follow it 40 levels deep: remove the link or exclude it", w.root, p)
			}
		}
		ancestors = append(ancestors[:len(ancestors):len(ancestors)], id)
	}
	names, err := readDirNames(p)
	if err != nil {
		return fmt.Errorf("directory %s: reading %s: %w", w.root, p, err)
	}
	if w.order != nil {
		w.order(p, names)
	}
	for _, n := range names {
		if err := w.travel(filepath.Join(p, n), ms, ancestors); err != nil {
			return err
		}
	}
	return nil
}

// gitignore is packaging.py's _get_gitignore: the patterns of p/.gitignore
// when that is a file (read as text: universal newlines, UTF-8).
func gitignore(p string) (*matcher, error) {
	f := filepath.Join(p, ".gitignore")
	st, err := os.Stat(f)
	if err != nil || !st.Mode().IsRegular() {
		return nil, nil
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", f, err)
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("reading %s: not UTF-8 text (Ray reads .gitignore as text and fails on it too)", f)
	}
	spec, err := compilePathSpec(pyReadLines(string(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f, err)
	}
	return &matcher{base: p, spec: spec}, nil
}

// pyReadLines is open(f, "r").readlines(): "\r\n" and "\r" read as "\n",
// every line keeps its "\n".
func pyReadLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.SplitAfter(s, "\n")
}

// readDirNames lists p's entries by name (Ray takes the order of
// os.scandir, which the file system decides; the hash does not depend on
// it, and a sorted order keeps the zip the same on every machine).
func readDirNames(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

type fileID struct{ dev, ino uint64 }

func idOf(st fs.FileInfo) (fileID, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(s.Dev), uint64(s.Ino)}, true
}

// handle hashes p (_hash_directory's handler) and adds it to the zip
// (_zip_files' handler).
func (w *walker) handle(p string, st fs.FileInfo, statErr error) error {
	rel, err := filepath.Rel(w.root, p)
	if err != nil {
		return err
	}
	rel = filepath.ToSlash(rel)
	if !utf8.ValidString(rel) {
		return fmt.Errorf("directory %s: %q is not a UTF-8 name (Ray cannot encode it either)", w.root, rel)
	}
	isDir := statErr == nil && st.IsDir()
	sum := sha1.New()
	io.WriteString(sum, rel)
	if !isDir {
		// Ray hashes the content of anything that is not a directory and
		// can be opened; a dangling link counts by its name only.
		if f, err := os.Open(p); err == nil {
			_, err := io.Copy(sum, bufio.NewReaderSize(f, 1<<20))
			f.Close()
			if err != nil {
				return fmt.Errorf("directory %s: reading %s: %w", w.root, p, err)
			}
		}
	}
	d := sum.Sum(nil)
	for i := range w.hash {
		w.hash[i] ^= d[i]
	}

	if statErr != nil {
		return nil // neither a file nor a directory: not in the zip
	}
	switch {
	case isDir:
		empty, err := dirEmpty(p)
		if err != nil {
			return fmt.Errorf("directory %s: reading %s: %w", w.root, p, err)
		}
		if !empty {
			return nil
		}
	case !st.Mode().IsRegular():
		return nil // a device, FIFO or socket: Path.is_file() is false
	}
	return w.add(p, rel, st)
}

func dirEmpty(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return false, err
}

// add writes p to the zip as zipfile.ZipFile.write(p, rel) does with
// ZIP_STORED: no data descriptor, no extra field, the UTF-8 flag for a
// non-ASCII name, made by Unix (3) version 2.0, mode in the external
// attributes (plus 0x10 for a directory).
func (w *walker) add(p, rel string, st fs.FileInfo) error {
	name := rel
	if w.includeParent {
		name = filepath.Base(w.root) + "/" + rel
	}
	name = path.Clean(name) // os.path.normpath
	dir := st.IsDir()
	if dir {
		name += "/"
	}
	mode := uint32(unixMode(st)) & 0xFFFF
	fh := &zip.FileHeader{
		Name:           name,
		Method:         zip.Store,
		CreatorVersion: 3<<8 | 20,
		ReaderVersion:  20,
		ExternalAttrs:  mode << 16,
	}
	if !isASCII(name) {
		fh.Flags |= 0x800
	}
	mt := dosTime(st.ModTime(), w.loc)
	// The DOS fields themselves: Modified would add an extended timestamp
	// field that Python's zipfile does not write.
	//lint:ignore SA1019 CreateRaw writes these fields as they are, which Ray's zip needs
	fh.ModifiedDate, fh.ModifiedTime = dosDateTime(mt)
	e := Entry{Name: name, Mode: mode, Dir: dir, Modified: mt}
	var data []byte
	if dir {
		fh.ExternalAttrs |= 0x10
	} else {
		if st.Size() >= FileSizeWarning {
			w.warnings = append(w.warnings, fmt.Sprintf("File %s is very large (%s). Consider adding this file to the 'excludes' list to skip uploading it", p, mib(st.Size())))
		}
		if st.Size() >= w.maxSize {
			return w.tooLarge()
		}
		var err error
		data, err = os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("directory %s: reading %s: %w", w.root, p, err)
		}
		fh.CRC32 = crc32.ChecksumIEEE(data)
		fh.CompressedSize64 = uint64(len(data))
		fh.UncompressedSize64 = uint64(len(data))
		e.Size = int64(len(data))
	}
	fw, err := w.zw.CreateRaw(fh)
	if err != nil {
		return fmt.Errorf("packaging %s: %w", p, err)
	}
	if _, err := fw.Write(data); err != nil {
		return fmt.Errorf("packaging %s: %w", p, err)
	}
	w.entries = append(w.entries, e)
	if int64(w.buf.Len()) >= w.maxSize {
		return w.tooLarge()
	}
	return nil
}

func unixMode(st fs.FileInfo) uint32 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint32(s.Mode)
	}
	return uint32(st.Mode().Perm())
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// dosTime is the time ZipInfo.from_file records with strict_timestamps
// off: the local time of the mtime, clamped to 1980-01-01 00:00:00 ..
// 2107-12-31 23:59:59, seconds rounded down to even.
func dosTime(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc)
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	switch {
	case y < 1980:
		y, mo, d, h, mi, s = 1980, 1, 1, 0, 0, 0
	case y > 2107:
		y, mo, d, h, mi, s = 2107, 12, 31, 23, 59, 59
	}
	return time.Date(y, mo, d, h, mi, s-s%2, 0, time.UTC)
}

func dosDateTime(t time.Time) (date, tm uint16) {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return uint16((y-1980)<<9 | int(mo)<<5 | d), uint16(h<<11 | mi<<5 | s/2)
}
