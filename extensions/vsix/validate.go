package vsix

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"strings"

	"github.com/imagectl/imagectl/internal/ctxio"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/vscode/engine"
	"github.com/imagectl/imagectl/vscode/vsixmanifest"
)

// Paths inside a VSIX.
const (
	ManifestPath    = "extension.vsixmanifest"
	PackageJSONPath = "extension/package.json"
	ExtensionDir    = "extension/"
)

// Limits bound what a VSIX may hold. Zero fields take the default.
type Limits struct {
	// MaxEntries bounds the number of zip entries (default 100000).
	MaxEntries int `json:"maxEntries,omitempty"`
	// MaxTotalBytes bounds the sum of uncompressed sizes, declared and as
	// really read (default 512 MiB: ms-python.python, the largest of the
	// image's extensions, is about 26 MB compressed and a few times that
	// expanded; VS Code's own built-in extensions are at most 10 MB).
	MaxTotalBytes int64 `json:"maxTotalBytes,omitempty"`
	// MaxRatio bounds uncompressed/compressed size of one entry (default
	// 200), checked for entries larger than RatioFloor.
	MaxRatio float64 `json:"maxRatio,omitempty"`
	// RatioFloor is the uncompressed size from which MaxRatio and
	// MaxTotalRatio apply (default 1 MiB): small files of repeated bytes
	// compress very well and are harmless.
	RatioFloor int64 `json:"ratioFloor,omitempty"`
	// MaxTotalRatio bounds the expansion of the whole archive: the sum of
	// uncompressed sizes over the size of the VSIX file (default 40; real
	// extensions expand 2.5-4.5 times, grammar-only ones up to 15), checked
	// once that sum exceeds RatioFloor. Many entries each just under
	// RatioFloor cannot add up to a bomb.
	MaxTotalRatio float64 `json:"maxTotalRatio,omitempty"`
}

// DefaultLimits are generous enough for ms-python.python (tens of MB
// compressed, a few thousand files) and stop archive bombs.
var DefaultLimits = Limits{MaxEntries: 100000, MaxTotalBytes: 512 << 20, MaxRatio: 200, RatioFloor: 1 << 20, MaxTotalRatio: 40}

// ErrLimit is what every failure of an archive limit wraps (errors.Is): a
// VSIX over the limits may be intact and well-formed, and pass under larger
// ones, unlike one that fails any other check.
var ErrLimit = errors.New("archive limit exceeded")

// limitError is a failure of an archive limit; its text is the message
// alone.
type limitError struct{ msg string }

func (e *limitError) Error() string        { return e.msg }
func (e *limitError) Is(target error) bool { return target == ErrLimit }

func limitErrorf(format string, args ...any) error {
	return &limitError{msg: fmt.Sprintf(format, args...)}
}

// Raised reports whether l (zero fields taking the default) allows more
// than DefaultLimits in some respect: a file accepted under l may fail the
// defaults.
func (l Limits) Raised() bool {
	l = l.withDefaults()
	d := DefaultLimits
	return l.MaxEntries > d.MaxEntries || l.MaxTotalBytes > d.MaxTotalBytes || l.MaxRatio > d.MaxRatio ||
		l.RatioFloor > d.RatioFloor || l.MaxTotalRatio > d.MaxTotalRatio
}

func (l Limits) withDefaults() Limits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultLimits.MaxEntries
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultLimits.MaxTotalBytes
	}
	if l.MaxRatio <= 0 {
		l.MaxRatio = DefaultLimits.MaxRatio
	}
	if l.RatioFloor <= 0 {
		l.RatioFloor = DefaultLimits.RatioFloor
	}
	if l.MaxTotalRatio <= 0 {
		l.MaxTotalRatio = DefaultLimits.MaxTotalRatio
	}
	return l
}

// checkTotal fails when total uncompressed bytes exceed the absolute cap
// or, past RatioFloor, MaxTotalRatio times the archive's size.
func (l Limits) checkTotal(total uint64, archiveSize int64, at string) error {
	if total > uint64(l.MaxTotalBytes) {
		return limitErrorf("uncompressed size exceeds the limit of %d bytes (at entry %q)", l.MaxTotalBytes, at)
	}
	if total > uint64(l.RatioFloor) && archiveSize > 0 {
		if r := float64(total) / float64(archiveSize); r > l.MaxTotalRatio {
			return limitErrorf("the archive of %d bytes expands to more than %d bytes (at entry %q): ratio %.0f exceeds the limit of %.0f", archiveSize, total, at, r, l.MaxTotalRatio)
		}
	}
	return nil
}

// Expect is what a VSIX must be.
type Expect struct {
	// ID is publisher.name.
	ID      string
	Version string
	// TargetPlatform is linux-x64, linux-arm64, ... or "universal"; a
	// universal VSIX carries no TargetPlatform in its manifest.
	TargetPlatform string
	// VSCode, when set, is the VS Code version the engines.vscode range must
	// accept.
	VSCode string
}

type packageJSON struct {
	Name                  string            `json:"name"`
	Publisher             string            `json:"publisher"`
	Version               string            `json:"version"`
	Engines               map[string]string `json:"engines"`
	ExtensionDependencies []string          `json:"extensionDependencies"`
	ExtensionPack         []string          `json:"extensionPack"`
}

const maxMetaFile = 4 << 20

// CheckEntryName reports whether a zip entry name is safe to extract: relative,
// forward slashes only, no "." or ".." element, no NUL, no drive letter.
func CheckEntryName(name string) error {
	switch {
	case name == "":
		return errors.New("empty entry name")
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("entry %q: NUL in name", name)
	case strings.Contains(name, `\`):
		return fmt.Errorf("entry %q: backslash in name", name)
	case strings.HasPrefix(name, "/"):
		return fmt.Errorf("entry %q: absolute path", name)
	case len(name) >= 2 && name[1] == ':':
		return fmt.Errorf("entry %q: drive letter", name)
	}
	trimmed := strings.TrimSuffix(name, "/")
	for _, el := range strings.Split(trimmed, "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("entry %q: path element %q escapes or is not clean", name, el)
		}
	}
	if path.Clean(trimmed) != trimmed {
		return fmt.Errorf("entry %q: not a clean path", name)
	}
	return nil
}

// Unix file type bits, as stored in the high 16 bits of a zip entry's
// external attributes.
const (
	sIFMT  = 0o170000
	sIFLNK = 0o120000
)

// checkEntries applies the archive safety rules to every entry of an
// archive of size bytes, by what the entries declare.
func checkEntries(files []*zip.File, size int64, lim Limits) error {
	if len(files) > lim.MaxEntries {
		return limitErrorf("%d entries, more than the limit of %d", len(files), lim.MaxEntries)
	}
	var total uint64
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		if err := CheckEntryName(f.Name); err != nil {
			return err
		}
		key := strings.ToLower(strings.TrimSuffix(f.Name, "/"))
		if seen[key] {
			return fmt.Errorf("entry %q: duplicate name", f.Name)
		}
		seen[key] = true
		m := f.Mode()
		// archive/zip reads the Unix mode only when the entry's creator is
		// Unix or macOS; extractors differ in which creators they trust, so
		// S_IFLNK in the high 16 bits of the external attributes is refused
		// whatever the creator.
		if m&fs.ModeSymlink != 0 || (f.ExternalAttrs>>16)&sIFMT == sIFLNK {
			return fmt.Errorf("entry %q: symbolic link", f.Name)
		}
		if m&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0 {
			return fmt.Errorf("entry %q: not a regular file or directory (%v)", f.Name, m)
		}
		if f.UncompressedSize64 >= uint64(lim.RatioFloor) {
			c := f.CompressedSize64
			if c == 0 {
				c = 1
			}
			if r := float64(f.UncompressedSize64) / float64(c); r > lim.MaxRatio {
				return limitErrorf("entry %q: compression ratio %.0f exceeds the limit of %.0f", f.Name, r, lim.MaxRatio)
			}
		}
		total += f.UncompressedSize64
		if total < f.UncompressedSize64 { // wrapped around
			total = math.MaxUint64
		}
		if err := lim.checkTotal(total, size, f.Name); err != nil {
			return err
		}
	}
	return nil
}

func readEntry(ctx context.Context, f *zip.File, limit int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("entry %q: %w", f.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(ctxio.Reader(ctx, rc), limit+1))
	if err != nil {
		return nil, fmt.Errorf("entry %q: %w", f.Name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("entry %q: larger than %d bytes", f.Name, limit)
	}
	return b, nil
}

func find(files []*zip.File, name string) *zip.File {
	for _, f := range files {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// open reads the zip directory of the VSIX in r (size bytes) through ctx and
// applies the archive safety rules to what the entries declare.
func open(ctx context.Context, r io.ReaderAt, size int64, lim Limits) (*zip.Reader, error) {
	zr, err := zip.NewReader(ctxio.ReaderAt(ctx, r), size)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("not a valid zip: %w", err)
	}
	if err := checkEntries(zr.File, size, lim); err != nil {
		return nil, err
	}
	return zr, nil
}

// manifest reads and parses extension.vsixmanifest.
func manifest(ctx context.Context, zr *zip.Reader) (vsixmanifest.Info, error) {
	mf := find(zr.File, ManifestPath)
	if mf == nil {
		return vsixmanifest.Info{}, fmt.Errorf("no %s in the VSIX", ManifestPath)
	}
	mb, err := readEntry(ctx, mf, maxMetaFile)
	if err != nil {
		return vsixmanifest.Info{}, err
	}
	info, err := vsixmanifest.Parse(mb)
	if err != nil {
		return vsixmanifest.Info{}, fmt.Errorf("%s: %w", ManifestPath, err)
	}
	return info, nil
}

// Identify returns what the extension.vsixmanifest of the VSIX in r (size
// bytes) says: identity, version, target platform. It reads the zip
// directory and the manifest only, after the archive safety checks on what
// the entries declare (DefaultLimits); it is the cheap check of a cache hit,
// not a validation (see Validate).
func Identify(ctx context.Context, r io.ReaderAt, size int64) (vsixmanifest.Info, error) {
	return IdentifyWithin(ctx, r, size, DefaultLimits)
}

// IdentifyWithin is Identify with the archive limits lim (a zero field: the
// default), the limits the file was accepted under when it was fetched.
func IdentifyWithin(ctx context.Context, r io.ReaderAt, size int64, lim Limits) (vsixmanifest.Info, error) {
	zr, err := open(ctx, r, size, lim.withDefaults())
	if err != nil {
		return vsixmanifest.Info{}, err
	}
	return manifest(ctx, zr)
}

// Validate checks the VSIX in r (size bytes) against want and the limits, and
// returns what it says about itself. It checks archive safety first, then the
// identity and target platform in extension.vsixmanifest, the agreement of
// extension/package.json, the engine range against want.VSCode, and finally
// reads every entry in full: an entry whose data is longer or shorter than it
// declares, fails its CRC-32, or does not decompress, fails the VSIX, and the
// bytes really read count against the limits. It stops with ctx's error when
// ctx is done.
func Validate(ctx context.Context, r io.ReaderAt, size int64, want Expect, lim Limits) (*vsixmanifest.Info, error) {
	lim = lim.withDefaults()
	zr, err := open(ctx, r, size, lim)
	if err != nil {
		return nil, err
	}
	parsed, err := manifest(ctx, zr)
	if err != nil {
		return nil, err
	}
	info := &parsed
	if !strings.EqualFold(info.ID(), want.ID) || info.Version != want.Version {
		return nil, fmt.Errorf("%s Identity is %s, want %s@%s", ManifestPath, safetext.Sanitize(info.ID()+"@"+info.Version), want.ID, want.Version)
	}
	wantTP := want.TargetPlatform
	if wantTP == "" {
		wantTP = Universal
	}
	if info.TargetPlatform != wantTP {
		return nil, fmt.Errorf("%s TargetPlatform is %q, want %q", ManifestPath, info.TargetPlatform, wantTP)
	}

	pf := find(zr.File, PackageJSONPath)
	if pf == nil {
		return nil, fmt.Errorf("no %s in the VSIX", PackageJSONPath)
	}
	pb, err := readEntry(ctx, pf, maxMetaFile)
	if err != nil {
		return nil, err
	}
	var pj packageJSON
	if err := json.Unmarshal(pb, &pj); err != nil {
		return nil, fmt.Errorf("%s: %w", PackageJSONPath, err)
	}
	if !strings.EqualFold(pj.Publisher, info.Publisher) || !strings.EqualFold(pj.Name, info.Name) || pj.Version != info.Version {
		return nil, fmt.Errorf("%s says %s, but %s says %s", PackageJSONPath, safetext.Sanitize(pj.Publisher+"."+pj.Name+"@"+pj.Version), ManifestPath, safetext.Sanitize(info.ID()+"@"+info.Version))
	}
	eng := pj.Engines["vscode"]
	if eng == "" {
		return nil, fmt.Errorf("%s has no engines.vscode", PackageJSONPath)
	}
	info.Engine = eng
	if info.Dependencies == nil {
		info.Dependencies = pj.ExtensionDependencies
	}
	if info.ExtensionPack == nil {
		info.ExtensionPack = pj.ExtensionPack
	}
	if want.VSCode != "" {
		ok, err := engine.Accepts(eng, want.VSCode)
		if err != nil {
			return nil, fmt.Errorf("%s engines.vscode %q: %w", PackageJSONPath, eng, err)
		}
		if !ok {
			return nil, fmt.Errorf("extension is not compatible with Code %s. Extension requires: %s", want.VSCode, safetext.Sanitize(eng))
		}
	}
	if err := readAll(ctx, zr.File, size, lim); err != nil {
		return nil, err
	}
	return info, nil
}

// readAll reads every entry to its end through archive/zip's checks (data
// longer than declared, shorter than declared, CRC-32), counting the bytes
// really produced against the limits.
func readAll(ctx context.Context, files []*zip.File, size int64, lim Limits) error {
	var total uint64
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if f.FileInfo().IsDir() {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return fmt.Errorf("entry %q: %w", f.Name, err)
		}
		budget := lim.MaxTotalBytes - int64(total)
		n, err := ctxio.Copy(ctx, io.Discard, io.LimitReader(rc, budget+1))
		rc.Close()
		total += uint64(n)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("entry %q: %w (its data does not match what it declares)", f.Name, err)
		}
		if err := lim.checkTotal(total, size, f.Name); err != nil {
			return err
		}
	}
	return nil
}
