package verify

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/vscode/vsixmanifest"
)

// platform checks one platform image: config platform, labels, and (unless
// skipped) its contents. It returns the parsed lock, or nil.
func (v *verifier) platform(ctx context.Context, mi manifestInfo, img v1.Image, m *Manifest) *imagespec.Set {
	fail := func(c Check, where, format string, args ...any) {
		v.fail(Failure{Check: c, Platform: mi.platform, Digest: mi.ref.DigestStr(), Where: where, Message: fmt.Sprintf(format, args...)})
	}
	cf, err := img.ConfigFile()
	if err != nil {
		fail(CheckContents, "config", "reading image config: %v", err)
		return nil
	}
	// knownPlatform: the index or the config names the platform, which
	// the extension checks need.
	knownPlatform := true
	switch cfp, ok := configPlatform(cf); {
	case !ok && mi.platform != "" && mi.platform != noPlatform:
		fail(CheckPlatforms, "config", "image config names no OS/architecture (os %q, architecture %q), index says %s", cf.OS, cf.Architecture, mi.platform)
	case !ok:
		knownPlatform = false
		fail(CheckPlatforms, "config", "image config names no OS/architecture (os %q, architecture %q): cannot tell which platform the image is for, so its extensions are not checked", cf.OS, cf.Architecture)
	case mi.platform != "" && !imagespec.SamePlatform(cfp, mi.platform):
		fail(CheckPlatforms, "config", "image config says %s, index says %s", cfp, mi.platform)
	}
	labels := cf.Config.Labels
	lock := checkLabels(labels, func(where, format string, args ...any) { fail(CheckLabels, where, format, args...) })
	if v.o.skipContents {
		return lock
	}
	fs, err := scan(ctx, img, v.o.maxFileBytes, v.o.maxImageBytes)
	if err != nil {
		fail(CheckContents, "layers", "%v", err)
		return lock
	}
	c := &Contents{}
	m.Contents = c
	if knownPlatform {
		checkExtensions(fs, mi.platform, lock, labels, c, func(where, format string, args ...any) { fail(CheckExtensions, where, format, args...) })
	}
	checkPython(fs, lock, labels, c, func(where, format string, args ...any) { fail(CheckPython, where, format, args...) })
	checkInterpreter(fs, cf.Config.Env, c, func(where, format string, args ...any) { fail(CheckPython, where, format, args...) })
	checkDebuggerSettings(fs, func(where, format string, args ...any) { fail(CheckExtensions, where, format, args...) })
	return lock
}

// checkDebuggerSettings checks the debugger extension's cluster dashboards
// in code-server's user settings (imagespec.DebuggerSettingsProblems): a
// localRoot other than imagespec.DebuggerLocalRoot makes a paused task's
// source unreachable. A missing or malformed settings.json is
// checkInterpreter's failure.
func checkDebuggerSettings(fs files, fail failFn) {
	raw := fs[imagespec.SettingsPath]
	var settings map[string]json.RawMessage
	if raw == nil || json.Unmarshal(raw, &settings) != nil {
		return
	}
	for _, p := range imagespec.DebuggerSettingsProblems(settings[imagespec.SettingClusterDashboards]) {
		fail(imagespec.SettingsPath, "%s", p)
	}
}

type failFn func(where, format string, args ...any)

// checkLabels checks that every imagectl label is present and agrees with
// the lock label.
func checkLabels(labels map[string]string, fail failFn) *imagespec.Set {
	for _, l := range []string{imagespec.LabelLock, imagespec.LabelCodeServer, imagespec.LabelVSCode, imagespec.LabelRay, imagespec.LabelPython, imagespec.LabelDebugpy, imagespec.LabelExtensions, imagespec.LabelInputs} {
		if strings.TrimSpace(labels[l]) == "" {
			fail("label "+l, "missing")
		}
	}
	raw := labels[imagespec.LabelLock]
	if raw == "" {
		return nil
	}
	set, err := imagespec.DecodeLock(raw)
	if err != nil {
		fail("label "+imagespec.LabelLock, "not a resolved set: %v", err)
		return nil
	}
	want := map[string]string{
		imagespec.LabelCodeServer: set.CodeServer.Version,
		imagespec.LabelVSCode:     set.CodeServer.VSCode,
		imagespec.LabelRay:        set.Ray,
		imagespec.LabelPython:     set.Python,
		imagespec.LabelDebugpy:    set.Debugpy,
		imagespec.LabelExtensions: extensionsLabel(set.Extensions),
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if got, ok := labels[k]; ok && got != "" && got != want[k] {
			fail("label "+k, "%q, but the lock (%s) says %q", got, imagespec.LabelLock, want[k])
		}
	}
	return &set
}

func extensionsLabel(exts []imagespec.Extension) string {
	s := make([]string, len(exts))
	for i, e := range exts {
		s[i] = e.ID + "@" + e.Version
	}
	return strings.Join(s, ",")
}

// files holds the files of interest of one flattened image filesystem, by
// absolute path.
type files map[string][]byte

var (
	extDirRe  = regexp.MustCompile(`^` + regexp.QuoteMeta(imagespec.ExtensionsDir) + `/([^/]+)/(package\.json|\.vsixmanifest)$`)
	distRe    = regexp.MustCompile(`^(.*/(python[0-9][0-9.]*)/(?:site|dist)-packages)/([^/]+)\.dist-info/METADATA$`)
	stdlibRe  = regexp.MustCompile(`^/(?:usr/(?:local/)?)?lib/(python[0-9]+\.[0-9]+)/os\.py$`)
	extJSON   = imagespec.ExtensionsDir + "/extensions.json"
	maxFilesN = 5_000_000
)

// scan reads the flattened filesystem of img (whiteouts applied) and keeps
// the files verify reads, each bounded by maxFile; the whole stream is
// bounded by maxTotal uncompressed bytes and maxFilesN entries.
func scan(ctx context.Context, img v1.Image, maxFile, maxTotal int64) (files, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	counted := &countingReader{r: rc, limit: maxTotal}
	tr := tar.NewReader(counted)
	fs := files{}
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if n > maxFilesN {
			return nil, fmt.Errorf("more than %d entries in the image filesystem", maxFilesN)
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			// mutate.Extract ends its tar stream (end-of-archive marker)
			// before it reports an error on the pipe (a layer whose digest
			// does not match what the manifest names): read on to get it.
			if _, err := io.Copy(io.Discard, counted); err != nil {
				return nil, fmt.Errorf("reading image filesystem: %w", err)
			}
			break
		}
		if err != nil {
			if counted.exceeded {
				return nil, fmt.Errorf("image filesystem larger than %d bytes", maxTotal)
			}
			return nil, fmt.Errorf("reading image filesystem: %w", err)
		}
		p, ok := cleanPath(h.Name)
		if !ok || h.Typeflag != tar.TypeReg {
			if ok && (h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink) && interesting(p) {
				fs[p] = nil // present but not a regular file; reported by the checks
			}
			continue
		}
		if !interesting(p) {
			continue
		}
		if presenceOnly(p) {
			fs[p] = []byte{} // a regular file; its content is not read
			continue
		}
		if h.Size > maxFile {
			return nil, fmt.Errorf("%s: %d bytes, more than the %d-byte limit", p, h.Size, maxFile)
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxFile+1))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		fs[p] = b
	}
	return fs, nil
}

type countingReader struct {
	r        io.Reader
	n, limit int64
	exceeded bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= c.limit {
		c.exceeded = true
		return 0, fmt.Errorf("image filesystem larger than %d bytes", c.limit)
	}
	if int64(len(p)) > c.limit-c.n {
		p = p[:c.limit-c.n]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// cleanPath turns a tar entry name into an absolute clean path; names that
// climb out of the root are rejected.
func cleanPath(n string) (string, bool) {
	if n == "" || strings.Contains(n, "\x00") {
		return "", false
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", false
		}
	}
	return path.Clean("/" + n), true
}

func interesting(p string) bool {
	return p == extJSON || p == imagespec.SettingsPath || presenceOnly(p) || extDirRe.MatchString(p) || distRe.MatchString(p) || stdlibRe.MatchString(p)
}

// presenceOnly names the files whose existence, not content, is checked.
func presenceOnly(p string) bool { return p == imagespec.InterpreterPath }

// checkInterpreter checks that the shipped interpreter is the one code-server
// and its terminal use: it exists, the user settings name it, VIRTUAL_ENV is
// its environment and its bin/ comes first on PATH.
func checkInterpreter(fs files, env []string, c *Contents, fail failFn) {
	if _, ok := fs[imagespec.InterpreterPath]; !ok {
		fail(imagespec.InterpreterPath, "missing: the image ships no interpreter there")
	}
	raw, ok := fs[imagespec.SettingsPath]
	switch {
	case !ok || raw == nil:
		fail(imagespec.SettingsPath, "missing or not a regular file")
	default:
		var settings map[string]any
		if err := json.Unmarshal(raw, &settings); err != nil {
			fail(imagespec.SettingsPath, "not a JSON object: %v", err)
			break
		}
		got, _ := settings[imagespec.SettingInterpreterPath].(string)
		c.InterpreterSetting = got
		if got != imagespec.InterpreterPath {
			fail(imagespec.SettingsPath, "%s is %q, want %s", imagespec.SettingInterpreterPath, got, imagespec.InterpreterPath)
		}
	}
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	c.VirtualEnv = vars["VIRTUAL_ENV"]
	if c.VirtualEnv != imagespec.PythonDir {
		fail("config Env", "VIRTUAL_ENV is %q, want %s", c.VirtualEnv, imagespec.PythonDir)
	}
	first, _, _ := strings.Cut(vars["PATH"], ":")
	if first != imagespec.PythonDir+"/bin" {
		fail("config Env", "PATH %q does not start with %s/bin", vars["PATH"], imagespec.PythonDir)
	}
}

// checkExtensions compares installed extensions with the lock and labels.
func checkExtensions(fs files, platform string, lock *imagespec.Set, labels map[string]string, c *Contents, fail failFn) {
	want, err := imagespec.VSCodeTarget(platform)
	if err != nil {
		fail("platform", "no VS Code target platform for %s", platform)
	}
	installed := installedExtensions(fs, c, fail)

	// Against the lock: every locked extension, at its version and target.
	if lock != nil {
		checkLockedExtensions(lock, installed, c, platform, want, fail)
	} else {
		// Without a lock, at least every installed extension must fit the architecture.
		for _, e := range c.Extensions {
			if e.TargetPlatform != "" && e.TargetPlatform != imagespec.VSCodeUniversal && e.TargetPlatform != want {
				fail(e.Dir+"/.vsixmanifest", "TargetPlatform %s, want %s", e.TargetPlatform, want)
			}
		}
	}

	checkExtensionsJSON(fs, installed, fail)
}

// installedExtensions reads the installed extension directories into
// c.Extensions; it returns them by lowercased id.
func installedExtensions(fs files, c *Contents, fail failFn) map[string]InstalledExtension {
	// Installed extension directories.
	dirs := map[string]bool{}
	for p := range fs {
		if m := extDirRe.FindStringSubmatch(p); m != nil {
			dirs[m[1]] = true
		}
	}
	installed := map[string]InstalledExtension{} // by lowercased id
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		dir := imagespec.ExtensionsDir + "/" + d
		pj, ok := fs[dir+"/package.json"]
		if !ok || pj == nil {
			fail(dir+"/package.json", "missing or not a regular file")
			continue
		}
		var pkg struct {
			Name      string `json:"name"`
			Publisher string `json:"publisher"`
			Version   string `json:"version"`
		}
		if err := json.Unmarshal(pj, &pkg); err != nil || pkg.Name == "" || pkg.Publisher == "" || pkg.Version == "" {
			fail(dir+"/package.json", "no name, publisher and version (%v)", err)
			continue
		}
		e := InstalledExtension{ID: pkg.Publisher + "." + pkg.Name, Version: pkg.Version, Dir: dir}
		vm, ok := fs[dir+"/.vsixmanifest"]
		if !ok || vm == nil {
			fail(dir+"/.vsixmanifest", "missing: cannot tell the extension's target platform")
		} else {
			if man, err := vsixmanifest.Parse(vm); err != nil {
				fail(dir+"/.vsixmanifest", "%v", err)
			} else {
				e.TargetPlatform = man.TargetPlatform
				if !strings.EqualFold(man.ID(), e.ID) || man.Version != e.Version {
					fail(dir+"/.vsixmanifest", "Identity %s@%s disagrees with package.json %s@%s", man.ID(), man.Version, e.ID, e.Version)
				}
			}
		}
		key := strings.ToLower(e.ID)
		if prev, dup := installed[key]; dup {
			fail(dir, "%s installed twice (also %s)", e.ID, prev.Dir)
			continue
		}
		installed[key] = e
		c.Extensions = append(c.Extensions, e)
	}
	return installed
}

// checkLockedExtensions checks every locked extension is installed at its
// version and target (want), and nothing else is.
func checkLockedExtensions(lock *imagespec.Set, installed map[string]InstalledExtension, c *Contents, platform, want string, fail failFn) {
	locked := map[string]bool{}
	for _, le := range lock.Extensions {
		locked[strings.ToLower(le.ID)] = true
		e, ok := installed[strings.ToLower(le.ID)]
		if !ok {
			fail(imagespec.ExtensionsDir, "%s@%s is in the lock but not installed", le.ID, le.Version)
			continue
		}
		if e.Version != le.Version {
			fail(e.Dir+"/package.json", "version %s, lock says %s@%s", e.Version, le.ID, le.Version)
		}
		f, ok := le.Files[platform]
		if !ok {
			fail("label "+imagespec.LabelLock, "%s has no file for %s", le.ID, platform)
			continue
		}
		if e.TargetPlatform == "" {
			continue // .vsixmanifest failure already reported
		}
		switch {
		case f.TargetPlatform == imagespec.VSCodeUniversal:
			if e.TargetPlatform != imagespec.VSCodeUniversal && e.TargetPlatform != want {
				fail(e.Dir+"/.vsixmanifest", "TargetPlatform %s, want %s or universal", e.TargetPlatform, want)
			}
		case e.TargetPlatform != want:
			fail(e.Dir+"/.vsixmanifest", "TargetPlatform %s, want %s", e.TargetPlatform, want)
		case f.TargetPlatform != want:
			fail("label "+imagespec.LabelLock, "%s file for %s has target %s, want %s", le.ID, platform, f.TargetPlatform, want)
		}
	}
	for _, e := range c.Extensions {
		if !locked[strings.ToLower(e.ID)] {
			fail(e.Dir, "%s@%s is installed but not in the lock", e.ID, e.Version)
		}
	}
}

// checkExtensionsJSON checks code-server's extensions.json lists exactly
// the installed extensions.
func checkExtensionsJSON(fs files, installed map[string]InstalledExtension, fail failFn) {
	raw, ok := fs[extJSON]
	if !ok || raw == nil {
		fail(extJSON, "missing: code-server will not list the extensions")
		return
	}
	var entries []struct {
		Identifier struct {
			ID string `json:"id"`
		} `json:"identifier"`
		Version  string `json:"version"`
		Location struct {
			Path string `json:"path"`
		} `json:"location"`
		RelativeLocation string `json:"relativeLocation"`
		Metadata         struct {
			TargetPlatform string `json:"targetPlatform"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		fail(extJSON, "not a code-server extensions list: %v", err)
		return
	}
	seen := map[string]bool{}
	for _, en := range entries {
		id := strings.ToLower(en.Identifier.ID)
		seen[id] = true
		e, ok := installed[id]
		if !ok {
			fail(extJSON, "lists %s@%s, which is not installed", en.Identifier.ID, en.Version)
			continue
		}
		if en.Version != e.Version {
			fail(extJSON, "lists %s@%s, installed is %s", en.Identifier.ID, en.Version, e.Version)
		}
		dir := en.RelativeLocation
		if dir == "" {
			dir = path.Base(en.Location.Path)
		}
		if imagespec.ExtensionsDir+"/"+dir != e.Dir {
			fail(extJSON, "%s location %s, installed in %s", en.Identifier.ID, dir, e.Dir)
		}
		if tp := en.Metadata.TargetPlatform; tp != "" && e.TargetPlatform != "" && tp != e.TargetPlatform {
			fail(extJSON, "%s targetPlatform %s, .vsixmanifest says %s", en.Identifier.ID, tp, e.TargetPlatform)
		}
	}
	for id, e := range installed {
		if !seen[id] {
			fail(extJSON, "does not list installed %s@%s", e.ID, e.Version)
		}
	}
}

// distInfo is one *.dist-info/METADATA found.
type distInfo struct {
	path, pythonDir, name, version string
}

// checkPython finds ray and debugpy dist-info METADATA and compares their
// versions and Python directory with the labels and the lock.
func checkPython(fs files, lock *imagespec.Set, labels map[string]string, c *Contents, fail failFn) {
	var found []distInfo
	stdlibs := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(fs)) {
		if m := stdlibRe.FindStringSubmatch(p); m != nil {
			stdlibs[strings.TrimPrefix(m[1], "python")] = true
			continue
		}
		m := distRe.FindStringSubmatch(p)
		if m == nil {
			continue
		}
		name, version, err := parseMetadata(fs[p])
		if err != nil {
			fail(p, "%v", err)
			continue
		}
		n := imagespec.NormalizeName(name)
		if n != "ray" && n != "debugpy" {
			continue
		}
		found = append(found, distInfo{path: p, pythonDir: m[2], name: n, version: version})
	}
	wantPy := labels[imagespec.LabelPython]
	if lock != nil && lock.Python != "" {
		wantPy = lock.Python
	}
	for _, pkg := range []struct{ name, label string }{{"ray", imagespec.LabelRay}, {"debugpy", imagespec.LabelDebugpy}} {
		var hits []distInfo
		for _, d := range found {
			if d.name == pkg.name {
				hits = append(hits, d)
			}
		}
		if len(hits) == 0 {
			fail("site-packages", "no %s *.dist-info/METADATA in any site-packages or dist-packages directory", pkg.name)
			continue
		}
		if len(hits) > 1 {
			var ps []string
			for _, h := range hits {
				ps = append(ps, h.path)
			}
			fail("site-packages", "%s installed %d times: %s", pkg.name, len(hits), strings.Join(ps, ", "))
		}
		h := hits[0]
		if pkg.name == "ray" {
			c.Ray = h.version
		} else {
			c.Debugpy = h.version
		}
		if want := labels[pkg.label]; want != "" && h.version != want {
			fail(h.path, "Version %s, label %s says %s", h.version, pkg.label, want)
		}
		// Which Python the package is installed for.
		py := strings.TrimPrefix(h.pythonDir, "python")
		if strings.Contains(py, ".") {
			if pkg.name == "ray" {
				c.Python = py
			}
			if wantPy != "" && py != wantPy {
				fail(h.path, "installed for Python %s, label %s says %s", py, imagespec.LabelPython, wantPy)
			}
		} else if wantPy != "" {
			// e.g. /usr/lib/python3/dist-packages: the minor version comes from
			// the standard library directory.
			if !stdlibs[wantPy] {
				fail(h.path, "installed in %s, and there is no Python %s standard library (lib/python%s/os.py)", h.pythonDir, wantPy, wantPy)
			} else if pkg.name == "ray" {
				c.Python = wantPy
			}
		}
	}
}

// parseMetadata reads Name and Version from a core-metadata file (RFC 822
// headers up to the first blank line).
func parseMetadata(b []byte) (name, version string, err error) {
	if b == nil {
		return "", "", errors.New("METADATA is not a regular file")
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "name":
			if name == "" {
				name = strings.TrimSpace(v)
			}
		case "version":
			if version == "" {
				version = strings.TrimSpace(v)
			}
		}
	}
	if name == "" || version == "" {
		return "", "", errors.New("METADATA has no Name or no Version header")
	}
	return name, version, nil
}
