package extensions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/sourcedate"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
)

// New returns imagectl extensions and its subcommands (fetch, layout, ls,
// pin).
func New(g *options.Globals) *cobra.Command {
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
	cmd.AddCommand(newExtensionsFetchCommand(g), newExtensionsLayoutCommand(g), newExtensionsLsCommand(g), newExtensionsPinCommand(g))
	return cmd
}

func newExtensionsFetchCommand(g *options.Globals) *cobra.Command {
	var f options.ExtensionsOptions
	out := options.NewOutputOptions("text", "json")
	cmd := &cobra.Command{
		Use:   "fetch",
		Short: "Fetch the exact extension file of each platform into the cache",
		Long: `fetch resolves the set for --ray (matrix.yaml + catalog), then downloads the
file each platform installs, validates it and stores it in the cache. Files
already cached (or pinned by sha256 and present) cost no request. It prints
one line per file: id, version, target platform, OCI platforms, sha256, and
whether it was fetched or cached.

A file the catalog pins no sha256 for is trusted on first use: it is still
validated, and a warning names it and the digest accepted; --require-pins
refuses such files instead (release always does). A download that receives
nothing for --idle-timeout is cut and tried again; a slow but steady one is
never cut. The whole fetch ends after --timeout (default 30m) with one line
naming the hosts that did not answer; a request that waits longer than a few
seconds, and every retry, is said on stderr.

Base URLs: --marketplace-url / --openvsx-url, else IMAGECTL_MARKETPLACE_URL /
IMAGECTL_OPENVSX_URL, else matrix.yaml upstreams, else the public services.`,
		Example: `  imagectl extensions fetch --ray 2.46.0 --platform linux/amd64,linux/arm64
  imagectl extensions fetch --ray 2.46.0 --marketplace-url http://127.0.0.1:8080 --cache-dir /tmp/vsix
  imagectl extensions fetch --ray 2.46.0 --require-pins --idle-timeout 2m -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, set, err := f.ResolveSet(g, f.Platforms)
			if err != nil {
				return err
			}
			c, err := f.OpenCache(g)
			if err != nil {
				return err
			}
			got, err := f.Fetcher(g, cfg, c).Fetch(cmd.Context(), &set)
			if err != nil {
				return err
			}
			if out.JSON() {
				return options.WriteJSON(g.Stdout, fetchedViews(got))
			}
			tw := tabwriter.NewWriter(g.Stdout, 0, 4, 2, ' ', 0)
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
	f.AddResolve(cmd, true)
	f.AddCache(cmd.Flags())
	options.Add(cmd, &f.Upstream, &out)
	cmd.Flags().IntVar(&f.Parallel, "parallel", 4, "concurrent downloads")
	f.AddFetch(cmd.Flags(), options.PinsOptional)
	f.AddLimits(cmd.Flags())
	options.AddCommandTimeout(g, cmd, "timeout", 30*time.Minute, "host")
	options.ReadsFiles(cmd)
	return cmd
}

func newExtensionsLayoutCommand(g *options.Globals) *cobra.Command {
	var f options.ExtensionsOptions
	var platform, dir, inImage, settingsOut string
	out := options.NewOutputOptions("text", "json")
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
			cfg, set, err := f.ResolveSet(g, []string{platform})
			if err != nil {
				return err
			}
			c, err := f.OpenCache(g)
			if err != nil {
				return err
			}
			t, err := sourcedate.FromEnv()
			if err != nil {
				return err
			}
			inst, err := extensions.Layout(cmd.Context(), c, set.Extensions, extensions.LayoutOptions{
				Dir: dir, Platform: platform, InImageDir: inImage, VSCode: set.CodeServer.VSCode, Time: &t, Limits: f.Limits(),
			})
			if err != nil {
				return err
			}
			if !out.JSON() {
				for _, i := range inst {
					fmt.Fprintf(g.Stdout, "%s\t%s\t%s\n", i.Dir, i.TargetPlatform, i.SHA256)
				}
			}
			if settingsOut != "" {
				if err := extensions.WriteSettings(settingsOut, imagespec.ImageSettings(cfg.Settings), t); err != nil {
					return err
				}
			}
			if out.JSON() {
				views := make([]installedView, 0, len(inst))
				for _, i := range inst {
					views = append(views, installedView{ID: i.ID, Version: i.Version, TargetPlatform: i.TargetPlatform, SHA256: i.SHA256, Dir: i.Dir})
				}
				return options.WriteJSON(g.Stdout, views)
			}
			return nil
		},
	}
	f.AddResolve(cmd, false)
	f.AddCache(cmd.Flags())
	cmd.Flags().StringVar(&platform, "platform", "", "one OCI platform, e.g. linux/arm64")
	cmd.Flags().StringVar(&dir, "out", "", "output directory, empty or absent")
	cmd.Flags().StringVar(&inImage, "in-image-dir", imagespec.ExtensionsDir, "where the directory will live in the image (recorded in extensions.json)")
	cmd.Flags().StringVar(&settingsOut, "settings", "", "also write code-server's settings.json here")
	f.AddLimits(cmd.Flags())
	options.Add(cmd, &out, options.Check(func() error {
		if platform != "" && !slices.Contains(imagespec.Platforms(), platform) {
			return fmt.Errorf("--platform %q: want %s", platform, options.OrList(imagespec.Platforms()))
		}
		return nil
	}))
	options.MarkRequired(cmd, "platform", "out")
	options.ReadsFiles(cmd)
	return cmd
}

func newExtensionsLsCommand(g *options.Globals) *cobra.Command {
	var f options.ExtensionsOptions
	out := options.NewOutputOptions("text", "json")
	cmd := &cobra.Command{
		Use:     "ls",
		Short:   "List the extension cache (id, version, platform, digest, size)",
		Long:    "ls lists every cached VSIX, verifying each file's digest and that its manifest names the entry's id, version and target platform; a corrupt file, or an entry naming another extension's file, is removed (with a warning) and not listed.",
		Example: "  imagectl extensions ls --cache-dir /tmp/vsix\n  imagectl extensions ls -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.OpenCache(g)
			if err != nil {
				return err
			}
			ents, err := c.List(cmd.Context())
			if err != nil {
				return err
			}
			if out.JSON() {
				if ents == nil {
					ents = []cache.Entry{}
				}
				// An object, like every report: room for more than the
				// entries.
				return options.WriteJSON(g.Stdout, struct {
					CacheDir string        `json:"cacheDir"`
					Entries  []cache.Entry `json:"entries"`
				}{c.Dir(), ents})
			}
			tw := tabwriter.NewWriter(g.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tVERSION\tTARGET\tSHA256\tSIZE")
			for _, e := range ents {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", e.ID, e.Version, e.TargetPlatform, e.SHA256, e.Size)
			}
			return tw.Flush()
		},
	}
	f.AddCache(cmd.Flags())
	options.Add(cmd, &out)
	return cmd
}

func newExtensionsPinCommand(g *options.Globals) *cobra.Command {
	var f options.ExtensionsOptions
	out := options.NewOutputOptions("text", "json")
	cmd := &cobra.Command{
		Use:   "pin",
		Short: "Record the sha256 of every extension file the matrix builds in the catalog",
		Long: `pin fetches (and validates) the extension files of every buildable set
(or of --ray's set only) into the cache, then writes the sha256 and size of
each file the catalog does not pin yet into catalog.json. This is the one
deliberate trust-on-first-use step: run it where the upstreams are trusted,
review the catalog diff, and commit it; from then on every fetch (and
release, which requires pins) checks each file against its pin. A file the
catalog already pins is checked, never re-pinned.`,
		Example: `  imagectl extensions pin
  imagectl extensions pin --ray 2.46.0 --platform linux/amd64,linux/arm64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPin(cmd.Context(), g, &f, &out) },
	}
	cmd.Flags().StringVar(&f.Ray, "ray", "", "pin only this Ray version's set (default: every buildable set)")
	cmd.Flags().StringVar(&f.Python, "python", "", "with --ray: pin the CPython minor version (default: the matrix policy)")
	cmd.Flags().StringVar(&f.CodeServer, "code-server", "", "with --ray: pin the code-server version (default: newest compatible)")
	options.AddPlatformsFlag(cmd.Flags(), &f.Platforms, "OCI platforms, comma separated (default: matrix.yaml platforms)")
	f.AddCache(cmd.Flags())
	options.Add(cmd, &f.Upstream, &out)
	cmd.Flags().IntVar(&f.Parallel, "parallel", 4, "concurrent downloads")
	f.AddFetch(cmd.Flags(), options.PinsNone)
	f.AddLimits(cmd.Flags())
	options.AddCommandTimeout(g, cmd, "timeout", 30*time.Minute, "host")
	options.ReadsFiles(cmd)
	return cmd
}

// runPin fetches the extension files of the sets to pin and records the
// sha256 of each one the catalog does not pin yet.
func runPin(ctx context.Context, g *options.Globals, f *options.ExtensionsOptions, out *options.OutputOptions) error {
	cfg, cat, sets, err := pinSets(g, f)
	if err != nil {
		return err
	}
	c, err := f.OpenCache(g)
	if err != nil {
		return err
	}
	fe := f.Fetcher(g, cfg, c)
	var fetched []extensions.Fetched
	for _, set := range sets {
		got, err := fe.Fetch(ctx, &set)
		if err != nil {
			return err
		}
		fetched = append(fetched, got...)
	}
	// A version whose code no longer holds what the image's settings and
	// the probe assume is never pinned.
	if err := extensions.CheckContracts(ctx, fetched, f.Limits()); err != nil {
		return fmt.Errorf("%s left unchanged: %w", g.CatalogName(), err)
	}
	pinned, err := extensions.RecordPins(cat, fetched)
	if err != nil {
		return err
	}
	if len(pinned) > 0 {
		if err := catalog.Write(g.CatalogName(), cat); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	var files []fetchedFile
	for _, p := range pinned {
		k := p.ID + "@" + p.Version + " " + p.TargetPlatform
		if !seen[k] {
			seen[k] = true
			files = append(files, fetchedView(p))
		}
	}
	if out.JSON() {
		return options.WriteJSON(g.Stdout, struct {
			Catalog string        `json:"catalog"`
			Pinned  []fetchedFile `json:"pinned"`
			Sets    int           `json:"sets"`
		}{g.CatalogName(), append([]fetchedFile{}, files...), len(sets)})
	}
	for _, p := range files {
		fmt.Fprintf(g.Stdout, "pinned %s@%s (%s) sha256 %s\n", p.ID, p.Version, p.TargetPlatform, p.SHA256)
	}
	fmt.Fprintf(g.Stdout, "%s: %d extension file(s) newly pinned, %d set(s) checked\n", g.CatalogName(), len(seen), len(sets))
	return nil
}

// pinSets loads matrix.yaml and the catalog and resolves the sets pin
// covers: --ray's set, else every buildable one.
func pinSets(g *options.Globals, f *options.ExtensionsOptions) (*matrix.Config, *catalog.Catalog, []imagespec.Set, error) {
	if _, err := g.CatalogFile(); err != nil {
		return nil, nil, nil, err
	}
	cfg, err := g.LoadMatrix()
	if err != nil {
		return nil, nil, nil, err
	}
	cat, err := g.LoadCatalog()
	if err != nil {
		return nil, nil, nil, err
	}
	if f.Ray != "" {
		set, _, err := resolve.Resolve(cfg, cat, resolve.Request{Ray: f.Ray, Python: f.Python, CodeServer: f.CodeServer, Platforms: f.Platforms})
		if err != nil {
			return nil, nil, nil, err
		}
		return cfg, cat, []imagespec.Set{set}, nil
	}
	all, _, err := resolve.All(cfg, cat, f.Platforms)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, cat, all, nil
}

// fetchedFile is the JSON form of one extension file of fetch and pin.
type fetchedFile struct {
	ID             string   `json:"id"`
	Version        string   `json:"version"`
	TargetPlatform string   `json:"targetPlatform"`
	Platforms      []string `json:"platforms"`
	SHA256         string   `json:"sha256"`
	Size           int64    `json:"size"`
	Status         string   `json:"status"`
}

func fetchedView(r extensions.Fetched) fetchedFile {
	status := "fetched"
	if r.Cached {
		status = "cached"
	}
	return fetchedFile{ID: r.ID, Version: r.Version, TargetPlatform: r.TargetPlatform, Platforms: r.Platforms, SHA256: r.SHA256, Size: r.Size, Status: status}
}

func fetchedViews(rs []extensions.Fetched) []fetchedFile {
	views := make([]fetchedFile, 0, len(rs))
	for _, r := range rs {
		views = append(views, fetchedView(r))
	}
	return views
}

// installedView is the JSON form of one extension of layout.
type installedView struct {
	ID             string `json:"id"`
	Version        string `json:"version"`
	TargetPlatform string `json:"targetPlatform"`
	SHA256         string `json:"sha256"`
	// Dir is the folder name under --out.
	Dir string `json:"dir"`
}
