package catalog

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/imagectl/imagectl/internal/pep440"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/vscode/engine"
)

// The grammar of the values the catalog holds.
var (
	// versionRE keeps versions usable as path elements and tag parts: no
	// slash, no "..", nothing but what semver and PEP 440 use.
	versionRE = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)
	// ociTagRE is the OCI distribution tag grammar.
	ociTagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	// ociPlatformRE is os/architecture[/variant], e.g. linux/arm/v7.
	ociPlatformRE = regexp.MustCompile(`^[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?$`)
	// extensionIDRE is publisher.name, as matrix.yaml writes extension ids.
	extensionIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*\.[A-Za-z0-9][A-Za-z0-9-]*$`)
)

// wheelPlatforms are the keys of PythonPackage.Pythons: the OCI platforms
// upstream/pypi reads from wheel tags, and "any" for a pure wheel.
var wheelPlatforms = map[string]bool{"linux/amd64": true, "linux/arm64": true, "any": true}

// targetPlatforms are VS Code's extension target platforms.
var targetPlatforms = map[string]bool{
	"universal": true, "web": true,
	"linux-x64": true, "linux-arm64": true, "linux-armhf": true,
	"alpine-x64": true, "alpine-arm64": true,
	"darwin-x64": true, "darwin-arm64": true,
	"win32-x64": true, "win32-arm64": true, "win32-ia32": true,
}

// Validate checks every field resolution and fetching use: versions,
// digests, hashes, URLs, platforms, engines and identifiers must be well
// formed, and no version, extension or runtime may appear twice. Nothing is
// skipped: the first malformed value is reported as an *Error with its JSON
// path (File empty). Load validates what it reads and Write what it writes.
func Validate(c *Catalog) error {
	v := &validator{}
	v.catalog(c)
	if v.err != nil {
		return v.err
	}
	return nil
}

type validator struct{ err *Error }

// fail records the first problem.
func (v *validator) fail(path, format string, args ...any) {
	if v.err == nil {
		v.err = &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
	}
}

func (v *validator) catalog(c *Catalog) {
	if c.SchemaVersion != SchemaVersion {
		v.fail("schemaVersion", "%d: want %d (run imagectl matrix refresh)", c.SchemaVersion, SchemaVersion)
	}
	if _, err := time.Parse(time.DateOnly, c.Describes); err != nil {
		v.fail("describes", "%s: want the date the facts describe, YYYY-MM-DD", quote(c.Describes))
	}
	if i := strings.IndexFunc(c.Origin, unicode.IsControl); i >= 0 {
		v.fail("origin", "control character %q at byte %d: want plain text", c.Origin[i:i+1], i)
	}
	seen := map[string]int{}
	for i, cs := range c.CodeServer {
		p := fmt.Sprintf("codeServer[%d]", i)
		v.version(p+".version", cs.Version)
		v.duplicate(seen, cs.Version, p+".version", "codeServer[%d]")
		v.codeServer(p, cs)
	}
	if t := c.ToolsImage; t != nil {
		if t.Ref == "" {
			v.fail("toolsImage.ref", "empty: want matrix.yaml's build.toolsImage")
		} else if _, err := name.ParseReference(t.Ref); err != nil {
			v.fail("toolsImage.ref", "%s: want an image reference such as %s", quote(t.Ref), matrix.DefaultToolsImage)
		}
		v.digest("toolsImage.digest", t.Digest, true)
	}
	seen = map[string]int{}
	for i, r := range c.PythonRuntimes {
		p := fmt.Sprintf("pythonRuntimes[%d]", i)
		v.runtime(p, r)
		v.duplicate(seen, r.Python+" "+r.Repository+" "+r.Release+" "+r.Flavor, p+".python", "pythonRuntimes[%d] (the same python, repository, release and flavor)")
	}
	for _, pkg := range []struct {
		field string
		list  []PythonPackage
	}{{"ray", c.Ray}, {"debugpy", c.Debugpy}} {
		seen := map[string]int{}
		for i, pp := range pkg.list {
			p := fmt.Sprintf("%s[%d]", pkg.field, i)
			v.pythonPackage(p, pp)
			v.duplicate(seen, pp.Version, p+".version", pkg.field+"[%d]")
		}
	}
	seen = map[string]int{}
	for i, l := range c.PythonLocks {
		p := fmt.Sprintf("pythonLocks[%d]", i)
		v.pythonLock(p, l)
		v.duplicate(seen, l.Key().String(), p, "pythonLocks[%d] (the same ray, rayExtras, debugpy, python and platform)")
	}
	seen = map[string]int{}
	for i, rec := range c.Extensions {
		p := fmt.Sprintf("extensions[%d]", i)
		if !extensionIDRE.MatchString(rec.ID) {
			v.fail(p+".id", "%s: want publisher.name, e.g. ms-python.python", quote(rec.ID))
		}
		if rec.Source != matrix.SourceMarketplace && rec.Source != matrix.SourceOpenVSX {
			v.fail(p+".source", "%s: want %s or %s", quote(rec.Source), matrix.SourceMarketplace, matrix.SourceOpenVSX)
		}
		v.duplicate(seen, strings.ToLower(rec.ID)+" "+rec.Source, p, "extensions[%d] (the same id and source; ids are case-insensitive)")
		seenV := map[string]int{}
		for j, ev := range rec.Versions {
			pv := fmt.Sprintf("%s.versions[%d]", p, j)
			v.extensionVersion(pv, ev)
			v.duplicate(seenV, fmt.Sprintf("%s %t", ev.Version, ev.PreRelease), pv+".version", p+".versions[%d] (the same version and preRelease)")
		}
	}
}

// codeServer checks one codeServer entry's VS Code version, tag and
// digests (p is its path).
func (v *validator) codeServer(p string, cs CodeServer) {
	if cs.VSCode != "" {
		if _, err := engine.ParseVersion(cs.VSCode); err != nil {
			v.fail(p+".vscode", "%s: want the bundled VS Code version MAJOR.MINOR.PATCH, e.g. 1.101.2", quote(cs.VSCode))
		}
	}
	if cs.VSCodeFrom != "" && cs.VSCodeFrom != VSCodeFromImage {
		v.fail(p+".vscodeFrom", "%s: want %q (read from the base image) or nothing", quote(cs.VSCodeFrom), VSCodeFromImage)
	}
	if cs.Tag != "" && !ociTagRE.MatchString(cs.Tag) {
		v.fail(p+".tag", "%s: want an image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}, no digest)", quote(cs.Tag))
	}
	v.digest(p+".indexDigest", cs.IndexDigest, true)
	for _, pl := range slices.Sorted(maps.Keys(cs.Platforms)) {
		pp := joinKey(p+".platforms", pl)
		if !ociPlatformRE.MatchString(pl) {
			v.fail(pp, "key %s: want an OCI platform os/architecture[/variant], e.g. linux/arm64", quote(pl))
		}
		v.digest(pp, cs.Platforms[pl], false)
	}
}

// duplicate fails when key was seen before; first names the earlier
// occurrence, with %d for its index.
func (v *validator) duplicate(seen map[string]int, key, path, first string) {
	if i, ok := seen[key]; ok {
		v.fail(path, "duplicate of "+first, i)
		return
	}
	seen[key] = len(seen)
}

// version checks a code-server or extension version (semver, or failing
// that PEP 440) that also ends up in file names, tags and labels.
func (v *validator) version(path, s string) {
	if !versionRE.MatchString(s) {
		v.fail(path, "%s: want a version such as 2.46.0 (letters, digits, . + _ - only)", quote(s))
		return
	}
	_, errSemver := ParseVersion(s)
	_, errPEP440 := pep440.Parse(s)
	if errSemver != nil && errPEP440 != nil {
		v.fail(path, "%s: want a semver or PEP 440 version", quote(s))
	}
}

// pythonVersion checks a Python package version (Ray, debugpy): PEP 440.
func (v *validator) pythonVersion(path, s string) {
	if !versionRE.MatchString(s) {
		v.fail(path, "%s: want a version such as 2.46.0 (letters, digits, . + _ - only)", quote(s))
		return
	}
	if _, err := pep440.Parse(s); err != nil {
		v.fail(path, "%s: want a PEP 440 version", quote(s))
	}
}

// digest checks "sha256:<64 lowercase hex>"; optional allows "".
func (v *validator) digest(path, d string, optional bool) {
	if d == "" && optional {
		return
	}
	if !validDigest(d) {
		v.fail(path, "%s: want sha256:<64 lowercase hex digits>", quote(d))
	}
}

// sha256 checks a bare hex digest; "" means not pinned (yet).
func (v *validator) sha256(path, h string) {
	if h != "" && !validHex(h) {
		v.fail(path, "%s: want 64 lowercase hex digits (no sha256: prefix), or nothing", quote(h))
	}
}

// url checks an absolute http(s) URL; optional allows "".
func (v *validator) url(path, s string, optional bool) {
	if s == "" && optional {
		return
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.IndexFunc(s, unicode.IsControl) >= 0:
		v.fail(path, "%s: want an absolute http(s) URL", quote(safetext.URL(s)))
	case u.User != nil:
		v.fail(path, "%s: want a URL without user or password (the catalog is committed; a private index's credentials come from pip's netrc or keyring)", quote(safetext.URL(s)))
	}
}

func (v *validator) runtime(p string, r PythonRuntime) {
	if _, ok := PythonMinor(r.Python); !ok {
		v.fail(p+".python", "%s: want a CPython minor version such as 3.12", quote(r.Python))
	}
	if !strings.HasPrefix(r.Version, r.Python+".") || !versionRE.MatchString(r.Version) {
		v.fail(p+".version", "%s: want a %s.N version", quote(r.Version), r.Python)
	}
	for _, f := range []struct{ field, val string }{{"repository", r.Repository}, {"release", r.Release}, {"flavor", r.Flavor}} {
		if f.val == "" {
			v.fail(p+"."+f.field, "missing: repository, release and flavor are required")
		}
	}
	for _, pl := range slices.Sorted(maps.Keys(r.Files)) {
		pp := joinKey(p+".files", pl)
		if _, ok := runtimeArches[pl]; !ok {
			v.fail(pp, "key %s: want linux/amd64 or linux/arm64", quote(pl))
		}
		f := r.Files[pl]
		v.url(pp+".url", f.URL, false)
		if !validHex(f.SHA256) {
			v.fail(pp+".sha256", "%s: want 64 lowercase hex digits", quote(f.SHA256))
		}
		if f.Size < 0 {
			v.fail(pp+".size", "%d: want a size in bytes, or nothing", f.Size)
		}
	}
	for _, pl := range slices.Sorted(maps.Keys(runtimeArches)) {
		if _, ok := r.Files[pl]; !ok {
			v.fail(p+".files", "no file for %s: want one tarball each for linux/amd64 and linux/arm64", pl)
		}
	}
}

func (v *validator) pythonPackage(p string, pp PythonPackage) {
	v.pythonVersion(p+".version", pp.Version)
	if pp.RequiresPython != "" {
		if _, err := pep440.PythonSatisfies(pp.RequiresPython, "3.12"); err != nil {
			v.fail(p+".requiresPython", "%s: want a PEP 440 specifier such as >=3.9", quote(pp.RequiresPython))
		}
	}
	for _, pl := range slices.Sorted(maps.Keys(pp.Pythons)) {
		pk := joinKey(p+".pythons", pl)
		if !wheelPlatforms[pl] {
			v.fail(pk, "key %s: want linux/amd64, linux/arm64 or any (a pure-Python wheel)", quote(pl))
		}
		seen := map[string]int{}
		for i, py := range pp.Pythons[pl] {
			pi := fmt.Sprintf("%s[%d]", pk, i)
			if pl == "any" {
				if py != "any" {
					v.fail(pi, "%s: want any (the pure-Python wheel of the any platform)", quote(py))
				}
			} else if _, ok := PythonMinor(py); !ok {
				v.fail(pi, "%s: want a CPython minor version such as 3.12", quote(py))
			}
			v.duplicate(seen, py, pi, pk+"[%d]")
		}
	}
}

func (v *validator) extensionVersion(p string, ev ExtensionVersion) {
	v.version(p+".version", ev.Version)
	if ev.Engine == "" {
		v.fail(p+".engine", "missing: want engines.vscode, e.g. ^1.90.0")
	} else if _, err := engine.ParseRange(ev.Engine); err != nil {
		v.fail(p+".engine", "%s: want engines.vscode, e.g. ^1.90.0", quote(ev.Engine))
	}
	for _, l := range []struct {
		field string
		ids   []string
	}{{"dependencies", ev.Dependencies}, {"extensionPack", ev.ExtensionPack}} {
		seen := map[string]int{}
		for i, id := range l.ids {
			pi := fmt.Sprintf("%s.%s[%d]", p, l.field, i)
			if !extensionIDRE.MatchString(id) {
				v.fail(pi, "%s: want an extension id publisher.name", quote(id))
			}
			v.duplicate(seen, strings.ToLower(id), pi, p+"."+l.field+"[%d]")
		}
	}
	if len(ev.Files) == 0 {
		v.fail(p+".files", "none: want at least one VSIX (universal or per target platform)")
	}
	for _, tp := range slices.Sorted(maps.Keys(ev.Files)) {
		pf := joinKey(p+".files", tp)
		if !targetPlatforms[tp] {
			v.fail(pf, "key %s: want a VS Code target platform (universal, linux-x64, linux-arm64, ...)", quote(tp))
		}
		f := ev.Files[tp]
		v.url(pf+".url", f.URL, true)
		v.sha256(pf+".sha256", f.SHA256)
		if f.Size < 0 {
			v.fail(pf+".size", "%d: want a size in bytes, or nothing", f.Size)
		}
	}
}
