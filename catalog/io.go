package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/imagectl/imagectl/internal/safefile"
)

// maxCatalogSize bounds catalog.json.
const maxCatalogSize = 64 << 20

// Load reads a catalog snapshot: a regular file of at most 64 MiB, read
// without following it into a FIFO or device, then Parse.
func Load(path string) (*Catalog, error) {
	b, err := safefile.ReadFile(path, maxCatalogSize)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading catalog: %w (run imagectl matrix refresh to create it)", err)
		}
		return nil, fmt.Errorf("reading catalog: %w", err)
	}
	return Parse(path, b)
}

// Parse decodes and validates catalog.json content; name (usually the
// path) starts every error, which is an *Error naming the JSON path of the
// first problem: invalid UTF-8 or JSON, a duplicate or unknown key, a value
// of the wrong type, data after the document (decode, which also names the
// line), or a malformed or duplicate entry (Validate). The result is
// normalized.
func Parse(name string, data []byte) (*Catalog, error) {
	if len(data) > maxCatalogSize {
		return nil, &Error{File: name, Msg: fmt.Sprintf("larger than the limit of %s", safefile.FormatSize(maxCatalogSize))}
	}
	if !utf8.Valid(data) {
		return nil, &Error{File: name, Msg: "not UTF-8 text"}
	}
	var c Catalog
	if err := decode(data, &c); err != nil {
		err.File = name
		return nil, err
	}
	if err := Validate(&c); err != nil {
		return nil, withFile(name, err)
	}
	Normalize(&c)
	return &c, nil
}

func withFile(name string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		e.File = name
		return e
	}
	return fmt.Errorf("%s: %w", name, err)
}

// check reports the first malformed field of r (the rules of Validate).
func (r PythonRuntime) check() error {
	v := &validator{}
	v.runtime("python "+r.Python, r)
	if v.err != nil {
		return v.err
	}
	return nil
}

func validHex(s string) bool { return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == "" }

// validDigest reports whether d is "sha256:" and 64 lowercase hex digits.
func validDigest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	return ok && validHex(hex)
}

// NewestCodeServerFirst orders code-server versions newest first (semver),
// as Normalize sorts them.
func NewestCodeServerFirst(a, b CodeServer) int { return CompareVersions(b.Version, a.Version) }

// NewestPythonPackageFirst orders Ray or debugpy releases newest first
// (PEP 440), as Normalize sorts them.
func NewestPythonPackageFirst(a, b PythonPackage) int {
	return ComparePythonVersions(b.Version, a.Version)
}

// NewestExtensionVersionFirst orders extension versions newest first
// (semver), a release before a pre-release of the same version, as
// Normalize sorts them.
func NewestExtensionVersionFirst(a, b ExtensionVersion) int {
	if d := CompareVersions(b.Version, a.Version); d != 0 {
		return d
	}
	return boolCmp(a.PreRelease, b.PreRelease)
}

// Normalize sorts everything in c so that equal catalogs encode identically:
// versions newest first, extensions by id then source, string lists sorted.
func Normalize(c *Catalog) {
	slices.SortStableFunc(c.CodeServer, NewestCodeServerFirst)
	for _, ps := range [][]PythonPackage{c.Ray, c.Debugpy} {
		slices.SortStableFunc(ps, NewestPythonPackageFirst)
		for _, p := range ps {
			for k := range p.Pythons {
				slices.SortFunc(p.Pythons[k], ComparePythons)
				p.Pythons[k] = slices.Compact(p.Pythons[k])
			}
		}
	}
	normalizePythonLocks(c.PythonLocks)
	slices.SortStableFunc(c.PythonRuntimes, func(a, b PythonRuntime) int { return ComparePythons(a.Python, b.Python) })
	slices.SortStableFunc(c.Extensions, func(a, b ExtensionRecord) int {
		if d := strings.Compare(strings.ToLower(a.ID), strings.ToLower(b.ID)); d != 0 {
			return d
		}
		return strings.Compare(a.Source, b.Source)
	})
	for i := range c.Extensions {
		vs := c.Extensions[i].Versions
		slices.SortStableFunc(vs, NewestExtensionVersionFirst)
		for j := range vs {
			slices.Sort(vs[j].Dependencies)
			slices.Sort(vs[j].ExtensionPack)
		}
	}
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// ComparePythons orders CPython minor versions numerically ("3.9" < "3.12");
// anything else sorts after, by string.
func ComparePythons(a, b string) int {
	ma, oka := PythonMinor(a)
	mb, okb := PythonMinor(b)
	switch {
	case oka && okb:
		return ma - mb
	case oka:
		return -1
	case okb:
		return 1
	}
	return strings.Compare(a, b)
}

// PythonMinor returns N for "3.N".
func PythonMinor(v string) (int, bool) {
	rest, ok := strings.CutPrefix(v, "3.")
	if !ok || rest == "" || len(rest) > 3 {
		return 0, false
	}
	n := 0
	for _, r := range rest {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = n*10 + int(r-'0')
	}
	return n, true
}

// Marshal validates c (so that nothing writes a catalog Load would
// refuse) and encodes it deterministically: normalized (in place), 2-space
// indented, with a trailing newline.
func Marshal(c *Catalog) ([]byte, error) {
	if err := Validate(c); err != nil {
		return nil, fmt.Errorf("encoding catalog: %w", err)
	}
	Normalize(c)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // keep ">=1.8.0" readable
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("encoding catalog: %w", err)
	}
	return b.Bytes(), nil // Encode ends with a newline
}

// MarshalJSON encodes c with its always-present lists (codeServer, ray,
// debugpy, extensions) as [] when empty: Parse refuses null for a list.
func (c Catalog) MarshalJSON() ([]byte, error) {
	type plain Catalog
	p := plain(c)
	p.CodeServer = orEmpty(p.CodeServer)
	p.Ray = orEmpty(p.Ray)
	p.Debugpy = orEmpty(p.Debugpy)
	p.Extensions = orEmpty(p.Extensions)
	return encodeNoEscape(p)
}

// MarshalJSON encodes r with its versions as [] when there are none.
func (r ExtensionRecord) MarshalJSON() ([]byte, error) {
	type plain ExtensionRecord
	p := plain(r)
	p.Versions = orEmpty(p.Versions)
	return encodeNoEscape(p)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// encodeNoEscape is json.Marshal without HTML escaping (">=1.8.0" stays
// readable), as Marshal encodes.
func encodeNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Write writes c to path atomically: a temporary file in the same directory,
// synced, then renamed over path. On any error path is left as it was and
// the temporary file is removed.
func Write(path string, c *Catalog) error {
	b, err := Marshal(c)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, b, 0o644)
}

// WriteFileAtomic writes data to path through a temporary file and a rename.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
