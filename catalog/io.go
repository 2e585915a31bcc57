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
	for i, r := range c.PythonRuntimes {
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("catalog %s: pythonRuntimes[%d]: %w", path, i, err)
		}
	}
	lockKeys := map[string]int{}
	for i, l := range c.PythonLocks {
		if err := l.check(); err != nil {
			return nil, fmt.Errorf("catalog %s: pythonLocks[%d] (%s): %w", path, i, l.Key(), err)
		}
		if j, dup := lockKeys[l.Key().String()]; dup {
			return nil, fmt.Errorf("catalog %s: pythonLocks[%d] locks %s again (as pythonLocks[%d])", path, i, l.Key(), j)
		}
		lockKeys[l.Key().String()] = i
	}
	Normalize(&c)
	return &c, nil
}

// check reports the first malformed field of r.
func (r PythonRuntime) check() error {
	if _, ok := PythonMinor(r.Python); !ok {
		return fmt.Errorf("python %q: want a CPython minor version such as 3.12", r.Python)
	}
	if !strings.HasPrefix(r.Version, r.Python+".") {
		return fmt.Errorf("version %q: want a %s.N version", r.Version, r.Python)
	}
	if r.Repository == "" || r.Release == "" || r.Flavor == "" {
		return fmt.Errorf("python %s: repository, release and flavor are required", r.Python)
	}
	for _, p := range sortedKeys(runtimeArches) {
		f, ok := r.Files[p]
		if !ok {
			return fmt.Errorf("python %s: no file for %s", r.Python, p)
		}
		if !strings.HasPrefix(f.URL, "https://") && !strings.HasPrefix(f.URL, "http://") {
			return fmt.Errorf("python %s: files[%s].url %q: want an http(s) URL", r.Python, p, f.URL)
		}
		if !validHex(f.SHA256) {
			return fmt.Errorf("python %s: files[%s].sha256 %q: want 64 lowercase hex digits", r.Python, p, f.SHA256)
		}
	}
	if len(r.Files) != len(runtimeArches) {
		return fmt.Errorf("python %s: files for %d platforms, want linux/amd64 and linux/arm64", r.Python, len(r.Files))
	}
	return nil
}

func validHex(s string) bool { return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == "" }

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// validDigest reports whether d is "sha256:" and 64 lowercase hex digits.
func validDigest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	return ok && validHex(hex)
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
