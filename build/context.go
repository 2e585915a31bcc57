package build

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Names of the local contexts the definition uses (dockerfiles/Dockerfile).
const (
	contextMain       = "context"
	contextDockerfile = "dockerfile"
	ContextPython     = "python"
	ContextExtensions = "extensions"
	ContextUserData   = "userdata"
)

// Contexts are the local directories one platform's solve reads.
type Contexts struct {
	// Root contains every directory below; removing it removes them all.
	Root       string
	Dockerfile string // holds the file "Dockerfile"
	Main       string // empty: the definition uses named contexts only
	Python     string // requirements.txt
	Extensions string // <publisher>.<name>-<version>/ ... and extensions.json
	UserData   string // User/settings.json
}

// Mounts maps local context names to directories, for SolveOpt.LocalMounts.
func (c Contexts) Mounts() map[string]string {
	return map[string]string{
		contextDockerfile: c.Dockerfile,
		contextMain:       c.Main,
		ContextPython:     c.Python,
		ContextExtensions: c.Extensions,
		ContextUserData:   c.UserData,
	}
}

// PrepareContexts writes one platform's build contexts under root: the
// definition, requirements.txt, a copy of the extension layout made for this
// platform (extDir), and settings.json. Every file and directory gets mode
// 0644/0755 and modification time mtime, so the contexts hash the same on
// every machine. extDir must not contain symbolic links or special files.
func PrepareContexts(root string, definition, requirements []byte, extDir string, settings []byte, mtime time.Time) (Contexts, error) {
	c := Contexts{
		Root:       root,
		Dockerfile: filepath.Join(root, "dockerfile"),
		Main:       filepath.Join(root, "main"),
		Python:     filepath.Join(root, "python"),
		Extensions: filepath.Join(root, "extensions"),
		UserData:   filepath.Join(root, "userdata"),
	}
	for _, d := range []string{c.Dockerfile, c.Main, c.Python, c.UserData} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return c, fmt.Errorf("preparing build context: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(c.Dockerfile, "Dockerfile"), definition, 0o644); err != nil {
		return c, fmt.Errorf("preparing build context: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.Python, "requirements.txt"), requirements, 0o644); err != nil {
		return c, fmt.Errorf("preparing build context: %w", err)
	}
	if len(settings) == 0 {
		settings = []byte("{}\n")
	}
	if !json.Valid(settings) {
		return c, fmt.Errorf("settings.json for %s is not valid JSON", root)
	}
	if err := os.MkdirAll(filepath.Join(c.UserData, "User"), 0o755); err != nil {
		return c, fmt.Errorf("preparing build context: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.UserData, "User", "settings.json"), settings, 0o644); err != nil {
		return c, fmt.Errorf("preparing build context: %w", err)
	}
	if err := copyTree(extDir, c.Extensions); err != nil {
		return c, fmt.Errorf("copying extension layout %s: %w", extDir, err)
	}
	if err := normalizeTree(root, mtime); err != nil {
		return c, fmt.Errorf("normalizing build context %s: %w", root, err)
	}
	return c, nil
}

// copyTree copies the regular files and directories of src into dst,
// refusing anything else.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, target)
		default:
			return fmt.Errorf("%s: not a regular file or directory (%s)", p, d.Type())
		}
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
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
