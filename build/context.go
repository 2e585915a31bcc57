package build

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/imagectl/imagectl/imagespec"
)

// Names of the local contexts the definition uses (dockerfiles/Dockerfile);
// each extension has its own, ExtensionContext(id).
const (
	contextMain           = "context"
	contextDockerfile     = "dockerfile"
	ContextPython         = "python"
	ContextExtensionsJSON = "extensionsjson"
	ContextUserData       = "userdata"
)

// ExtensionContext is the name of the local context holding extension id:
// "ext-" and the id in lower case (ids are case-insensitive). Each extension
// is its own context, not a folder of a shared one: BuildKit keeps one
// transferred copy per context, which a COPY of one folder at a time would
// overwrite with that folder alone, sending every extension in full on every
// build.
func ExtensionContext(id string) string { return "ext-" + strings.ToLower(id) }

// Contexts are the local directories one platform's solve reads. Those the
// definition copies into the image are laid out from the image root
// (config/extensions/..., config/data/...), so a COPY --link of one creates
// no directory itself.
type Contexts struct {
	// Root contains every directory below; removing it removes them all.
	Root       string
	Dockerfile string // holds the file "Dockerfile"
	Main       string // empty: the definition uses named contexts only
	Python     string // requirements.txt
	// Extensions holds <id>/config/extensions/<folder>/ per extension;
	// each <id> folder is the context ExtensionContext(id), listed in
	// ExtensionDirs.
	Extensions    string
	ExtensionDirs map[string]string
	// ExtensionsJSON holds config/extensions/extensions.json.
	ExtensionsJSON string
	UserData       string // config/data/User/settings.json
}

// Mounts maps local context names to directories, for SolveOpt.LocalMounts.
func (c Contexts) Mounts() map[string]string {
	m := map[string]string{
		contextDockerfile:     c.Dockerfile,
		contextMain:           c.Main,
		ContextPython:         c.Python,
		ContextExtensionsJSON: c.ExtensionsJSON,
		ContextUserData:       c.UserData,
	}
	for name, dir := range c.ExtensionDirs {
		m[name] = dir
	}
	return m
}

// named reports whether the local context name is one the definition names
// (a named context: --from=NAME, RUN --mount from=NAME), not the main
// context or the Dockerfile's.
func named(name string) bool { return name != contextMain && name != contextDockerfile }

// ExtensionFolder is one extension of a layout: its id (the definition's
// COPY source, Params.Extensions) and its folder in the layout
// (<publisher>.<name>-<version>).
type ExtensionFolder struct {
	ID     string
	Folder string
}

// ContextInput is what one platform's build contexts are made of.
type ContextInput struct {
	// Definition is the rendered definition; Requirements the pinned
	// requirements.txt; Settings code-server's settings.json ({} if empty).
	Definition, Requirements, Settings []byte
	// Layout is a code-server extensions directory (extensions.Layout): one
	// folder per extension and extensions.json. Its folders and
	// extensions.json are moved into the contexts (renamed; copied only
	// across file systems), so Layout is left empty.
	Layout string
	// Extensions names every folder of Layout with its extension id, in the
	// order of Params.Extensions; Layout must hold nothing else but
	// extensions.json.
	Extensions []ExtensionFolder
	// Time is every file's and directory's modification time.
	Time time.Time
}

// PrepareContexts writes one platform's build contexts under root: the
// definition, requirements.txt, each extension of in.Layout under
// extensions/<id>/config/extensions/<folder>/ (the context
// ExtensionContext(id)), extensions.json under
// extensionsjson/config/extensions/, and settings.json under
// userdata/config/data/User/. Every file and directory gets mode 0644/0755
// and modification time in.Time, so the contexts hash the same on every
// machine and each COPY --link layer is deterministic without a rewrite.
// in.Layout must not contain symbolic links or special files.
func PrepareContexts(root string, in ContextInput) (Contexts, error) {
	c := Contexts{
		Root:           root,
		Dockerfile:     filepath.Join(root, "dockerfile"),
		Main:           filepath.Join(root, "main"),
		Python:         filepath.Join(root, "python"),
		Extensions:     filepath.Join(root, "extensions"),
		ExtensionsJSON: filepath.Join(root, "extensionsjson"),
		UserData:       filepath.Join(root, "userdata"),
	}
	inImage := func(ctx, p string) string { return filepath.Join(ctx, filepath.FromSlash(strings.TrimPrefix(p, "/"))) }
	userDir := filepath.Dir(inImage(c.UserData, imagespec.SettingsPath))
	listDir := inImage(c.ExtensionsJSON, imagespec.ExtensionsDir)
	for _, d := range []string{c.Dockerfile, c.Main, c.Python, c.Extensions, listDir, userDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return c, fmt.Errorf("preparing build context: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(c.Dockerfile, "Dockerfile"), in.Definition, 0o644); err != nil {
		return c, fmt.Errorf("preparing build context: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.Python, "requirements.txt"), in.Requirements, 0o644); err != nil {
		return c, fmt.Errorf("preparing build context: %w", err)
	}
	settings := in.Settings
	if len(settings) == 0 {
		settings = []byte("{}\n")
	}
	if !json.Valid(settings) {
		return c, fmt.Errorf("settings.json for %s is not valid JSON", root)
	}
	if err := os.WriteFile(inImage(c.UserData, imagespec.SettingsPath), settings, 0o644); err != nil {
		return c, fmt.Errorf("preparing build context: %w", err)
	}
	if err := moveLayout(in.Layout, in.Extensions, c.Extensions, listDir); err != nil {
		return c, fmt.Errorf("extension layout %s: %w", in.Layout, err)
	}
	c.ExtensionDirs = map[string]string{}
	for _, e := range in.Extensions {
		c.ExtensionDirs[ExtensionContext(e.ID)] = filepath.Join(c.Extensions, e.ID)
	}
	if err := normalizeTree(root, in.Time); err != nil {
		return c, fmt.Errorf("normalizing build context %s: %w", root, err)
	}
	return c, nil
}

// moveLayout moves each extension folder of layout to
// extDir/<id>/config/extensions/<folder> and extensions.json into listDir.
// Anything else in layout, a folder named twice or not at all, or an id
// that is not one path element is an error.
func moveLayout(layout string, exts []ExtensionFolder, extDir, listDir string) error {
	if layout == "" {
		if len(exts) > 0 {
			return fmt.Errorf("%d extensions but no layout directory", len(exts))
		}
		return nil
	}
	ents, err := os.ReadDir(layout)
	if err != nil {
		return err
	}
	byFolder := map[string]string{}
	for _, e := range exts {
		if e.ID == "" || e.ID != filepath.Base(e.ID) || e.ID == "." || e.ID == ".." || strings.ContainsAny(e.ID, `/\`) {
			return fmt.Errorf("extension id %q is not a single path element", e.ID)
		}
		if e.Folder == "" || e.Folder != filepath.Base(e.Folder) || e.Folder == "." || e.Folder == ".." || e.Folder == ExtensionsJSONName {
			return fmt.Errorf("extension %s: folder %q is not a single path element", e.ID, e.Folder)
		}
		if _, dup := byFolder[e.Folder]; dup {
			return fmt.Errorf("folder %s is named twice", e.Folder)
		}
		byFolder[e.Folder] = e.ID
	}
	found := map[string]bool{}
	for _, ent := range ents {
		name := ent.Name()
		src := filepath.Join(layout, name)
		if name == ExtensionsJSONName && ent.Type().IsRegular() {
			if err := move(src, filepath.Join(listDir, name)); err != nil {
				return err
			}
			continue
		}
		id, ok := byFolder[name]
		if !ok || !ent.IsDir() {
			return fmt.Errorf("%s: not the folder of an extension of the set, nor %s", src, ExtensionsJSONName)
		}
		dst := filepath.Join(extDir, id, filepath.FromSlash(strings.TrimPrefix(imagespec.ExtensionsDir, "/")))
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		if err := move(src, filepath.Join(dst, name)); err != nil {
			return err
		}
		found[name] = true
	}
	for _, e := range exts {
		if !found[e.Folder] {
			return fmt.Errorf("extension %s: no folder %s", e.ID, e.Folder)
		}
	}
	return nil
}

// ExtensionsJSONName is code-server's list of installed extensions in an
// extensions directory.
const ExtensionsJSONName = "extensions.json"

// move renames src to dst, or copies it (regular files and directories
// only) when they are on different file systems.
func move(src, dst string) error {
	err := os.Rename(src, dst)
	if err == nil {
		return nil
	}
	var le *os.LinkError
	if !errors.As(err, &le) || !errors.Is(le.Err, syscall.EXDEV) {
		return err
	}
	if err := copyTree(src, dst); err != nil {
		return err
	}
	return os.RemoveAll(src)
}

// copyTree copies the regular files and directories of src into dst,
// refusing anything else. The copy is os.CopyFS over an os.Root of src, so
// nothing outside src is read even if an entry changes under it; CopyFS
// would copy a symbolic link as a link, so the tree is checked first.
// Files keep their execute bits (as os.Rename does; normalizeTree then
// sets every mode).
func copyTree(src, dst string) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer root.Close()
	fsys := root.FS()
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file or directory (%s)", filepath.Join(src, filepath.FromSlash(p)), d.Type())
		}
		return nil
	})
	if err != nil {
		return err
	}
	return os.CopyFS(dst, fsys)
}

// normalizeTree sets modes (0755 directories and executables, 0644 other
// files) and mtime on everything under root, deepest first so setting a
// file's time does not disturb its directory's.
func normalizeTree(root string, mtime time.Time) error {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file or directory", p)
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(paths, func(i, j int) bool {
		return strings.Count(paths[i], string(filepath.Separator)) > strings.Count(paths[j], string(filepath.Separator))
	})
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if fi.IsDir() || fi.Mode()&0o111 != 0 {
			mode = 0o755
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			return err
		}
	}
	return nil
}
