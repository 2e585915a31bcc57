package matrix

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/pylock"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/upstream/github"
	"github.com/imagectl/imagectl/upstream/httpx"
	"github.com/imagectl/imagectl/upstream/pip"
	"github.com/imagectl/imagectl/upstream/pypi"
	"github.com/imagectl/imagectl/upstream/registry"
)

// New returns imagectl matrix and its subcommands (resolve, list,
// refresh).
func New(g *options.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "Resolve compatible version sets from matrix.yaml and the catalog snapshot",
		Long: `matrix works with matrix.yaml (what to build: constraints and policies) and
catalog.json (a committed snapshot of upstream facts). refresh queries the
upstreams and rewrites the snapshot; resolve and list read only the two files
and never touch the network.`,
		Example: `  imagectl matrix refresh
  imagectl matrix resolve --ray 2.46.0 --explain
  imagectl matrix list --output json`,
	}
	cmd.AddCommand(newMatrixResolveCommand(g), newMatrixListCommand(g), newMatrixRefreshCommand(g))
	options.ReadsFiles(cmd)
	return cmd
}

func newMatrixResolveCommand(g *options.Globals) *cobra.Command {
	var (
		req     resolve.Request
		explain bool
	)
	out := options.NewOutputOptions("text", "json")
	cmd := &cobra.Command{
		Use:   "resolve --ray VERSION",
		Short: "Pick the newest compatible set for a Ray version",
		Long: `resolve picks, for the given Ray version, the newest compatible code-server
(and the VS Code inside it), the highest CPython that Ray ships wheels for on
every platform (within the matrix.yaml policy), the newest debugpy, and for
each extension the newest version whose engines.vscode accepts that VS Code
and that has a build for every platform (platform build preferred, else
universal). --explain says why each version won and why each newer one lost.

An impossible request exits non-zero naming the conflict; an unknown Ray
version lists the Ray versions the catalog knows.`,
		Example: `  imagectl matrix resolve --ray 2.46.0
  imagectl matrix resolve --ray 2.46.0 --output json
  imagectl matrix resolve --ray 2.46.0 --platform linux/arm64 --python 3.11 --explain
  imagectl matrix resolve --ray 2.46.0 --code-server 4.101.2 --output json --explain`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.Ray == "" {
				return options.Usagef("--ray is required (e.g. --ray 2.46.0)")
			}
			cfg, cat, err := g.LoadMatrixAndCatalog()
			if err != nil {
				return err
			}
			set, ex, err := resolve.Resolve(cfg, cat, req)
			if err != nil {
				if explain && ex != nil && len(ex.Decisions) > 0 {
					fmt.Fprint(g.Stderr, ex.String())
				}
				return err
			}
			if out.JSON() {
				// One shape with or without --explain.
				v := struct {
					Set         imagespec.Set        `json:"set"`
					Explanation *resolve.Explanation `json:"explanation,omitempty"`
				}{Set: set}
				v.Set.Tags, _ = setTagNames(cfg, set)
				if explain {
					v.Explanation = ex
				}
				return options.WriteJSON(g.Stdout, v)
			}
			writeSetText(g.Stdout, set, setTags(cfg, set))
			if explain {
				fmt.Fprintln(g.Stdout)
				fmt.Fprint(g.Stdout, ex.String())
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Ray, "ray", "", "Ray version (required), e.g. 2.46.0")
	f.StringVar(&req.CodeServer, "code-server", "", "pin the code-server version, e.g. 4.101.2 (default: newest compatible)")
	f.StringVar(&req.Python, "python", "", "pin the CPython version, e.g. 3.11 (default: matrix.yaml python policy)")
	options.AddPlatformsFlag(cmd.Flags(), &req.Platforms, "OCI platforms, comma separated (default: matrix.yaml platforms)")
	options.Add(cmd, &out)
	f.BoolVar(&explain, "explain", false, "explain why each version won and why each newer candidate lost")
	return cmd
}

func writeSetText(w io.Writer, s imagespec.Set, tags string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	base := s.CodeServer.Base
	if len(s.CodeServer.Platforms) == 0 {
		base += " (platform digests unknown)"
	}
	fmt.Fprintf(tw, "code-server\t%s (VS Code %s)\n", s.CodeServer.Version, s.CodeServer.VSCode)
	fmt.Fprintf(tw, "base\t%s\n", base)
	for _, p := range slices.Sorted(maps.Keys(s.CodeServer.Platforms)) {
		fmt.Fprintf(tw, "\t%s %s\n", p, s.CodeServer.Platforms[p])
	}
	tools := s.ToolsImage
	if _, err := name.NewDigest(tools); err != nil {
		tools += " (digest unknown: run imagectl matrix refresh)"
	}
	fmt.Fprintf(tw, "tools image\t%s\n", tools)
	ray := s.Ray
	if len(s.RayExtras) > 0 {
		ray = fmt.Sprintf("%s [%s]", s.Ray, strings.Join(s.RayExtras, ","))
	}
	fmt.Fprintf(tw, "ray\t%s\n", ray)
	fmt.Fprintf(tw, "python\t%s (Ray wheels on every platform: %s)\n", s.Python, strings.Join(s.RayPythons, ", "))
	fmt.Fprintf(tw, "debugpy\t%s\n", s.Debugpy)
	// The Python closure: locked wheels per platform.
	var closure []string
	for _, p := range s.Platforms {
		if ds, ok := s.PythonLocks[p]; ok {
			closure = append(closure, fmt.Sprintf("%d locked on %s", len(ds), p))
		} else {
			closure = append(closure, "unlocked on "+p)
		}
	}
	wheels := strings.Join(closure, ", ")
	if len(s.PythonLocks) < len(s.Platforms) {
		wheels += " (pip resolves at build time; run imagectl matrix refresh)"
	}
	fmt.Fprintf(tw, "wheels\t%s\n", wheels)
	fmt.Fprintf(tw, "platforms\t%s\n", strings.Join(s.Platforms, ", "))
	fmt.Fprintf(tw, "tags\t%s\n", tags)
	fmt.Fprintf(tw, "extensions\t(install order)\n")
	tw.Flush()
	for _, e := range s.Extensions {
		fmt.Fprintf(w, "  %s %s (%s, engines %s)\n", e.ID, e.Version, e.Source, e.Engine)
		for _, p := range slices.Sorted(maps.Keys(e.Files)) {
			f := e.Files[p]
			sum := "sha256 unknown"
			if f.SHA256 != "" {
				sum = "sha256:" + f.SHA256
			}
			fmt.Fprintf(w, "    %-12s %-12s %s\n", p, f.TargetPlatform, sum)
		}
	}
}

func newMatrixListCommand(g *options.Globals) *cobra.Command {
	var platforms []string
	out := options.NewOutputOptions("text", "json")
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Print every buildable combination (what CI builds)",
		Long: `list resolves, for every buildable Ray version (matrix.yaml components.ray:
constraint, exclude, and build: latest-patch or all), the newest compatible
set. Ray versions that cannot be resolved are reported on stderr with the
reason (and under "skipped" in JSON).`,
		Example: `  imagectl matrix list
  imagectl matrix list --output json | jq -r '.sets[].tags[0]'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, cat, err := g.LoadMatrixAndCatalog()
			if err != nil {
				return err
			}
			sets, skipped, err := resolve.All(cfg, cat, platforms)
			if err != nil {
				return err
			}
			if sets == nil {
				sets = []imagespec.Set{}
			}
			if out.JSON() {
				for i := range sets {
					sets[i].Tags, _ = setTagNames(cfg, sets[i])
				}
				return options.WriteJSON(g.Stdout, struct {
					Sets    []imagespec.Set   `json:"sets"`
					Skipped []resolve.Skipped `json:"skipped,omitempty"`
				}{sets, skipped})
			}
			tw := tabwriter.NewWriter(g.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "RAY\tPYTHON\tCODE-SERVER\tVS CODE\tDEBUGPY\tPLATFORMS\tTAGS")
			for _, s := range sets {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Ray, s.Python, s.CodeServer.Version, s.CodeServer.VSCode, s.Debugpy, strings.Join(s.Platforms, ","), strings.ReplaceAll(setTags(cfg, s), ", ", ","))
			}
			tw.Flush()
			for _, s := range skipped {
				fmt.Fprintf(g.Stderr, options.WarnPrefix+"skipped Ray %s: %s\n", s.Ray, s.Reason)
			}
			if len(sets) == 0 {
				return fmt.Errorf("no buildable combination (matrix %s, catalog %s)", g.MatrixName(), g.CatalogName())
			}
			return nil
		},
	}
	options.Add(cmd, &out)
	options.AddPlatformsFlag(cmd.Flags(), &platforms, "OCI platforms, comma separated (default: matrix.yaml platforms)")
	return cmd
}

// refreshFlags are the upstream overrides of matrix refresh: each is the
// flag, else its environment variable (options.BindEnv), else matrix.yaml.
type refreshFlags struct {
	upstream            options.UpstreamOptions
	reg                 options.RegistryOptions
	pypi, github        string
	baseImage, versions string
	pip, packageIndex   string
	noPythonLock        bool
	timeout             time.Duration
	retries             int
	tokenHost           string
	idleTimeout         time.Duration
	out                 options.OutputOptions
}

func newMatrixRefreshCommand(g *options.Globals) *cobra.Command {
	f := refreshFlags{
		reg: options.RegistryOptions{Usage: "allow plain HTTP to the base and tools image registries"},
		out: options.NewOutputOptions("text", "json"),
	}
	cmd := &cobra.Command{
		Use:   "refresh",
		Short: "Query the upstreams and rewrite the catalog snapshot",
		Long: `refresh reads matrix.yaml, queries every upstream for what resolution needs
(code-server versions and base image digests from the registry or GitHub
releases, the VS Code each code-server bundles from its base image's
/app/code-server/lib/vscode/package.json (base.vscodeOverrides only when
that cannot be read, with a warning), the digest that build.toolsImage
names from its registry, the python-build-standalone tarballs and their
sha256 from the GitHub release (SHA256SUMS) when build.pythonRuntime is
standalone: of the newest release after build.standalone.release that has
the CPython minor of every set for x86_64 and aarch64, each tarball listed
in its SHA256SUMS, else of build.standalone.release, Ray and debugpy from
PyPI's Simple API in its JSON form (PEP 691), extensions from the VS
Marketplace or Open VSX) and writes catalog.json atomically: on any error the
old snapshot is left as it was.

Then it locks the complete Python closure of every set matrix list would
build, per platform: pip's own resolver (pip install --dry-run --report, run
here with the build's --platform, --python-version and --only-binary flags
against upstreams.packageIndex) gives the name, version, wheel, URL and
sha256 of every distribution that ray[<extras>]==X and debugpy==Y pull in.
The build installs exactly that closure (pip install --no-deps
--require-hashes). A closure with no installable wheel on a platform is
recorded as blocked by the distribution pip names.

Each base URL comes from the flag, else the environment variable
(IMAGECTL_PYPI_URL, IMAGECTL_MARKETPLACE_URL, IMAGECTL_OPENVSX_URL,
IMAGECTL_GITHUB_URL, IMAGECTL_BASE_IMAGE), else matrix.yaml upstreams / base.
GITHUB_TOKEN, when set, authenticates GitHub API requests (60 an hour per
address without it); it is never sent with downloads, and only over HTTPS to
--github-token-host (api.github.com): a GitHub URL naming another host, or
plain HTTP, gets no token (with a warning).

Extension files the old catalog pins by sha256 keep their pins (the
upstreams publish no digest for most files); a file that changed upstream
since then fails the next fetch. New files are pinned with imagectl
extensions pin.`,
		Example: `  imagectl matrix refresh
  imagectl matrix refresh --pypi-url http://127.0.0.1:8080 --base-image localhost:5000/linuxserver/code-server
  IMAGECTL_OPENVSX_URL=https://openvsx.example.com imagectl matrix refresh --catalog /tmp/catalog.json -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRefresh(cmd.Context(), g, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.pypi, "pypi-url", "", "PyPI base URL (default matrix.yaml upstreams.pypi)")
	options.BindEnv(cmd.Flags(), "pypi-url", "IMAGECTL_PYPI_URL")
	fl.StringVar(&f.github, "github-url", "", "GitHub API base URL (default matrix.yaml upstreams.github)")
	options.BindEnv(cmd.Flags(), "github-url", "IMAGECTL_GITHUB_URL")
	fl.StringVar(&f.baseImage, "base-image", "", "base image repository to list tags of (default matrix.yaml base.image)")
	options.BindEnv(cmd.Flags(), "base-image", "IMAGECTL_BASE_IMAGE")
	fl.StringVar(&f.versions, "versions", "", "code-server version source: registry-tags or github-releases (default matrix.yaml base.versions)")
	options.BindEnv(cmd.Flags(), "versions", "IMAGECTL_BASE_VERSIONS")
	fl.StringVar(&f.pip, "pip", strings.Join(pip.DefaultCommand, " "), "the pip command that locks the Python closures (pip >= 22.2)")
	options.BindEnv(cmd.Flags(), "pip", "IMAGECTL_PIP")
	options.AddPackageIndexFlag(cmd.Flags(), &f.packageIndex, "PEP 503 index the closures are locked against (default matrix.yaml upstreams.packageIndex)")
	fl.BoolVar(&f.noPythonLock, "no-python-lock", false, "record no Python closures (builds then let pip resolve dependencies unlocked)")
	fl.DurationVar(&f.timeout, "http-timeout", 60*time.Second, "how long one HTTP attempt may wait for the response headers (a body is bounded by the idle timeout instead)")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", httpx.DefaultIdleTimeout, "fail (and retry) a response body that sends no byte for this long (0: no limit)")
	fl.IntVar(&f.retries, "retries", 5, "retries of a failed HTTP attempt (429/503 honour Retry-After)")
	fl.StringVar(&f.tokenHost, "github-token-host", github.DefaultTokenHost, "the one host GITHUB_TOKEN is sent to, over HTTPS only")
	options.BindEnv(cmd.Flags(), "github-token-host", "IMAGECTL_GITHUB_TOKEN_HOST")
	options.Add(cmd, &f.upstream, &f.reg, &f.out, options.Check(f.Validate))
	options.AddCommandTimeout(g, cmd, "timeout", 30*time.Minute, "host")
	return cmd
}

// runRefresh queries the upstreams, locks the Python closures and writes
// the catalog; on any error the old catalog is left as it was.
func runRefresh(ctx context.Context, g *options.Globals, f *refreshFlags) error {
	catFile, err := g.CatalogFile()
	if err != nil {
		return err
	}
	cfg, err := g.LoadMatrix()
	if err != nil {
		return err
	}
	// The snapshot being replaced: its extension pins are kept, and its
	// base images' VS Code versions reused where the digests are the same.
	old, oldErr := catalog.Load(catFile)
	// What a failure leaves: the old catalog, or no file at all.
	kept := catFile + " left unchanged"
	if errors.Is(oldErr, fs.ErrNotExist) {
		kept = catFile + " not written"
	}
	hc := httpx.New(httpx.WithTimeout(f.timeout), httpx.WithIdleTimeout(f.idleTimeout), httpx.WithRetries(f.retries))
	src, err := f.sources(cfg, hc, old, g.Stderr)
	if err != nil {
		return err
	}
	var locker *pip.Locker
	if !f.noPythonLock {
		// pip must run here before anything is queried: a missing
		// pip fails in one line, not after minutes of refresh.
		locker = pip.New(pip.WithCommand(strings.Fields(f.pip)...),
			pip.WithTimeout(f.timeout), pip.WithRetries(f.retries), pip.WithHTTPClient(hc))
		if _, err := locker.Check(ctx); err != nil {
			return fmt.Errorf("refresh failed, %s: python lock: %w (or pass --no-python-lock)", kept, err)
		}
	}
	c, err := catalog.Refresh(ctx, cfg, src)
	if err != nil {
		return fmt.Errorf("refresh failed, %s: %w", kept, err)
	}
	// Keep the extension pins of the snapshot being replaced.
	pins := 0
	if oldErr == nil {
		pins = extensions.CarryPins(old, c)
	} else if !errors.Is(oldErr, fs.ErrNotExist) {
		fmt.Fprintf(g.Warnings(), "warning: the old catalog does not load, so none of its extension pins or base image VS Code versions are kept: %v\n", oldErr)
	}
	for _, v := range extensions.UncheckedVersions(old, c) {
		fmt.Fprintf(g.Warnings(), "notice: %s is new in the catalog and unpinned: imagectl extensions pin checks its code against what the image's settings and the probe assume before it is pinned\n", v)
	}
	locked := "not locked (--no-python-lock)"
	if locker != nil {
		if locked, err = lockPython(ctx, cfg, c, options.FirstNonEmpty(f.packageIndex, cfg.Upstreams.PackageIndex), locker); err != nil {
			return fmt.Errorf("refresh failed, %s: %w", kept, err)
		}
	}
	if err := catalog.Write(catFile, c); err != nil {
		return err
	}
	return printRefresh(g, f, old, c, locked, pins)
}

// sources are the upstreams refresh queries, each from its flag, else
// matrix.yaml.
// old is the snapshot being replaced (nil if none loads).
func (f *refreshFlags) sources(cfg *matrix.Config, hc *http.Client, old *catalog.Catalog, stderr io.Writer) (catalog.Sources, error) {
	u := cfg.Upstreams
	src := catalog.Sources{
		PyPI:       pypi.New(pypi.WithBaseURL(options.FirstNonEmpty(f.pypi, u.PyPI)), pypi.WithHTTPClient(hc)),
		Extensions: f.upstream.ExtensionSources(cfg, hc).Catalog(),
	}
	var opts []registry.Option
	if f.reg.Insecure {
		opts = append(opts, registry.WithInsecure())
	}
	// build.toolsImage is locked like the base image: its digest
	// goes into the snapshot (manifests only, no layers).
	src.Images = registry.NewImages(opts...)
	// So is the python-build-standalone release of build.standalone:
	// its tarballs' URLs and sha256 (GitHub release API, SHA256SUMS).
	gh := options.FirstNonEmpty(f.github, u.GitHub)
	ghOpts := []github.Option{github.WithBaseURL(gh), github.WithHTTPClient(hc), github.WithToken(os.Getenv("GITHUB_TOKEN")),
		github.WithTokenHost(f.tokenHost)}
	ghc := github.New(ghOpts...)
	if err := ghc.TokenError(); err != nil {
		fmt.Fprintf(safetext.Writer(stderr), options.WarnPrefix+"warning: %v\n", err)
	}
	src.PythonRuntimes = ghc
	// A newer release is proposed only when it has the CPython minor of
	// every set matrix list builds.
	src.PythonMinors = func(c *catalog.Catalog) ([]string, error) {
		sets, _, err := resolve.All(cfg, c, nil)
		if err != nil {
			return nil, err
		}
		var minors []string
		for _, s := range sets {
			if !slices.Contains(minors, s.Python) {
				minors = append(minors, s.Python)
			}
		}
		return minors, nil
	}
	src.Notes = safetext.Writer(stderr)
	switch versions := options.FirstNonEmpty(f.versions, cfg.Base.Versions); versions {
	case matrix.VersionsRegistryTags:
		// The VS Code of each code-server is read from its base image
		// (base.vscodeOverrides only when that fails, with a warning).
		var known []catalog.CodeServer
		if old != nil {
			known = old.CodeServer
		}
		ropts := append(slices.Clip(opts), registry.WithKnown(known), registry.WithWarnings(options.NewWarnings(stderr)))
		rs, err := registry.New(options.FirstNonEmpty(f.baseImage, cfg.Base.Image), cfg.Base.TagPattern, cfg.Base.VSCodeOverrides, ropts...)
		if err != nil {
			return src, err
		}
		src.CodeServer = rs
	case matrix.VersionsGitHubReleases:
		src.CodeServer = github.New(append(ghOpts, github.WithVSCodeOverrides(cfg.Base.VSCodeOverrides))...)
	default:
		return src, fmt.Errorf("--versions %q: want %s or %s", versions, matrix.VersionsRegistryTags, matrix.VersionsGitHubReleases)
	}
	return src, nil
}

// printRefresh prints what refresh wrote, as text or JSON; old is the
// snapshot it replaced (nil if none loaded).
func printRefresh(g *options.Globals, f *refreshFlags, old, c *catalog.Catalog, locked string, kept int) error {
	tools := "not recorded"
	if t := c.ToolsImage; t != nil {
		tools = t.Ref + " is " + t.Digest
	}
	var pys []string
	release := ""
	for _, r := range c.PythonRuntimes {
		pys = append(pys, r.Version)
		release = r.Release
	}
	changes := runtimeChanges(old, c)
	if f.out.JSON() {
		return options.WriteJSON(g.Stdout, refreshSummary{
			Catalog: g.CatalogName(), CodeServer: len(c.CodeServer), Ray: len(c.Ray), Debugpy: len(c.Debugpy), Extensions: len(c.Extensions),
			ToolsImage: c.ToolsImage, PythonRuntimes: pys, PythonRuntimeRelease: release, PythonRuntimeChanges: changes,
			PythonClosures: locked, KeptPins: kept,
		})
	}
	runtimes := "none recorded"
	if len(pys) > 0 {
		runtimes = strings.Join(pys, ", ") + " (python-build-standalone " + release + ")"
	}
	fmt.Fprintf(g.Stdout, "wrote %s: %d code-server, %d Ray, %d debugpy versions, %d extensions; tools image %s; Python runtimes %s; Python closures %s\n",
		g.CatalogName(), len(c.CodeServer), len(c.Ray), len(c.Debugpy), len(c.Extensions), tools, runtimes, locked)
	if kept > 0 {
		fmt.Fprintf(g.Stdout, "kept %d extension file pin(s) of the previous snapshot\n", kept)
	}
	for _, ch := range changes {
		fmt.Fprintf(g.Stdout, "python runtime %s\n", ch)
	}
	return nil
}

// runtimeChanges lists, per CPython minor, the locked runtimes that differ
// between the old snapshot and c: another release, patch or sum.
func runtimeChanges(old, c *catalog.Catalog) []string {
	desc := func(r catalog.PythonRuntime) string { return r.Version + " (" + r.Release + ")" }
	before := map[string]catalog.PythonRuntime{}
	if old != nil {
		for _, r := range old.PythonRuntimes {
			before[r.Python] = r
		}
	}
	var out []string
	for _, r := range c.PythonRuntimes {
		o, ok := before[r.Python]
		delete(before, r.Python)
		switch {
		case !ok:
			out = append(out, r.Python+": "+desc(r)+" added")
		case o.Release != r.Release || o.Version != r.Version || o.Repository != r.Repository || o.Flavor != r.Flavor:
			out = append(out, r.Python+": "+desc(o)+" -> "+desc(r))
		case !maps.Equal(o.Files, r.Files):
			out = append(out, r.Python+": "+desc(r)+" tarballs changed")
		}
	}
	for _, m := range slices.Sorted(maps.Keys(before)) {
		out = append(out, m+": "+desc(before[m])+" removed")
	}
	return out
}

// Validate refuses a --versions (or IMAGECTL_BASE_VERSIONS) refresh does
// not know; matrix.yaml's base.versions is checked when matrix.yaml loads.
func (f *refreshFlags) Validate() error {
	switch f.versions {
	case "", matrix.VersionsRegistryTags, matrix.VersionsGitHubReleases:
		return nil
	}
	return fmt.Errorf("--versions %q: want %s or %s", f.versions, matrix.VersionsRegistryTags, matrix.VersionsGitHubReleases)
}

// refreshSummary is matrix refresh's -o json.
type refreshSummary struct {
	Catalog        string              `json:"catalog"`
	CodeServer     int                 `json:"codeServerVersions"`
	Ray            int                 `json:"rayVersions"`
	Debugpy        int                 `json:"debugpyVersions"`
	Extensions     int                 `json:"extensions"`
	ToolsImage     *catalog.ToolsImage `json:"toolsImage,omitempty"`
	PythonRuntimes []string            `json:"pythonRuntimes"`
	// PythonRuntimeRelease is the python-build-standalone release locked.
	PythonRuntimeRelease string `json:"pythonRuntimeRelease,omitempty"`
	// PythonRuntimeChanges are the runtimes that differ from the replaced
	// snapshot's ("3.12: 3.12.11 (20250808) -> 3.12.12 (20251014)").
	PythonRuntimeChanges []string `json:"pythonRuntimeChanges,omitempty"`
	PythonClosures       string   `json:"pythonClosures"`
	KeptPins             int      `json:"keptPins"`
}

// lockPython locks the Python closure of every set matrix list resolves
// from c (every platform of matrix.yaml) against index, into c, and
// summarizes it for the refresh line.
func lockPython(ctx context.Context, cfg *matrix.Config, c *catalog.Catalog, index string, l pylock.Locker) (string, error) {
	sets, _, err := resolve.All(cfg, c, nil)
	if err != nil {
		return "", fmt.Errorf("python lock: resolving the sets to lock: %w", err)
	}
	keys := pylock.Keys(sets)
	if err := catalog.LockPython(ctx, c, keys, index, l, 2); err != nil {
		return "", err
	}
	n, blocked := 0, []string{}
	for _, lk := range c.PythonLocks {
		if lk.Blocked != nil {
			blocked = append(blocked, fmt.Sprintf("%s (by %s)", lk.Key(), cmp.Or(lk.Blocked.Distribution, "a conflict")))
			continue
		}
		n += len(lk.Distributions)
	}
	s := fmt.Sprintf("%d locked (%d wheels)", len(c.PythonLocks)-len(blocked), n)
	if len(blocked) > 0 {
		s += fmt.Sprintf(", %d blocked: %s", len(blocked), strings.Join(blocked, "; "))
	}
	return s, nil
}

// setTags renders the tags of s for display (imagectl matrix list/resolve):
// they carry the inputs digest, so they are rendered with matrix.yaml's
// definition (no overrides); Resolve leaves them out of the lock.
func setTags(cfg *matrix.Config, s imagespec.Set) string {
	names, err := setTagNames(cfg, s)
	if err != nil {
		return "(not rendered: " + err.Error() + ")"
	}
	return strings.Join(names, ", ")
}

// setTagNames are the tags of s, for the JSON of matrix list and resolve.
func setTagNames(cfg *matrix.Config, s imagespec.Set) ([]string, error) {
	def, err := build.NewDefinition(cfg, build.Overrides{}, options.Version())
	if err != nil {
		return nil, err
	}
	tags, err := def.Tags(s)
	if err != nil {
		return nil, err
	}
	return tags.Names(), nil
}
