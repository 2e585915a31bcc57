package options

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// ExtensionsOptions are the flags of the verbs that resolve a set and
// fetch, cache or lay out its extensions (extensions, build, release):
// each verb registers the parts it has (AddResolve, AddCache, AddFetch,
// AddLimits, and Upstream through Add).
type ExtensionsOptions struct {
	Ray, Python, CodeServer string
	Platforms               []string
	CacheDir                string
	Upstream                UpstreamOptions
	Parallel                int
	// fetch: HTTP timeouts and trust on first use.
	Timeout     time.Duration
	IdleTimeout time.Duration
	RequirePins bool
	// validation and extraction limits.
	MaxExpanded int64
	MaxRatio    float64
}

// AddResolve registers the flags that pick the set: --ray (required),
// --python, --code-server and, with multiPlatform, --platform.
func (f *ExtensionsOptions) AddResolve(cmd *cobra.Command, multiPlatform bool) {
	cmd.Flags().StringVar(&f.Ray, "ray", "", "Ray version of the set (required)")
	cmd.Flags().StringVar(&f.Python, "python", "", "pin the CPython minor version (default: the matrix policy)")
	cmd.Flags().StringVar(&f.CodeServer, "code-server", "", "pin the code-server version (default: newest compatible)")
	if multiPlatform {
		AddPlatformsFlag(cmd.Flags(), &f.Platforms, "OCI platforms, comma separated (default: matrix.yaml platforms)")
	}
	MarkRequired(cmd, "ray")
}

// AddCache registers --cache-dir.
func (f *ExtensionsOptions) AddCache(fl *pflag.FlagSet) {
	fl.StringVar(&f.CacheDir, "cache-dir", "", "extension cache directory (env "+cache.EnvDir+"; default <user cache dir>/imagectl/extensions)")
}

// PinMode says what --require-pins a command has.
type PinMode int

const (
	PinsOptional PinMode = iota // off by default
	PinsAlways                  // release: on, cannot be turned off
	PinsNone                    // pin: no such flag (it records pins)
)

// AddFetch registers the flags of every command that downloads extension
// files: the HTTP timeouts and, but for PinsNone, --require-pins.
func (f *ExtensionsOptions) AddFetch(fl *pflag.FlagSet, pins PinMode) {
	fl.DurationVar(&f.Timeout, "http-timeout", 60*time.Second, "how long one HTTP attempt may wait for the response headers")
	fl.DurationVar(&f.IdleTimeout, "idle-timeout", httpx.DefaultIdleTimeout, "fail (and retry) a download that receives no byte for this long; a slow but steady one is never cut (0: no limit)")
	switch pins {
	case PinsAlways:
		fl.BoolVar(&f.RequirePins, "require-pins", true, "refuse extension files the catalog pins no sha256 for (always on here; --require-pins=false is refused)")
	case PinsOptional:
		fl.BoolVar(&f.RequirePins, "require-pins", false, "refuse extension files the catalog pins no sha256 for, instead of trusting them on first use with a warning")
	}
}

// AddLimits registers the archive limits of validation and extraction.
func (f *ExtensionsOptions) AddLimits(fl *pflag.FlagSet) {
	fl.Int64Var(&f.MaxExpanded, "max-expanded-bytes", vsix.DefaultLimits.MaxTotalBytes, "largest total uncompressed size of one VSIX")
	fl.Float64Var(&f.MaxRatio, "max-expansion-ratio", vsix.DefaultLimits.MaxTotalRatio, "largest uncompressed/compressed ratio of one whole VSIX (past 1 MiB uncompressed)")
}

// Limits are the archive limits of the flags.
func (f *ExtensionsOptions) Limits() vsix.Limits {
	return vsix.Limits{MaxTotalBytes: f.MaxExpanded, MaxTotalRatio: f.MaxRatio}
}

// HTTPClient is the client of every download: the timeouts of AddFetch
// (every command that calls it registers them) and, with -v, a log that
// redacts URLs and escapes upstream text.
func (f *ExtensionsOptions) HTTPClient(g *Globals) *http.Client {
	opts := []httpx.Option{httpx.WithIdleTimeout(f.IdleTimeout)}
	if f.Timeout > 0 {
		opts = append(opts, httpx.WithTimeout(f.Timeout))
	}
	if g.Verbose {
		opts = append(opts, httpx.WithLogger(g.Logger(slog.LevelDebug)))
	}
	return httpx.New(opts...)
}

// Sources are the gallery clients (UpstreamOptions.ExtensionSources)
// over HTTPClient.
func (f *ExtensionsOptions) Sources(g *Globals, cfg *matrix.Config) ExtensionSources {
	return f.Upstream.ExtensionSources(cfg, f.HTTPClient(g))
}

// Fetcher is the Fetcher of extensions fetch and pin.
func (f *ExtensionsOptions) Fetcher(g *Globals, cfg *matrix.Config, c *cache.Cache) *extensions.Fetcher {
	opts := []extensions.Option{
		extensions.WithParallelism(f.Parallel),
		extensions.WithLimits(f.Limits()),
		extensions.WithRequirePins(f.RequirePins),
		extensions.WithWarnings(g.Warnings()),
	}
	for name, s := range f.Sources(g, cfg).Fetch() {
		opts = append(opts, extensions.WithSource(name, s))
	}
	if g.Verbose {
		opts = append(opts, extensions.WithLogger(g.Logger(slog.LevelInfo)))
	}
	return extensions.NewFetcher(c, opts...)
}

// OpenCache opens --cache-dir, else the default cache directory.
func (f *ExtensionsOptions) OpenCache(g *Globals) (*cache.Cache, error) {
	dir := f.CacheDir
	if dir == "" {
		d, err := cache.DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	// A hit is identified under the limits of the command line, as a
	// download is validated.
	return cache.Open(dir, cache.WithWarnings(g.Warnings()), cache.WithIdentify(cache.IdentifyVSIXWithin(f.Limits())))
}

// ResolveSet loads matrix.yaml and the catalog and resolves one set.
func (f *ExtensionsOptions) ResolveSet(g *Globals, platforms []string) (*matrix.Config, imagespec.Set, error) {
	cfg, err := g.LoadMatrix()
	if err != nil {
		return nil, imagespec.Set{}, err
	}
	cat, err := g.LoadCatalog()
	if err != nil {
		return nil, imagespec.Set{}, err
	}
	set, _, err := resolve.Resolve(cfg, cat, resolve.Request{Ray: f.Ray, Python: f.Python, CodeServer: f.CodeServer, Platforms: platforms})
	if err != nil {
		return nil, imagespec.Set{}, err
	}
	return cfg, set, nil
}
