package vsix

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/imagectl/imagectl/vscode/engine"
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
	MaxEntries int
	// MaxTotalBytes bounds the sum of uncompressed sizes (default 2 GiB).
	MaxTotalBytes int64
	// MaxRatio bounds uncompressed/compressed size of one entry (default
	// 200), checked for entries larger than RatioFloor.
	MaxRatio float64
	// RatioFloor is the uncompressed size from which MaxRatio applies
	// (default 1 MiB): small files of repeated bytes compress very well and
	// are harmless.
	RatioFloor int64
}

// DefaultLimits are generous enough for ms-python.python (tens of MB
// compressed, a few thousand files) and stop archive bombs.
var DefaultLimits = Limits{MaxEntries: 100000, MaxTotalBytes: 2 << 30, MaxRatio: 200, RatioFloor: 1 << 20}

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
	return l
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

// Info is what a valid VSIX says about itself.
type Info struct {
	Publisher      string
	Name           string
	Version        string
	TargetPlatform string
	Engine         string
	PreRelease     bool
	Dependencies   []string
	ExtensionPack  []string
}

// ID returns publisher.name.
func (i Info) ID() string { return i.Publisher + "." + i.Name }

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

// checkEntries applies the archive safety rules to every entry.
func checkEntries(files []*zip.File, lim Limits) error {
	if len(files) > lim.MaxEntries {
		return fmt.Errorf("%d entries, more than the limit of %d", len(files), lim.MaxEntries)
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
		total += f.UncompressedSize64
		if total > uint64(lim.MaxTotalBytes) {
			return fmt.Errorf("uncompressed size exceeds the limit of %d bytes (at entry %q)", lim.MaxTotalBytes, f.Name)
		}
		if f.UncompressedSize64 >= uint64(lim.RatioFloor) {
			c := f.CompressedSize64
			if c == 0 {
				c = 1
			}
			if r := float64(f.UncompressedSize64) / float64(c); r > lim.MaxRatio {
				return fmt.Errorf("entry %q: compression ratio %.0f exceeds the limit of %.0f", f.Name, r, lim.MaxRatio)
			}
		}
	}
	return nil
}

func readEntry(f *zip.File, limit int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("entry %q: %w", f.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
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

// Validate checks the VSIX in r (size bytes) against want and the limits, and
// returns what it says about itself. It checks archive safety first, then the
// identity and target platform in extension.vsixmanifest, the agreement of
// extension/package.json, and the engine range against want.VSCode.
func Validate(r io.ReaderAt, size int64, want Expect, lim Limits) (*Info, error) {
	lim = lim.withDefaults()
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("not a valid zip: %w", err)
	}
	if err := checkEntries(zr.File, lim); err != nil {
		return nil, err
	}
	mf := find(zr.File, ManifestPath)
	if mf == nil {
		return nil, fmt.Errorf("no %s in the VSIX", ManifestPath)
	}
	mb, err := readEntry(mf, maxMetaFile)
	if err != nil {
		return nil, err
	}
	parsed, err := ParseManifest(mb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestPath, err)
	}
	info := &parsed
	if !strings.EqualFold(info.ID(), want.ID) || info.Version != want.Version {
		return nil, fmt.Errorf("%s Identity is %s@%s, want %s@%s", ManifestPath, info.ID(), info.Version, want.ID, want.Version)
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
	pb, err := readEntry(pf, maxMetaFile)
	if err != nil {
		return nil, err
	}
	var pj packageJSON
	if err := json.Unmarshal(pb, &pj); err != nil {
		return nil, fmt.Errorf("%s: %w", PackageJSONPath, err)
	}
	if !strings.EqualFold(pj.Publisher, info.Publisher) || !strings.EqualFold(pj.Name, info.Name) || pj.Version != info.Version {
		return nil, fmt.Errorf("%s says %s.%s@%s, but %s says %s@%s", PackageJSONPath, pj.Publisher, pj.Name, pj.Version, ManifestPath, info.ID(), info.Version)
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
			return nil, fmt.Errorf("extension is not compatible with Code %s. Extension requires: %s", want.VSCode, eng)
		}
	}
	return info, nil
}
