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
	"runtime"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/vscode/vsixmanifest"
)

// ExtensionsJSON is the name of code-server's list of installed extensions.
const ExtensionsJSON = "extensions.json"

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
	// Time is the installedTimestamp and every file's mtime (required: the
	// caller resolves SOURCE_DATE_EPOCH with internal/sourcedate).
	Time   *time.Time
	Limits vsix.Limits
	// Files, when set, are the set's files as ValidateFiles checked them:
	// Layout extracts each one without reading the cache index or
	// validating it again (a file installed on several platforms is
	// validated once per build, not once per platform). Without it, Layout
	// finds and validates every file itself.
	Files Files
}

// File is one cached VSIX validated against the lock (ValidateFiles,
// Fetcher.FetchFiles): its cache entry (the sha256 checked) and what its
// manifest says.
type File struct {
	Entry cache.Entry
	Info  vsixmanifest.Info
}

// validateVSIX is vsix.Validate; a test counts the calls through it.
var validateVSIX = vsix.Validate

// Files are validated files by cache key.
type Files map[cache.Key]File

// ValidateFiles finds in c, and validates once, every file exts install on
// platforms: once per distinct (id, version, target platform)
// (distinctFiles, as the fetcher lists them), against
// what the lock asks for each platform and the VS Code version vscode
// (empty skips the engine check), within lim. The result is LayoutOptions.Files.
func ValidateFiles(ctx context.Context, c *cache.Cache, exts []imagespec.Extension, platforms []string, vscode string, lim vsix.Limits) (Files, error) {
	jobs, err := distinctFiles(exts, platforms)
	if err != nil {
		return nil, err
	}
	// The files are independent: validated concurrently, one per CPU.
	files := make([]File, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, j := range jobs {
		g.Go(func() error {
			f, err := validateCached(gctx, c, j.key(), j.file.SHA256, j.platforms[0], vscode, lim)
			files[i] = f
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := Files{}
	for i, j := range jobs {
		out[j.key()] = files[i]
	}
	return out, nil
}

// validateCached finds the file k (sha256 want, when pinned) in c and
// validates it; platform names where it is installed, for messages.
func validateCached(ctx context.Context, c *cache.Cache, k cache.Key, want, platform, vscode string, lim vsix.Limits) (File, error) {
	ce, ok, err := c.Get(ctx, k, want)
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", where(k, platform), err)
	}
	if !ok {
		return File{}, fmt.Errorf("%s: not in the cache %s (run imagectl extensions fetch first)", where(k, platform), c.Dir())
	}
	return validateEntry(ctx, c, k, ce, platform, vscode, lim)
}

// where names the file k installed on platform, for messages.
func where(k cache.Key, platform string) string {
	return fmt.Sprintf("extension %s@%s (%s for %s)", k.ID, k.Version, k.TargetPlatform, platform)
}

// validateEntry validates the cached file ce of k against k, the VS Code
// version vscode and lim; platform names where it is installed, for
// messages.
func validateEntry(ctx context.Context, c *cache.Cache, k cache.Key, ce cache.Entry, platform, vscode string, lim vsix.Limits) (File, error) {
	where := where(k, platform)
	f, err := c.OpenBlob(ce)
	if err != nil {
		return File{}, fmt.Errorf("%s from %s (%s): %w", where, safetext.URL(ce.URL), ce.Path, err)
	}
	defer f.Close()
	info, err := validateVSIX(ctx, f, ce.Size, vsix.Expect{ID: k.ID, Version: k.Version, TargetPlatform: k.TargetPlatform, VSCode: vscode}, lim)
	if err != nil {
		if ctx.Err() != nil {
			return File{}, fmt.Errorf("%s: %w", where, err)
		}
		return File{}, fmt.Errorf("%s from %s (%s): %w", where, safetext.URL(ce.URL), ce.Path, err)
	}
	return File{Entry: ce, Info: *info}, nil
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
		return nil, fmt.Errorf("layout: Time is required (SOURCE_DATE_EPOCH, internal/sourcedate)")
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
		vf, err := opts.file(ctx, c, k, file.SHA256)
		if err != nil {
			return nil, err
		}
		info, err := extractOne(ctx, c, k, vf, opts, *t)
		if info.Dir != "" {
			wrote = append(wrote, filepath.Join(opts.Dir, info.Dir))
		}
		if err != nil {
			where := fmt.Sprintf("extension %s@%s (%s for %s)", e.ID, e.Version, file.TargetPlatform, opts.Platform)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			return nil, fmt.Errorf("%s from %s (%s): %w", where, safetext.URL(vf.Entry.URL), vf.Entry.Path, err)
		}
		out = append(out, info)
		entries = append(entries, jsonEntry(e, info, file.TargetPlatform, inImage, *t))
	}
	p := filepath.Join(opts.Dir, ExtensionsJSON)
	wrote = append(wrote, p)
	if err := writeExtensionsJSON(p, entries, *t); err != nil {
		return nil, err
	}
	if err := os.Chtimes(opts.Dir, *t, *t); err != nil {
		return nil, err
	}
	return out, nil
}

// jsonEntry is extensions.json's entry of e, installed as info from its
// file for targetPlatform, in inImage, at t.
func jsonEntry(e imagespec.Extension, info Installed, targetPlatform, inImage string, t time.Time) extensionsJSONEntry {
	var je extensionsJSONEntry
	je.Identifier.ID = strings.ToLower(e.ID)
	je.Version = e.Version
	je.Location.Mid, je.Location.Path, je.Location.Scheme = 1, path.Join(inImage, info.Dir), "file"
	je.RelativeLocation = info.Dir
	je.Metadata.InstalledTimestamp = t.UnixMilli()
	je.Metadata.Pinned, je.Metadata.Source, je.Metadata.TargetPlatform = true, "vsix", targetPlatform
	return je
}

// writeExtensionsJSON writes entries, sorted by id, to p with mtime t.
func writeExtensionsJSON(p string, entries []extensionsJSONEntry, t time.Time) error {
	sort.Slice(entries, func(i, j int) bool { return entries[i].Identifier.ID < entries[j].Identifier.ID })
	if entries == nil {
		entries = []extensionsJSONEntry{}
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return err
	}
	return os.Chtimes(p, t, t)
}

// file returns the validated file k (sha256 want, when pinned): from Files
// when set, else found in c and validated now.
func (opts LayoutOptions) file(ctx context.Context, c *cache.Cache, k cache.Key, want string) (File, error) {
	if opts.Files == nil {
		return validateCached(ctx, c, k, want, opts.Platform, opts.VSCode, opts.Limits)
	}
	f, ok := opts.Files[k]
	if !ok {
		return File{}, fmt.Errorf("extension %s: not among the validated files (ValidateFiles of another set?)", k)
	}
	if want != "" && !strings.EqualFold(f.Entry.SHA256, want) {
		return File{}, fmt.Errorf("extension %s: validated file has sha256 %s, the lock pins %s", k, f.Entry.SHA256, want)
	}
	return f, nil
}

// extractOne extracts the validated file vf of k into its folder under
// opts.Dir.
func extractOne(ctx context.Context, c *cache.Cache, k cache.Key, vf File, opts LayoutOptions, t time.Time) (Installed, error) {
	dir := strings.ToLower(vf.Info.ID()) + "-" + vf.Info.Version
	if err := vsix.CheckEntryName(dir); err != nil || strings.Contains(dir, "/") {
		return Installed{}, fmt.Errorf("folder name %q is not a single clean path element", dir)
	}
	f, err := c.OpenBlob(vf.Entry)
	if err != nil {
		return Installed{}, err
	}
	defer f.Close()
	// Extract removes what it wrote when it fails.
	if err := vsix.Extract(ctx, f, vf.Entry.Size, filepath.Join(opts.Dir, dir), opts.Limits, t); err != nil {
		return Installed{}, err
	}
	return Installed{ID: k.ID, Version: k.Version, TargetPlatform: k.TargetPlatform, SHA256: vf.Entry.SHA256, Dir: dir}, nil
}

// SettingsJSON is code-server's User/settings.json for the matrix.yaml
// settings: deterministic JSON (keys sorted, two-space indent, trailing
// newline). A build computes it once and hands the bytes to every
// platform's contexts.
func SettingsJSON(settings map[string]any) ([]byte, error) {
	if settings == nil {
		settings = map[string]any{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(settings); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteSettings writes SettingsJSON(settings) at p, atomically, with mtime
// t.
func WriteSettings(p string, settings map[string]any, t time.Time) error {
	b, err := SettingsJSON(settings)
	if err != nil {
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
	if _, err := tmp.Write(b); err != nil {
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
