package app

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/extensions/marketplace"
	"github.com/imagectl/imagectl/extensions/openvsx"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/upstream/httpx"
)

type extensionsFlags struct {
	ray, python, codeServer string
	platforms               []string
	cacheDir                string
	marketplaceURL          string
	openvsxURL              string
	parallel                int
}

func newExtensionsCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "extensions",
		Short: "Fetch, verify, cache and lay out the VS Code extensions per platform",
		Long: `The extensions of a resolved set are fetched from the VS Marketplace or Open
VSX (the exact file for each platform), validated (identity, target platform,
engine, archive safety), and kept in a content-addressed cache. A cached file
is reused with no network request. "layout" writes the directory code-server
loads with --extensions-dir, from the cache only.`,
		Example: `  imagectl extensions fetch --ray 2.46.0 --platform linux/amd64,linux/arm64
  imagectl extensions layout --ray 2.46.0 --platform linux/arm64 --out ./ext-arm64
  imagectl extensions ls`,
	}
	cmd.AddCommand(newExtensionsFetchCommand(g), newExtensionsLayoutCommand(g), newExtensionsLsCommand(g))
	return cmd
}

func (f *extensionsFlags) addResolve(cmd *cobra.Command, multiPlatform bool) {
	cmd.Flags().StringVar(&f.ray, "ray", "", "Ray version of the set (required)")
	cmd.Flags().StringVar(&f.python, "python", "", "pin the CPython minor version (default: the matrix policy)")
	cmd.Flags().StringVar(&f.codeServer, "code-server", "", "pin the code-server version (default: newest compatible)")
	if multiPlatform {
		cmd.Flags().StringSliceVar(&f.platforms, "platform", nil, "OCI platforms, comma separated (default: matrix.yaml platforms)")
	}
	_ = cmd.MarkFlagRequired("ray")
}

func (f *extensionsFlags) addCache(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.cacheDir, "cache-dir", "", "extension cache directory (env "+cache.EnvDir+"; default <user cache dir>/imagectl/extensions)")
}

func (f *extensionsFlags) openCache() (*cache.Cache, error) {
	dir := f.cacheDir
	if dir == "" {
		d, err := cache.DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	return cache.Open(dir)
}

// resolveSet loads matrix.yaml and the catalog and resolves one set.
func (f *extensionsFlags) resolveSet(g *globals, platforms []string) (*matrix.Config, resolve.Set, error) {
	cfg, err := matrix.Load(g.matrixPath)
	if err != nil {
		return nil, resolve.Set{}, err
	}
	cat, err := catalog.Load(g.catalog())
	if err != nil {
		return nil, resolve.Set{}, err
	}
	set, _, err := resolve.Resolve(cfg, cat, resolve.Request{Ray: f.ray, Python: f.python, CodeServer: f.codeServer, Platforms: platforms})
	if err != nil {
		return nil, resolve.Set{}, err
	}
	return cfg, set, nil
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

func newExtensionsFetchCommand(g *globals) *cobra.Command {
	var f extensionsFlags
	cmd := &cobra.Command{
		Use:   "fetch",
		Short: "Fetch the exact extension file of each platform into the cache",
		Long: `fetch resolves the set for --ray (matrix.yaml + catalog), then downloads the
file each platform installs, validates it and stores it in the cache. Files
already cached (or pinned by sha256 and present) cost no request. It prints
one line per file: id, version, target platform, OCI platforms, sha256, and
whether it was fetched or cached.

Base URLs: --marketplace-url / --openvsx-url, else IMAGECTL_MARKETPLACE_URL /
IMAGECTL_OPENVSX_URL, else matrix.yaml upstreams, else the public services.`,
		Example: `  imagectl extensions fetch --ray 2.46.0 --platform linux/amd64,linux/arm64
  imagectl extensions fetch --ray 2.46.0 --marketplace-url http://127.0.0.1:8080 --cache-dir /tmp/vsix`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, set, err := f.resolveSet(g, f.platforms)
			if err != nil {
				return err
			}
			c, err := f.openCache()
			if err != nil {
				return err
			}
			var opts []httpx.Option
			if g.verbose {
				opts = append(opts, httpx.WithLogger(slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			}
			hc := httpx.New(opts...)
			fopts := []extensions.Option{
				extensions.WithSource(matrix.SourceMarketplace, marketplace.New(marketplace.WithHTTPClient(hc),
					marketplace.WithBaseURL(firstNonEmpty(f.marketplaceURL, os.Getenv("IMAGECTL_MARKETPLACE_URL"), cfg.Upstreams.Marketplace)))),
				extensions.WithSource(matrix.SourceOpenVSX, openvsx.New(openvsx.WithHTTPClient(hc),
					openvsx.WithBaseURL(firstNonEmpty(f.openvsxURL, os.Getenv("IMAGECTL_OPENVSX_URL"), cfg.Upstreams.OpenVSX)))),
				extensions.WithParallelism(f.parallel),
			}
			if g.verbose {
				fopts = append(fopts, extensions.WithLogger(slog.New(slog.NewTextHandler(g.stderr, nil))))
			}
			got, err := extensions.NewFetcher(c, fopts...).Fetch(cmd.Context(), &set)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tVERSION\tTARGET\tPLATFORMS\tSHA256\tSIZE\tSTATUS")
			for _, r := range got {
				status := "fetched"
				if r.Cached {
					status = "cached"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, r.Version, r.TargetPlatform, strings.Join(r.Platforms, ","), r.SHA256, r.Size, status)
			}
			return tw.Flush()
		},
	}
	f.addResolve(cmd, true)
	f.addCache(cmd)
	cmd.Flags().StringVar(&f.marketplaceURL, "marketplace-url", "", "VS Marketplace base URL (env IMAGECTL_MARKETPLACE_URL)")
	cmd.Flags().StringVar(&f.openvsxURL, "openvsx-url", "", "Open VSX base URL (env IMAGECTL_OPENVSX_URL)")
	cmd.Flags().IntVar(&f.parallel, "parallel", 4, "concurrent downloads")
	return cmd
}

func newExtensionsLayoutCommand(g *globals) *cobra.Command {
	var f extensionsFlags
	var platform, out, inImage, settingsOut string
	cmd := &cobra.Command{
		Use:   "layout",
		Short: "Write the extensions directory code-server loads, for one platform, from the cache",
		Long: `layout extracts each extension of the resolved set (dependencies first) into
--out/<publisher>.<name>-<version>/ and writes extensions.json as code-server
does, with times from SOURCE_DATE_EPOCH (or 0) so the result is reproducible.
It reads the cache only: run "imagectl extensions fetch" first. With
--settings it also writes code-server's User/settings.json from matrix.yaml.`,
		Example: `  imagectl extensions layout --ray 2.46.0 --platform linux/arm64 --out ./ext-arm64
  SOURCE_DATE_EPOCH=1700000000 imagectl extensions layout --ray 2.46.0 --platform linux/amd64 --out ./ext --settings ./settings.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, set, err := f.resolveSet(g, []string{platform})
			if err != nil {
				return err
			}
			c, err := f.openCache()
			if err != nil {
				return err
			}
			t, err := extensions.SourceDateEpoch()
			if err != nil {
				return err
			}
			inst, err := extensions.Layout(cmd.Context(), c, set.Extensions, extensions.LayoutOptions{
				Dir: out, Platform: platform, InImageDir: inImage, VSCode: set.CodeServer.VSCode, Time: &t,
			})
			if err != nil {
				return err
			}
			for _, i := range inst {
				fmt.Fprintf(g.stdout, "%s\t%s\t%s\n", i.Dir, i.TargetPlatform, i.SHA256)
			}
			if settingsOut != "" {
				if err := extensions.WriteSettings(settingsOut, build.ImageSettings(cfg.Settings), t); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f.addResolve(cmd, false)
	f.addCache(cmd)
	cmd.Flags().StringVar(&platform, "platform", "", "one OCI platform, e.g. linux/arm64 (required)")
	cmd.Flags().StringVar(&out, "out", "", "output directory, empty or absent (required)")
	cmd.Flags().StringVar(&inImage, "in-image-dir", build.ExtensionsDir, "where the directory will live in the image (recorded in extensions.json)")
	cmd.Flags().StringVar(&settingsOut, "settings", "", "also write code-server's settings.json here")
	_ = cmd.MarkFlagRequired("platform")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func newExtensionsLsCommand(g *globals) *cobra.Command {
	var f extensionsFlags
	cmd := &cobra.Command{
		Use:     "ls",
		Short:   "List the extension cache (id, version, platform, digest, size)",
		Long:    "ls lists every cached VSIX, verifying each file's digest as it goes; a corrupt file is removed and not listed.",
		Example: "  imagectl extensions ls --cache-dir /tmp/vsix",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.openCache()
			if err != nil {
				return err
			}
			ents, err := c.List()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tVERSION\tTARGET\tSHA256\tSIZE")
			for _, e := range ents {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", e.ID, e.Version, e.TargetPlatform, e.SHA256, e.Size)
			}
			return tw.Flush()
		},
	}
	f.addCache(cmd)
	return cmd
}
