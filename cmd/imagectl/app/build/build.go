package build

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/build/pipeline"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/cache"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/keys"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/resolve"
	"github.com/imagectl/imagectl/sign"
)

type buildFlags struct {
	ext  options.ExtensionsOptions
	bk   options.BuildKitOptions
	img  options.ImageOptions
	def  options.DefinitionOptions
	reg  options.RegistryOptions
	key  options.KeyOptions
	out  options.OutputOptions
	push bool
	repo options.RepositoryOptions
	dist string
	sbom bool
	sign bool
	// force rebuilds what the published check would reuse.
	force bool
}

// Validate refuses the combinations of the signing flags that cannot work.
func (f *buildFlags) Validate() error {
	switch {
	case !f.sign && f.key.VerifyKey != "":
		return fmt.Errorf("--verify-key is the public key of the --sign --key: add --sign")
	case f.sign && f.key.Key == "":
		return fmt.Errorf("--sign needs --key (a cosign private key file)")
	}
	return nil
}

// signer starts decrypting --key in the background (sign.PrefetchKey)
// and returns the wait for it, for the pipeline to call when it needs the
// key, and the --verify-key public key, if given.
func (f *buildFlags) signer(ctx context.Context) (func(context.Context) (*sign.Signer, error), signature.Verifier, error) {
	if err := f.Validate(); err != nil {
		return nil, nil, options.UsageError(err)
	}
	if !f.sign {
		return nil, nil, nil
	}
	var vk signature.Verifier
	if f.key.VerifyKey != "" {
		var err error
		if vk, err = keys.LoadPublic(f.key.VerifyKey); err != nil {
			return nil, nil, fmt.Errorf("--verify-key: %w", err)
		}
	}
	return sign.PrefetchKey(ctx, f.key.Key, f.key.Password()).Signer, vk, nil
}

// New returns imagectl build.
func New(g *options.Globals) *cobra.Command {
	f := buildFlags{
		key: options.KeyOptions{KeyUsage: "cosign private key file",
			VerifyKeyUsage: "with --sign: the public half of --key (cosign.pub); the published-inputs check verifies with it, so --key is decrypted only when something is signed"},
		reg: options.RegistryOptions{Usage: "allow plain HTTP to a registry other than localhost"},
		out: options.NewOutputOptions("text", "json"),
	}
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
  imagectl build --ray 2.46.0 --push --repository ghcr.io/me/code-server-ray --sign --key cosign.key
  imagectl build --ray 2.46.0 --builder linux/arm64=tcp://arm64-builder:1234 --push -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBuild(cmd.Context(), g, &f) },
	}
	f.ext.AddResolve(cmd, true)
	f.ext.AddCache(cmd.Flags())
	f.ext.AddFetch(cmd.Flags(), options.PinsOptional)
	options.Add(cmd, &f.repo, &f.ext.Upstream, &f.def, &f.bk, &f.img, &f.reg, &f.key, &f.out, options.Check(f.Validate))
	fl := cmd.Flags()
	fl.BoolVar(&f.push, "push", false, "push to --repository by digest and tag it with the versioned (immutable) tag; floating tags are moved by imagectl release")
	fl.StringVar(&f.dist, "dist", "dist", "directory for the OCI archive when not pushing")
	fl.BoolVar(&f.sbom, "buildkit-sbom", false, "also ask buildkitd for its SBOM (runs docker/buildkit-syft-scanner, which must be pullable)")
	fl.BoolVar(&f.sign, "sign", false, "sign the index and every platform manifest (needs --push and --key)")
	fl.BoolVar(&f.force, "force", false, "with --push: build, push and sign even when the versioned tag already names an image of these inputs (with --sign: one whose signatures verify with --key)")
	options.AddCommandTimeout(g, cmd, "timeout", 3*time.Hour, "host")
	options.ReadsFiles(cmd)
	return cmd
}

// runBuild resolves the set, builds it through the pipeline and prints
// the result.
func runBuild(ctx context.Context, g *options.Globals, f *buildFlags) error {
	// First: the key's decryption (cosign's scrypt, about 0.15 s) runs in
	// the background while the matrix, catalog and cache are read.
	loadSigner, verifyKey, err := f.signer(ctx)
	if err != nil {
		return err
	}
	var scanner pipeline.Scanner
	if sc, err := f.img.Scanner(f.sign); err != nil {
		return err
	} else if sc != nil {
		scanner = sc
	}
	cfg, set, c, err := buildSet(g, f)
	if err != nil {
		return err
	}
	epoch, err := options.SourceDateEpoch(f.img.SourceDateEpoch)
	if err != nil {
		return err
	}
	bk, err := f.bk.BuildKit(ctx)
	if err != nil {
		return err
	}
	def, err := f.def.Definition(cfg)
	if err != nil {
		return err
	}
	repo := ""
	if len(cfg.Image.Repositories) > 0 {
		repo = cfg.Image.Repositories[0]
	}
	if repo, err = f.repo.Resolve(repo); err != nil {
		return err
	}
	res, err := pipeline.Run(ctx, bk, pipeline.Request{
		Matrix:          cfg,
		Definition:      def,
		Set:             &set,
		Revision:        options.FirstNonEmpty(f.img.Revision, options.GitRevision()),
		SourceDateEpoch: epoch,
		Force:           f.force,
		Warnings:        g.Warnings(),
		Extensions: pipeline.ExtensionOptions{
			Cache:   c,
			Sources: f.ext.Sources(g, cfg).Fetch(),
			Limits:  f.ext.Limits(),
			Options: []extensions.Option{extensions.WithRequirePins(f.ext.RequirePins)},
		},
		Solve: pipeline.SolveOptions{
			Provenance:   f.img.Provenance,
			SBOM:         f.sbom,
			CacheFrom:    f.img.CacheFrom,
			CacheTo:      f.img.CacheTo,
			Progress:     g.Stderr,
			ProgressMode: f.img.Progress,
		},
		Publish: pipeline.PublishOptions{Repo: repo, Push: f.push, DistDir: f.dist, Insecure: f.reg.Insecure},
		Sign: pipeline.SignOptions{
			LoadSigner:    loadSigner,
			VerifyKey:     verifyKey,
			VerifyKeyName: "--verify-key " + f.key.VerifyKey,
			SBOMFormat:    f.img.SBOMFormat,
			SBOMFromLock:  f.img.SBOMFromLock,
			Scanner:       scanner,
		},
	})
	if err != nil {
		return err
	}
	if f.out.JSON() {
		enc := json.NewEncoder(g.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return printBuildResult(g, res)
}

// buildSet loads matrix.yaml and the catalog, opens the extension cache and
// resolves the set to build.
func buildSet(g *options.Globals, f *buildFlags) (*matrix.Config, imagespec.Set, *cache.Cache, error) {
	cfg, err := g.LoadMatrix()
	if err != nil {
		return nil, imagespec.Set{}, nil, err
	}
	cat, err := g.LoadCatalog()
	if err != nil {
		return nil, imagespec.Set{}, nil, err
	}
	c, err := f.ext.OpenCache(g)
	if err != nil {
		return nil, imagespec.Set{}, nil, err
	}
	// The set is resolved here, once, so that with --require-pins
	// unpinned extension files are refused before anything else;
	// without it the fetcher warns about each file it trusts on
	// first use, naming the sha256 it accepted.
	set, _, err := resolve.Resolve(cfg, cat, resolve.Request{Ray: f.ext.Ray, Python: f.ext.Python, CodeServer: f.ext.CodeServer, Platforms: f.ext.Platforms})
	if err != nil {
		return nil, imagespec.Set{}, nil, fmt.Errorf("resolving: %w", err)
	}
	if f.ext.RequirePins {
		if err := extensions.CheckPins(set.Extensions, set.Platforms); err != nil {
			return nil, imagespec.Set{}, nil, err
		}
	}
	return cfg, set, c, nil
}

func printBuildResult(g *options.Globals, res *pipeline.Result) error {
	fmt.Fprintf(g.Stdout, "image   %s\n", res.Ref)
	if res.Published != "" {
		fmt.Fprintf(g.Stdout, "inputs  %s\n", res.InputsDigest)
		fmt.Fprintf(g.Stdout, "unchanged: %s\n", res.Published)
		return nil
	}
	if len(res.Tags) > 0 {
		fmt.Fprintf(g.Stdout, "tags    %s\n", strings.Join(res.Tags, ", "))
	}
	fmt.Fprintf(g.Stdout, "inputs  %s\n", res.InputsDigest)
	fmt.Fprintf(g.Stdout, "tools   %s\n", res.ToolsImage)
	tw := tabwriter.NewWriter(g.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLATFORM\tDIGEST\tBUILDER\tRUN STEPS\tEMULATED\tCACHED\tSECONDS")
	for _, p := range res.Platforms {
		d, _ := p.Duration.MarshalJSON()
		fmt.Fprintf(tw, "%s\t%s\t%s (%s)\t%d\t%d\t%d\t%s\n", p.Platform, p.Digest, p.Builder, p.BuildPlatform, p.Steps, p.EmulatedSteps, p.CachedSteps, d)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.Signed != nil {
		fmt.Fprintf(g.Stdout, "signed  %d manifests (index and every platform)\n", len(res.Signed.Targets))
	}
	if len(res.Stages) > 0 {
		var parts []string
		for _, s := range res.Stages {
			d, _ := s.Duration.MarshalJSON()
			parts = append(parts, s.Name+" "+string(d)+"s")
		}
		fmt.Fprintf(g.Stdout, "stages  %s\n", strings.Join(parts, ", "))
	}
	return nil
}
