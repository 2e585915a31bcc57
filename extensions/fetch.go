package extensions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/safetext"
)

// Source downloads VSIX files; marketplace.Client and openvsx.Client are
// Sources.
type Source interface {
	Download(ctx context.Context, id, version, targetPlatform string, w io.Writer) (vsix.Origin, error)
}

// Fetcher fetches extension files into a cache.
type Fetcher struct {
	cache    *cache.Cache
	sources  map[string]Source
	parallel int
	// attempts is how many times a download whose body was cut short
	// (connection reset, truncated body, no data for the idle timeout) is
	// tried in all. Everything else is retried once, by one policy: a
	// request that fails before its body (connection refused, 429, 5xx) is
	// retried by the HTTP client (upstream/httpx) and not again here.
	attempts    int
	limits      vsix.Limits
	log         *slog.Logger
	requirePins bool
	warnings    io.Writer
}

// Option configures NewFetcher.
type Option func(*Fetcher)

// WithSource registers the Source used for extensions whose imagespec.Extension
// Source is name ("marketplace" or "openvsx").
func WithSource(name string, s Source) Option { return func(f *Fetcher) { f.sources[name] = s } }

// WithParallelism bounds concurrent downloads (default 4).
func WithParallelism(n int) Option { return func(f *Fetcher) { f.parallel = n } }

// WithRequirePins makes Fetch fail, before any request, when a file of the
// set carries no sha256 (trust on first use refused).
func WithRequirePins(on bool) Option { return func(f *Fetcher) { f.requirePins = on } }

// WithWarnings receives a warning for every file fetched or served from the
// cache without a pinned sha256, naming the digest trusted on first use
// (default: discarded).
func WithWarnings(w io.Writer) Option { return func(f *Fetcher) { f.warnings = w } }

// WithLimits sets the archive limits used by validation.
func WithLimits(l vsix.Limits) Option { return func(f *Fetcher) { f.limits = l } }

// WithLogger logs progress at info level.
func WithLogger(l *slog.Logger) Option { return func(f *Fetcher) { f.log = l } }

// NewFetcher returns a Fetcher storing into c.
func NewFetcher(c *cache.Cache, opts ...Option) *Fetcher {
	f := &Fetcher{cache: c, sources: map[string]Source{}, parallel: 4, attempts: 4, limits: vsix.DefaultLimits}
	for _, o := range opts {
		o(f)
	}
	if f.parallel < 1 {
		f.parallel = 1
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if f.warnings == nil {
		f.warnings = io.Discard
	}
	return f
}

// UnpinnedFile is a file of a resolved set that carries no sha256: what is
// downloaded for it is trusted on first use.
type UnpinnedFile struct {
	ID             string
	Version        string
	TargetPlatform string
	// Platforms are the OCI platforms that install it.
	Platforms []string
}

func (u UnpinnedFile) String() string {
	return fmt.Sprintf("%s@%s (%s for %s)", u.ID, u.Version, u.TargetPlatform, strings.Join(u.Platforms, ","))
}

// Unpinned returns the files exts install on platforms that carry no
// sha256, once per id, version and target platform, in install order. A
// platform with no file in the set is left to Fetch to report.
func Unpinned(exts []imagespec.Extension, platforms []string) []UnpinnedFile {
	var out []UnpinnedFile
	idx := map[cache.Key]int{}
	for _, e := range exts {
		for _, p := range platforms {
			file, ok := e.Files[p]
			if !ok || file.SHA256 != "" {
				continue
			}
			k := cache.Key{ID: e.ID, Version: e.Version, TargetPlatform: file.TargetPlatform}
			if i, ok := idx[k]; ok {
				out[i].Platforms = append(out[i].Platforms, p)
				continue
			}
			idx[k] = len(out)
			out = append(out, UnpinnedFile{ID: e.ID, Version: e.Version, TargetPlatform: file.TargetPlatform, Platforms: []string{p}})
		}
	}
	return out
}

// UnpinnedError is CheckPins' refusal: it names every unpinned file.
type UnpinnedError struct{ Files []UnpinnedFile }

func (e *UnpinnedError) Error() string {
	names := make([]string, len(e.Files))
	for i, f := range e.Files {
		names[i] = f.String()
	}
	return fmt.Sprintf("pins required, but %d extension file(s) have no sha256 in the catalog: %s (run imagectl extensions pin where the upstreams are trusted, review the catalog diff, then commit it)",
		len(e.Files), strings.Join(names, ", "))
}

// CheckPins returns an *UnpinnedError naming every file exts install on
// platforms without a sha256, or nil when every one is pinned.
func CheckPins(exts []imagespec.Extension, platforms []string) error {
	if u := Unpinned(exts, platforms); len(u) > 0 {
		return &UnpinnedError{Files: u}
	}
	return nil
}

// Fetched is one VSIX in the cache.
type Fetched struct {
	ID             string
	Version        string
	TargetPlatform string
	// Platforms are the OCI platforms that install this file.
	Platforms []string
	SHA256    string
	Size      int64
	Path      string
	URL       string
	// Cached is true when no download was needed.
	Cached bool
}

// checkFileFor fails unless file may be installed on ociPlatform: its target
// must be the platform's own or universal.
func checkFileFor(e imagespec.Extension, ociPlatform string, file imagespec.File) error {
	want, err := imagespec.VSCodeTarget(ociPlatform)
	if err != nil {
		return err
	}
	if file.TargetPlatform != want && file.TargetPlatform != vsix.Universal {
		return fmt.Errorf("extension %s@%s: the %s file is built for %q; only %q or universal may be installed there", e.ID, e.Version, ociPlatform, file.TargetPlatform, want)
	}
	return nil
}

type job struct {
	ext       imagespec.Extension
	file      imagespec.File
	platforms []string
}

// key is the file's cache key.
func (j *job) key() cache.Key {
	return cache.Key{ID: j.ext.ID, Version: j.ext.Version, TargetPlatform: j.file.TargetPlatform}
}

// distinctFiles lists the files exts install on platforms, once per
// distinct (id, version, target platform), in install order then platform
// order, each with the platforms that install it. Every platform must have
// a file its own or universal, and one key one digest.
func distinctFiles(exts []imagespec.Extension, platforms []string) ([]*job, error) {
	var jobs []*job
	byKey := map[cache.Key]*job{}
	for _, e := range exts {
		for _, p := range platforms {
			file, ok := e.Files[p]
			if !ok {
				return nil, fmt.Errorf("extension %s@%s: the resolved set has no file for %s", e.ID, e.Version, p)
			}
			if err := checkFileFor(e, p, file); err != nil {
				return nil, err
			}
			k := cache.Key{ID: e.ID, Version: e.Version, TargetPlatform: file.TargetPlatform}
			if j := byKey[k]; j != nil {
				if !strings.EqualFold(j.file.SHA256, file.SHA256) {
					return nil, fmt.Errorf("extension %s: the lock pins two digests (%s, %s)", k, j.file.SHA256, file.SHA256)
				}
				j.platforms = append(j.platforms, p)
				continue
			}
			j := &job{ext: e, file: file, platforms: []string{p}}
			byKey[k] = j
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}

// Fetch fetches every file that set needs on its platforms (set.Platforms).
func (f *Fetcher) Fetch(ctx context.Context, set *imagespec.Set) ([]Fetched, error) {
	return f.FetchExtensions(ctx, set.Extensions, set.Platforms, set.CodeServer.VSCode)
}

// FetchFiles fetches every file that set needs on its platforms, as Fetch
// does, and returns each one validated once, as LayoutOptions.Files: a file
// this call downloads was validated as it arrived and is not read again; a
// file already in the cache is validated now, against the lock and the VS
// Code version of set, within the fetcher's limits (ValidateFiles' check).
func (f *Fetcher) FetchFiles(ctx context.Context, set *imagespec.Set) (Files, error) {
	jobs, _, files, err := f.fetch(ctx, set.Extensions, set.Platforms, set.CodeServer.VSCode, true)
	if err != nil {
		return nil, err
	}
	byKey := Files{}
	for i, j := range jobs {
		byKey[j.key()] = files[i]
	}
	return byKey, nil
}

// FetchExtensions fetches the file of each extension for each of platforms,
// once per distinct (id, version, targetPlatform), validated against the VS
// Code version vscode (empty skips the engine check). The result follows the
// order of exts (install order), then of platforms.
//
// A file without a sha256 in the set is trusted on first use: with
// WithRequirePins nothing is fetched and the error names every such file;
// otherwise each one gets a warning naming the digest accepted.
func (f *Fetcher) FetchExtensions(ctx context.Context, exts []imagespec.Extension, platforms []string, vscode string) ([]Fetched, error) {
	_, out, _, err := f.fetch(ctx, exts, platforms, vscode, false)
	return out, err
}

// fetch fetches every distinct file of exts on platforms and warns of the
// unpinned ones (FetchExtensions); with validated it also returns each one
// as validated: a download as it was validated on arrival, a cache hit
// validated now.
func (f *Fetcher) fetch(ctx context.Context, exts []imagespec.Extension, platforms []string, vscode string, validated bool) ([]*job, []Fetched, []File, error) {
	if f.requirePins {
		if err := CheckPins(exts, platforms); err != nil {
			return nil, nil, nil, err
		}
	}
	jobs, err := distinctFiles(exts, platforms)
	if err != nil {
		return nil, nil, nil, err
	}
	out := make([]Fetched, len(jobs))
	files := make([]File, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.parallel)
	for i, j := range jobs {
		g.Go(func() error {
			r, vf, err := f.fetchOne(gctx, j, vscode)
			if err != nil {
				return err
			}
			if validated && r.Cached {
				// Get checked a hit's digest, not its content.
				if vf, err = validateEntry(gctx, f.cache, j.key(), vf.Entry, j.platforms[0], vscode, f.limits); err != nil {
					return err
				}
			}
			out[i], files[i] = r, vf
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, nil, err
	}
	f.warnUnpinned(jobs, out)
	return jobs, out, files, nil
}

// warnUnpinned warns of every fetched file the set does not pin.
func (f *Fetcher) warnUnpinned(jobs []*job, out []Fetched) {
	for i, j := range jobs {
		if j.file.SHA256 == "" {
			r := out[i]
			fmt.Fprintf(f.warnings, "warning: extension %s@%s (%s for %s) is not pinned by sha256 in the catalog: trusting sha256 %s on first use; pin it with imagectl extensions pin, or refuse unpinned files with --require-pins\n",
				r.ID, r.Version, r.TargetPlatform, strings.Join(r.Platforms, ","), r.SHA256)
		}
	}
}

// fetchOne fetches the file of j and returns it with its cache entry: a
// download with what validation found on arrival, a cache hit (Cached)
// with its entry only (not read).
func (f *Fetcher) fetchOne(ctx context.Context, j *job, vscode string) (Fetched, File, error) {
	k := j.key()
	res := Fetched{ID: k.ID, Version: k.Version, TargetPlatform: k.TargetPlatform, Platforms: j.platforms}
	where := where(k, strings.Join(j.platforms, ","))
	if e, ok, err := f.cache.Get(ctx, k, j.file.SHA256); err != nil {
		return res, File{}, fmt.Errorf("%s: cache: %w", where, err)
	} else if ok {
		res.SHA256, res.Size, res.Path, res.URL, res.Cached = e.SHA256, e.Size, e.Path, e.URL, true
		f.log.Info("cached", "id", k.ID, "version", k.Version, "target", k.TargetPlatform, "sha256", e.SHA256)
		return res, File{Entry: e}, nil
	}
	src, ok := f.sources[j.ext.Source]
	if !ok {
		return res, File{}, fmt.Errorf("%s: no client for source %q (want marketplace or openvsx)", where, j.ext.Source)
	}
	var lastErr error
	for attempt := 1; attempt <= f.attempts; attempt++ {
		vf, url, err := f.download(ctx, src, k, j, vscode)
		if err == nil {
			e := vf.Entry
			res.SHA256, res.Size, res.Path, res.URL = e.SHA256, e.Size, e.Path, e.URL
			f.log.Info("fetched", "id", k.ID, "version", k.Version, "target", k.TargetPlatform, "url", safetext.URL(url), "sha256", e.SHA256, "bytes", e.Size)
			return res, vf, nil
		}
		if url == "" {
			url = j.file.URL
		}
		// Name the URL once: an HTTP error already starts with it.
		if u := safetext.URL(url); strings.Contains(err.Error(), u) {
			lastErr = fmt.Errorf("%s: %w", where, err)
		} else {
			lastErr = fmt.Errorf("%s from %s: %w", where, u, err)
		}
		if !retryable(err) || ctx.Err() != nil {
			break
		}
		f.log.Info("retrying a download cut short", "id", k.ID, "target", k.TargetPlatform, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return res, File{}, errors.Join(lastErr, ctx.Err())
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
	return res, File{}, lastErr
}

// download runs one attempt: download into a cache writer, validate, commit.
// It returns the committed entry with what validation found.
func (f *Fetcher) download(ctx context.Context, src Source, k cache.Key, j *job, vscode string) (File, string, error) {
	w, err := f.cache.NewWriter()
	if err != nil {
		return File{}, "", err
	}
	defer w.Abort()
	o, err := src.Download(ctx, k.ID, k.Version, k.TargetPlatform, w)
	if err != nil {
		return File{}, o.URL, err
	}
	info, err := validateVSIX(ctx, w.File(), w.Size(), vsix.Expect{ID: k.ID, Version: k.Version, TargetPlatform: k.TargetPlatform, VSCode: vscode}, f.limits)
	if err != nil {
		if ctx.Err() != nil {
			return File{}, o.URL, err
		}
		return File{}, o.URL, &invalidError{err}
	}
	ce := cache.Entry{Key: k, URL: o.URL}
	if f.limits.Raised() {
		// Accepted under larger limits than the defaults: recorded, so a
		// verb run with the defaults keeps and identifies the file.
		lim := f.limits
		ce.Limits = &lim
	}
	e, err := w.Commit(ce, j.file.SHA256)
	if err != nil {
		return File{}, o.URL, &invalidError{err}
	}
	return File{Entry: e, Info: *info}, o.URL, nil
}

type invalidError struct{ err error }

func (e *invalidError) Error() string { return "invalid VSIX: " + e.err.Error() }
func (e *invalidError) Unwrap() error { return e.err }

// retryable reports whether a download error is a body cut short after a
// 200 (vsix.BodyError), worth a new request. Anything that failed before
// the body (connection errors, statuses) was already retried by the HTTP
// client under its own policy; retrying it here again would multiply the
// two policies.
func retryable(err error) bool {
	var inv *invalidError
	if errors.As(err, &inv) {
		return false
	}
	var be *vsix.BodyError
	return errors.As(err, &be)
}
