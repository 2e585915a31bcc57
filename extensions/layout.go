package extensions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/internal/sourcedate"
)

// ExtensionsJSON is the name of code-server's list of installed extensions.
const ExtensionsJSON = "extensions.json"

// SourceDateEpoch returns the time in $SOURCE_DATE_EPOCH, or the Unix epoch
// when it is unset (sourcedate.FromEnv: the range is checked there).
func SourceDateEpoch() (time.Time, error) { return sourcedate.FromEnv() }

// LayoutOptions says where and how to lay out one platform.
type LayoutOptions struct {
	// Dir is the output directory; it must not exist or be empty.
	Dir string
	// Platform is the OCI platform, e.g. linux/arm64.
	Platform string
	// InImageDir is where Dir will be in the image (extensions.json records
	// absolute paths); default imagespec.ExtensionsDir.
	InImageDir string
	// VSCode, when set, is the VS Code version each engine must accept.
	VSCode string
	// Time is the installedTimestamp and every file's mtime (default:
	// SOURCE_DATE_EPOCH or the Unix epoch).
	Time   *time.Time
	Limits vsix.Limits
}

// Installed is one extension in a layout.
type Installed struct {
	ID             string
	Version        string
	TargetPlatform string
	SHA256         string
	// Dir is the folder name under the layout, <publisher>.<name>-<version>.
	Dir string
}

type extensionsJSONEntry struct {
	Identifier struct {
		ID string `json:"id"`
	} `json:"identifier"`
	Version  string `json:"version"`
	Location struct {
		Mid    int    `json:"$mid"`
		Path   string `json:"path"`
		Scheme string `json:"scheme"`
	} `json:"location"`
	RelativeLocation string `json:"relativeLocation"`
	Metadata         struct {
		InstalledTimestamp int64  `json:"installedTimestamp"`
		Pinned             bool   `json:"pinned"`
		Source             string `json:"source"`
		TargetPlatform     string `json:"targetPlatform"`
	} `json:"metadata"`
}

// Layout writes the extensions of exts for one platform into opts.Dir from
// the cache only (no network: fetch first), in the order given (dependencies
// first), and writes extensions.json as code-server does on
// --install-extension, with fixed timestamps, sorted by id. Each file is
// validated again against what the lock asks for this platform, so a
// linux-arm64 build can never land in a linux/amd64 layout.
//
// When Layout fails, it removes what it wrote (the extension folders,
// extensions.json, and opts.Dir itself when it created it), so the next run
// does not find a non-empty directory.
func Layout(ctx context.Context, c *cache.Cache, exts []imagespec.Extension, opts LayoutOptions) (_ []Installed, err error) {
	if opts.Dir == "" || opts.Platform == "" {
		return nil, fmt.Errorf("layout: Dir and Platform are required")
	}
	inImage := opts.InImageDir
	if inImage == "" {
		inImage = imagespec.ExtensionsDir
	}
	if !path.IsAbs(inImage) {
		return nil, fmt.Errorf("layout: in-image directory %q must be absolute", inImage)
	}
	t := opts.Time
	if t == nil {
		sde, err := SourceDateEpoch()
		if err != nil {
			return nil, err
		}
		t = &sde
	}
	ents, rerr := os.ReadDir(opts.Dir)
	if rerr == nil && len(ents) > 0 {
		return nil, fmt.Errorf("layout: %s is not empty", opts.Dir)
	}
	createdDir := errors.Is(rerr, fs.ErrNotExist)
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	var wrote []string // paths under opts.Dir this call created
	defer func() {
		if err == nil {
			return
		}
		for _, p := range wrote {
			os.RemoveAll(p)
		}
		if createdDir {
			os.Remove(opts.Dir) // only if empty
		}
	}()
	var out []Installed
	var entries []extensionsJSONEntry
	for _, e := range exts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		file, ok := e.Files[opts.Platform]
		if !ok {
			return nil, fmt.Errorf("extension %s@%s: no file for %s in the resolved set", e.ID, e.Version, opts.Platform)
		}
		if err := checkFileFor(e, opts.Platform, file); err != nil {
			return nil, err
		}
		k := cache.Key{ID: e.ID, Version: e.Version, TargetPlatform: file.TargetPlatform}
		where := fmt.Sprintf("extension %s@%s (%s for %s)", e.ID, e.Version, file.TargetPlatform, opts.Platform)
		ce, ok, err := c.Get(ctx, k, file.SHA256)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if !ok {
			return nil, fmt.Errorf("%s: not in the cache %s (run imagectl extensions fetch first)", where, c.Dir())
		}
		info, err := layoutOne(ctx, c, ce, k, opts, *t)
		if info.Dir != "" {
			wrote = append(wrote, filepath.Join(opts.Dir, info.Dir))
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			return nil, fmt.Errorf("%s from %s (%s): %w", where, safetext.URL(ce.URL), ce.Path, err)
		}
		out = append(out, info)
		var je extensionsJSONEntry
		je.Identifier.ID = strings.ToLower(e.ID)
		je.Version = e.Version
		je.Location.Mid, je.Location.Path, je.Location.Scheme = 1, path.Join(inImage, info.Dir), "file"
		je.RelativeLocation = info.Dir
		je.Metadata.InstalledTimestamp = t.UnixMilli()
		je.Metadata.Pinned, je.Metadata.Source, je.Metadata.TargetPlatform = true, "vsix", file.TargetPlatform
		entries = append(entries, je)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Identifier.ID < entries[j].Identifier.ID })
	if entries == nil {
		entries = []extensionsJSONEntry{}
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(opts.Dir, ExtensionsJSON)
	wrote = append(wrote, p)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return nil, err
	}
	if err := os.Chtimes(p, *t, *t); err != nil {
		return nil, err
	}
	if err := os.Chtimes(opts.Dir, *t, *t); err != nil {
		return nil, err
	}
	return out, nil
}

func layoutOne(ctx context.Context, c *cache.Cache, ce cache.Entry, k cache.Key, opts LayoutOptions, t time.Time) (Installed, error) {
	f, err := c.OpenBlob(ce)
	if err != nil {
		return Installed{}, err
	}
	defer f.Close()
	info, err := vsix.Validate(ctx, f, ce.Size, vsix.Expect{ID: k.ID, Version: k.Version, TargetPlatform: k.TargetPlatform, VSCode: opts.VSCode}, opts.Limits)
	if err != nil {
		return Installed{}, err
	}
	dir := strings.ToLower(info.ID()) + "-" + info.Version
	if err := vsix.CheckEntryName(dir); err != nil || strings.Contains(dir, "/") {
		return Installed{}, fmt.Errorf("folder name %q is not a single clean path element", dir)
	}
	if err := vsix.Extract(ctx, f, ce.Size, filepath.Join(opts.Dir, dir), opts.Limits, t); err != nil {
		return Installed{}, err
	}
	return Installed{ID: k.ID, Version: k.Version, TargetPlatform: k.TargetPlatform, SHA256: ce.SHA256, Dir: dir}, nil
}

// WriteSettings writes code-server's User/settings.json at p from the
// matrix.yaml settings: deterministic JSON (keys sorted, two-space indent,
// trailing newline), written atomically, with mtime t.
func WriteSettings(p string, settings map[string]any, t time.Time) error {
	if settings == nil {
		settings = map[string]any{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(settings); err != nil {
		return fmt.Errorf("settings for %s: %w", p, err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".settings-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Chtimes(tmp.Name(), t, t); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}
