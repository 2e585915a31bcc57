package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxCatalogSize bounds catalog.json.
const maxCatalogSize = 64 << 20

// Load reads a catalog snapshot.
func Load(path string) (*Catalog, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading catalog: %w (run imagectl matrix refresh to create it)", err)
	}
	if len(b) > maxCatalogSize {
		return nil, fmt.Errorf("catalog %s: larger than %d bytes", path, maxCatalogSize)
	}
	var c Catalog
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	if c.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("catalog %s: schemaVersion %d, want %d (run imagectl matrix refresh)", path, c.SchemaVersion, SchemaVersion)
	}
	if t := c.ToolsImage; t != nil {
		if t.Ref == "" {
			return nil, fmt.Errorf("catalog %s: toolsImage.ref is empty (want matrix.yaml's build.toolsImage)", path)
		}
		if t.Digest != "" && !validDigest(t.Digest) {
			return nil, fmt.Errorf("catalog %s: toolsImage.digest %q: want sha256:<64 hex digits> or nothing", path, t.Digest)
		}
	}
	Normalize(&c)
	return &c, nil
}

// validDigest reports whether d is "sha256:" and 64 lowercase hex digits.
func validDigest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	return ok && len(hex) == 64 && strings.Trim(hex, "0123456789abcdef") == ""
}

// Normalize sorts everything in c so that equal catalogs encode identically:
// versions newest first, extensions by id then source, string lists sorted.
func Normalize(c *Catalog) {
	slices.SortStableFunc(c.CodeServer, func(a, b CodeServer) int { return CompareVersions(b.Version, a.Version) })
	for _, ps := range [][]PythonPackage{c.Ray, c.Debugpy} {
		slices.SortStableFunc(ps, func(a, b PythonPackage) int { return CompareVersions(b.Version, a.Version) })
		for _, p := range ps {
			for k := range p.Pythons {
				slices.SortFunc(p.Pythons[k], ComparePythons)
				p.Pythons[k] = slices.Compact(p.Pythons[k])
			}
		}
	}
	slices.SortStableFunc(c.Extensions, func(a, b ExtensionRecord) int {
		if d := strings.Compare(strings.ToLower(a.ID), strings.ToLower(b.ID)); d != 0 {
			return d
		}
		return strings.Compare(a.Source, b.Source)
	})
	for i := range c.Extensions {
		vs := c.Extensions[i].Versions
		slices.SortStableFunc(vs, func(a, b ExtensionVersion) int {
			if d := CompareVersions(b.Version, a.Version); d != 0 {
				return d
			}
			// Same version as release and pre-release: release first.
			return boolCmp(a.PreRelease, b.PreRelease)
		})
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

// Marshal encodes c deterministically: normalized (in place), 2-space
// indented, with a trailing newline.
func Marshal(c *Catalog) ([]byte, error) {
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
