package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/build/pipeline"
	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/internal/sourcedate"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/sign"
	"github.com/imagectl/imagectl/verify"
)

type buildFlags struct {
	ext             extensionsFlags
	push            bool
	repo            string
	dist            string
	addr            string
	driver          string
	builders        []string
	def             definitionFlags
	cacheFrom       []string
	cacheTo         []string
	output          string
	progress        string
	provenance      bool
	sbom            bool
	sbomFormat      string
	sbomFromLock    bool
	insecure        bool
	sign            bool
	key             string
	keyPasswordFile string
	sourceDateEpoch string
	revision        string
	force           bool
	verifyKey       string
}

// signer starts decrypting --key in the background (cosign's scrypt takes
// about 0.2 s) and returns a func that waits for it, for the pipeline to
// call when it needs the key, and the --verify-key public key, if given.
func (f *buildFlags) signer(ctx context.Context) (func(context.Context) (*sign.Signer, error), signature.Verifier, error) {
	if !f.sign {
		if f.verifyKey != "" {
			return nil, nil, fmt.Errorf("--verify-key is the public key of the --sign --key: add --sign")
		}
		return nil, nil, nil
	}
	if f.key == "" {
		return nil, nil, fmt.Errorf("--sign needs --key (a cosign private key file)")
	}
	var vk signature.Verifier
	if f.verifyKey != "" {
		var err error
		if vk, err = verify.LoadPublicKey(f.verifyKey); err != nil {
			return nil, nil, fmt.Errorf("--verify-key: %w", err)
		}
	}
	pw := sign.PasswordFromEnv()
	if f.keyPasswordFile != "" {
		pw = sign.PasswordFromFile(f.keyPasswordFile)
	}
	type loaded struct {
		s   *sign.Signer
		err error
	}
	ch := make(chan loaded, 1)
	go func() {
		s, err := sign.LoadKey(ctx, f.key, pw)
		ch <- loaded{s, err}
	}()
	var once sync.Once
	var l loaded
	return func(ctx context.Context) (*sign.Signer, error) {
		once.Do(func() {
			select {
			case l = <-ch:
			case <-ctx.Done():
				l.err = ctx.Err()
			}
		})
		return l.s, l.err
	}, vk, nil
}

// definitionFlags override matrix.yaml's build: section and
// upstreams.packageIndex. build, plan and release register the same flags
// and hand them to build.NewDefinition, so all three compute the same inputs
// digest.
type definitionFlags struct {
	toolsImage    string
	packageIndex  string
	pythonRuntime string
	standaloneURL string
	standaloneSHA []string
}

func (f *definitionFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.toolsImage, "tools-image", os.Getenv("IMAGECTL_TOOLS_IMAGE"), "override matrix.yaml build.toolsImage and the catalog's digest for it: the build-platform image with python3 and pip that cross-installs the wheels, used as given (pin it: NAME@sha256:...) (env IMAGECTL_TOOLS_IMAGE)")
	fl.StringVar(&f.packageIndex, "package-index", os.Getenv("IMAGECTL_PACKAGE_INDEX_URL"), "override matrix.yaml upstreams.packageIndex: the PEP 503 index for pip (env IMAGECTL_PACKAGE_INDEX_URL)")
	fl.StringVar(&f.pythonRuntime, "python-runtime", "", "override matrix.yaml build.pythonRuntime: standalone (python-build-standalone, unpacked on the build platform) or base (the base image's own python3)")
	fl.StringVar(&f.standaloneURL, "python-standalone-url", os.Getenv("IMAGECTL_PYTHON_STANDALONE_URL"), "override matrix.yaml build.standalone for the set's Python: install_only .tar.gz URL, {arch} becomes x86_64 or aarch64 (env IMAGECTL_PYTHON_STANDALONE_URL; needs --python-standalone-sha256)")
	fl.StringArrayVar(&f.standaloneSHA, "python-standalone-sha256", nil, "ARCH=HEX sha256 of each --python-standalone-url tarball (x86_64=..., aarch64=...)")
}

// definition maps the flags onto build.NewDefinition.
func (f *definitionFlags) definition(cfg *matrix.Config) (*build.Definition, error) {
	o := build.Overrides{ToolsImage: f.toolsImage, PackageIndex: f.packageIndex, PythonRuntime: f.pythonRuntime, StandaloneURL: f.standaloneURL}
	for _, kv := range f.standaloneSHA {
		arch, sum, ok := strings.Cut(kv, "=")
		if !ok || (arch != "x86_64" && arch != "aarch64") {
			return nil, fmt.Errorf("--python-standalone-sha256 %q: want x86_64=HEX or aarch64=HEX", kv)
		}
		if o.StandaloneSHA256 == nil {
			o.StandaloneSHA256 = map[string]string{}
		}
		o.StandaloneSHA256[arch] = sum
	}
	return build.NewDefinition(cfg, o, Version)
}

func newBuildCommand(g *globals) *cobra.Command {
	var f buildFlags
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the multi-arch image for one Ray version through BuildKit",
		Long: `build resolves the set for --ray (matrix.yaml + catalog.json), fetches the
exact extension file of each platform, and solves one BuildKit build per
platform from dockerfiles/Dockerfile: Python packages are cross-installed on
the build platform and the target stage only copies files, so an arm64 image
built on amd64 runs no emulated step. With --push the platform manifests are
pushed by digest, joined in one index and tagged with the versioned tag (which
carries the first 12 hex digits of the inputs digest; floating tags are moved
by imagectl release); with --sign the index and every platform manifest are
signed (cosign key). When the versioned tag already names an image of the
same inputs (and, with --sign, its signatures verify with --key), build
--push solves, pushes and signs nothing and prints that image; --force
rebuilds it. The definition parameters (tools image, Python runtime,
package index) come from matrix.yaml's build: section and upstreams; the flags
below only override them, exactly as on imagectl plan and release.
Without --push an OCI archive that "docker load" accepts is written to --dist.

buildkitd: --buildkit-addr, else $BUILDKIT_HOST, else ` + build.DefaultAddress + `;
--builder linux/arm64=tcp://arm-host:1234 sends one platform elsewhere;
--driver docker-container starts a moby/buildkit container (needs Docker).`,
		Example: `  imagectl build --ray 2.46.0
  imagectl build --ray 2.46.0 --push --repo ghcr.io/me/code-server-ray --sign --key cosign.key
  imagectl build --ray 2.46.0 --builder linux/arm64=tcp://arm64-builder:1234 --push --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if f.output != "text" && f.output != "json" {
				return fmt.Errorf("--output %q: want text or json", f.output)
			}
			cfg, err := matrix.Load(g.matrixPath)
			if err != nil {
				return err
			}
			cat, err := catalog.Load(g.catalog())
			if err != nil {
				return err
			}
			c, err := f.ext.openCache(g)
			if err != nil {
				return err
			}
			// The set is resolved here, once, so that with --require-pins
			// unpinned extension files are refused before anything else;
			// without it the fetcher warns about each file it trusts on
			// first use, naming the sha256 it accepted.
			set, _, err := resolve.Resolve(cfg, cat, resolve.Request{Ray: f.ext.ray, Python: f.ext.python, CodeServer: f.ext.codeServer, Platforms: f.ext.platforms})
			if err != nil {
				return fmt.Errorf("resolving: %w", err)
			}
			if f.ext.requirePins {
				if err := extensions.CheckPins(set.Extensions, set.Platforms); err != nil {
					return err
				}
			}
			epoch, err := buildSourceDateEpoch(f.sourceDateEpoch)
			if err != nil {
				return err
			}
			bk, err := f.buildKit(cmd)
			if err != nil {
				return err
			}
			loadSigner, verifyKey, err := f.signer(ctx)
			if err != nil {
				return err
			}
			def, err := f.def.definition(cfg)
			if err != nil {
				return err
			}
			res, err := pipeline.Run(ctx, bk, pipeline.Request{
				Matrix:          cfg,
				Definition:      def,
				Set:             &set,
				Revision:        firstNonEmpty(f.revision, gitRevision()),
				SourceDateEpoch: epoch,
				Force:           f.force,
				Warnings:        g.stderr,
				Extensions: pipeline.ExtensionOptions{
					Cache:   c,
					Sources: f.ext.sources(cfg, f.ext.httpClient(g)),
					Limits:  f.ext.limits(),
					Options: []extensions.Option{extensions.WithRequirePins(f.ext.requirePins)},
				},
				Solve: pipeline.SolveOptions{
					Provenance:   f.provenance,
					SBOM:         f.sbom,
					CacheFrom:    f.cacheFrom,
					CacheTo:      f.cacheTo,
					Progress:     g.stderr,
					ProgressMode: f.progress,
				},
				Publish: pipeline.PublishOptions{Repo: f.repo, Push: f.push, DistDir: f.dist, Insecure: f.insecure},
				Sign: pipeline.SignOptions{
					LoadSigner:    loadSigner,
					VerifyKey:     verifyKey,
					VerifyKeyName: "--verify-key " + f.verifyKey,
					SBOMFormat:    f.sbomFormat,
					SBOMFromLock:  f.sbomFromLock,
				},
			})
			if err != nil {
				return err
			}
			if f.output == "json" {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			return printBuildResult(g, res)
		},
	}
	f.ext.addResolve(cmd, true)
	f.ext.addCache(cmd)
	f.ext.addFetch(cmd, pinsOptional)
	f.def.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.ext.marketplaceURL, "marketplace-url", "", "VS Marketplace base URL (env IMAGECTL_MARKETPLACE_URL)")
	fl.StringVar(&f.ext.openvsxURL, "openvsx-url", "", "Open VSX base URL (env IMAGECTL_OPENVSX_URL)")
	fl.BoolVar(&f.push, "push", false, "push to --repo by digest and tag it with the versioned (immutable) tag; floating tags are moved by imagectl release")
	fl.StringVar(&f.repo, "repo", "", "image repository REGISTRY/NAME (default: matrix.yaml's first repository)")
	fl.StringVar(&f.dist, "dist", "dist", "directory for the OCI archive when not pushing")
	fl.StringVar(&f.addr, "buildkit-addr", "", "buildkitd address (env BUILDKIT_HOST; default "+build.DefaultAddress+")")
	fl.StringVar(&f.driver, "driver", "remote", "remote (connect to --buildkit-addr) or docker-container (start a moby/buildkit container)")
	fl.StringArrayVar(&f.builders, "builder", nil, "PLATFORM=ADDR: build that platform on another buildkitd (repeatable)")
	fl.StringArrayVar(&f.cacheFrom, "cache-from", nil, "registry cache to import, REGISTRY/NAME[:TAG] (a per-platform suffix is added)")
	fl.StringArrayVar(&f.cacheTo, "cache-to", nil, "registry cache to export (mode=max), REGISTRY/NAME[:TAG]")
	fl.StringVar(&f.output, "output", "text", "text or json")
	fl.StringVar(&f.progress, "progress", "auto", "auto, tty, plain or quiet (on stderr)")
	fl.BoolVar(&f.provenance, "provenance", true, "attach buildkitd's SLSA provenance to each platform manifest (as an OCI referrer)")
	fl.BoolVar(&f.sbom, "buildkit-sbom", false, "also ask buildkitd for its SBOM (runs docker/buildkit-syft-scanner, which must be pullable)")
	fl.StringVar(&f.sbomFormat, "sbom-format", "spdx", "format of the signed SBOM scanned from each platform image with syft (with --sign): spdx (SPDX 2.3) or cyclonedx")
	fl.BoolVar(&f.sbomFromLock, "sbom-from-lock", false, "sign an SBOM written from the lock instead of scanning each platform image")
	fl.BoolVar(&f.insecure, "insecure-registry", false, "allow plain HTTP to a registry other than localhost")
	fl.BoolVar(&f.sign, "sign", false, "sign the index and every platform manifest (needs --push and --key)")
	fl.StringVar(&f.key, "key", "", "cosign private key file")
	fl.StringVar(&f.keyPasswordFile, "key-password-file", "", "file holding the key password (default: env COSIGN_PASSWORD)")
	fl.StringVar(&f.sourceDateEpoch, "source-date-epoch", "", "Unix time for every timestamp in the image (default: env SOURCE_DATE_EPOCH, else the git commit time, else 0)")
	fl.StringVar(&f.revision, "revision", "", "source revision label (default: git rev-parse HEAD)")
	fl.StringVar(&f.verifyKey, "verify-key", "", "with --sign: the public half of --key (cosign.pub); the published-inputs check verifies with it, so --key is decrypted only when something is signed")
	fl.BoolVar(&f.force, "force", false, "with --push: build, push and sign even when the versioned tag already names an image of these inputs (with --sign: one whose signatures verify with --key)")
	return cmd
}

// buildKit maps --buildkit-addr, BUILDKIT_HOST, --driver and --builder onto
// a build.BuildKit.
func (f *buildFlags) buildKit(cmd *cobra.Command) (*build.BuildKit, error) {
	addr := firstNonEmpty(f.addr, os.Getenv("BUILDKIT_HOST"))
	switch f.driver {
	case "remote":
	case "docker-container":
		if addr != "" {
			return nil, fmt.Errorf("--driver docker-container starts its own buildkitd; drop --buildkit-addr/BUILDKIT_HOST")
		}
		a, err := build.EnsureDockerContainer(cmd.Context(), "imagectl-buildkit", "")
		if err != nil {
			return nil, err
		}
		addr = a
	default:
		return nil, fmt.Errorf("--driver %q: want remote or docker-container", f.driver)
	}
	opts := []build.BuildKitOption{build.WithAddress(addr)}
	for _, b := range f.builders {
		p, a, ok := strings.Cut(b, "=")
		if !ok || p == "" || a == "" {
			return nil, fmt.Errorf("--builder %q: want PLATFORM=ADDRESS, e.g. linux/arm64=tcp://arm64-host:1234", b)
		}
		if !strings.HasPrefix(p, "linux/") {
			return nil, fmt.Errorf("--builder %q: platform must look like linux/arm64", b)
		}
		opts = append(opts, build.WithBuilder(p, a))
	}
	return build.NewBuildKit(opts...), nil
}

// buildSourceDateEpoch picks the time every timestamp in the image is set
// to: --source-date-epoch, else SOURCE_DATE_EPOCH, else the time of the git
// commit, else the Unix epoch.
func buildSourceDateEpoch(flag string) (time.Time, error) {
	return sourcedate.Resolve("--source-date-epoch", flag, gitCommitTime)
}

// gitCommitTime is the commit time of HEAD, or "" outside a git checkout.
func gitCommitTime() (source, value string) {
	out, err := exec.Command("git", "log", "-1", "--format=%ct").Output()
	if err != nil {
		return "", ""
	}
	return "the git commit time", strings.TrimSpace(string(out))
}

func gitRevision() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func printBuildResult(g *globals, res *pipeline.Result) error {
	fmt.Fprintf(g.stdout, "image   %s\n", res.Ref)
	if res.Published != "" {
		fmt.Fprintf(g.stdout, "inputs  %s\n", res.InputsDigest)
		fmt.Fprintf(g.stdout, "unchanged: %s\n", res.Published)
		return nil
	}
	if len(res.Tags) > 0 {
		fmt.Fprintf(g.stdout, "tags    %s\n", strings.Join(res.Tags, ", "))
	}
	fmt.Fprintf(g.stdout, "inputs  %s\n", res.InputsDigest)
	fmt.Fprintf(g.stdout, "tools   %s\n", res.ToolsImage)
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLATFORM\tDIGEST\tBUILDER\tRUN STEPS\tEMULATED\tCACHED\tSECONDS")
	for _, p := range res.Platforms {
		d, _ := p.Duration.MarshalJSON()
		fmt.Fprintf(tw, "%s\t%s\t%s (%s)\t%d\t%d\t%d\t%s\n", p.Platform, p.Digest, p.Builder, p.BuildPlatform, p.Steps, p.EmulatedSteps, p.CachedSteps, d)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.Signed != nil {
		fmt.Fprintf(g.stdout, "signed  %d manifests (index and every platform)\n", len(res.Signed.Targets))
	}
	return nil
}
