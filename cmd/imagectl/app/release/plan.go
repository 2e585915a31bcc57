package release

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/build/pipeline"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/registry"
	"github.com/imagectl/imagectl/release"
	"github.com/imagectl/imagectl/resolve"
)

// publishFlags are shared by plan and release: where the images live and how
// their inputs digest is computed (the same overrides of matrix.yaml's build:
// section that imagectl build takes).
type publishFlags struct {
	repo      options.RepositoryOptions
	reg       options.RegistryOptions
	platforms []string
	def       options.DefinitionOptions
}

var _ options.Options = (*publishFlags)(nil)

func (f *publishFlags) AddFlags(fl *pflag.FlagSet) {
	f.repo.AddFlags(fl)
	f.reg.AddFlags(fl)
	options.AddPlatformsFlag(fl, &f.platforms, "OCI platforms, comma separated (default: matrix.yaml platforms)")
	f.def.AddFlags(fl)
}

func (f *publishFlags) Validate() error {
	if err := f.repo.Validate(); err != nil {
		return err
	}
	if err := f.reg.Validate(); err != nil {
		return err
	}
	return f.def.Validate()
}

// publishSetup is everything plan and release share.
type publishSetup struct {
	cfg  *matrix.Config
	repo name.Repository
	reg  *registry.Registry
	def  *build.Definition
	// renders holds the one render of each target's set (its inputs
	// digest and definition), made by release.Targets; plan, the builds
	// and release's inputs check use it.
	renders *pipeline.Renders
	targets []release.Target
	ropts   []remote.Option
}

// setup reads what plan and release share: the matrix and catalog, the
// repository, the registry client, the definition and the targets.
func setup(ctx context.Context, g *options.Globals, f *publishFlags) (*publishSetup, error) {
	cfg, cat, err := g.LoadMatrixAndCatalog()
	if err != nil {
		return nil, err
	}
	repoName := ""
	if len(cfg.Image.Repositories) > 0 {
		repoName = cfg.Image.Repositories[0]
	}
	if repoName, err = f.repo.Resolve(repoName); err != nil {
		return nil, err
	}
	if repoName == "" {
		return nil, fmt.Errorf("%s: image.repositories is empty and no --repository given", g.MatrixName())
	}
	repo, err := name.NewRepository(repoName, f.reg.NameOptions()...)
	if err != nil {
		return nil, fmt.Errorf("image repository %q: %w", repoName, err)
	}
	ropts := f.reg.RemoteOptions()
	reg, err := registry.New(ropts...)
	if err != nil {
		return nil, err
	}
	sets, skipped, err := resolve.All(cfg, cat, f.platforms)
	if err != nil {
		return nil, err
	}
	for _, s := range skipped {
		fmt.Fprintf(g.Stderr, options.WarnPrefix+"skipped Ray %s: %s\n", s.Ray, s.Reason)
	}
	// The one definition build uses too: same parameters, same inputs digest.
	def, err := f.def.Definition(cfg)
	if err != nil {
		return nil, err
	}
	// Plan and release hold each set as it is built (the tools image
	// override applied), so the entries and the lock they compare with the
	// published label name the tools image actually used.
	for i := range sets {
		sets[i] = def.Set(sets[i])
	}
	renders := pipeline.NewRenders(def)
	targets, err := release.Targets(cfg, sets, renders)
	if err != nil {
		return nil, err
	}
	if targets, err = release.OwnFloating(targets); err != nil {
		return nil, err
	}
	return &publishSetup{cfg: cfg, repo: repo, reg: reg, def: def, renders: renders, targets: targets, ropts: ropts}, nil
}

// NewPlan returns imagectl plan.
func NewPlan(g *options.Globals) *cobra.Command {
	pf := publishFlags{}
	out := options.NewOutputOptions(release.OutputText, release.OutputJSON, release.OutputGitHub)
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Say which images need rebuilding and why (reads manifests and labels only)",
		Long: `plan computes, for every buildable combination of the matrix (imagectl matrix
list), the digest of its build inputs (the resolved set, the image definition
rendered with matrix.yaml's build: section and upstreams.packageIndex, and the
imagectl version, exactly as imagectl build computes it) and renders its tags:
the versioned tag carries the digest's first 12 hex digits. An entry is up to
date when its versioned tag exists, names an image whose
dev.imagectl.inputs.digest label is that digest, and every floating tag it
owns names the same image. It reads manifests and config blobs only, never
layers.

Each entry that needs work says why: not published yet, new Ray release, new
code-server release, base rebuilt upstream, tools image rebuilt (the tools
image tag names a new digest in catalog.json), extension bump, component bump,
definition change, or a floating tag behind its build (promote only).

--output github prints a GitHub Actions matrix ({"include":[...]}) on one line
for fromJSON. Nothing changed: an empty plan.`,
		Example: `  imagectl plan
  imagectl plan --output json
  imagectl plan --repository localhost:5000 --insecure
  echo "matrix=$(imagectl plan --output github)" >> "$GITHUB_OUTPUT"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			ps, err := setup(ctx, g, &pf)
			if err != nil {
				return err
			}
			p, err := release.NewPlanner(ps.reg, ps.repo).Plan(ctx, ps.targets)
			if err != nil {
				return err
			}
			return p.Write(g.Stdout, out.Format)
		},
	}
	options.Add(cmd, &pf, &out)
	options.AddCommandTimeout(g, cmd, "timeout", 10*time.Minute, "registry")
	options.ReadsFiles(cmd)
	return cmd
}
