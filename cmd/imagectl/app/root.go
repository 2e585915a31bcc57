package app

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app/build"
	debugcmd "github.com/imagectl/imagectl/cmd/imagectl/app/debug"
	"github.com/imagectl/imagectl/cmd/imagectl/app/extensions"
	"github.com/imagectl/imagectl/cmd/imagectl/app/inject"
	"github.com/imagectl/imagectl/cmd/imagectl/app/matrix"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
	"github.com/imagectl/imagectl/cmd/imagectl/app/release"
	"github.com/imagectl/imagectl/cmd/imagectl/app/sign"
	"github.com/imagectl/imagectl/cmd/imagectl/app/smoke"
	"github.com/imagectl/imagectl/cmd/imagectl/app/verify"
	"github.com/imagectl/imagectl/cmd/imagectl/app/version"
)

// ExitInterrupted is the exit code of a run ended by SIGINT or SIGTERM
// (128 + SIGINT, as a shell reports it).
const ExitInterrupted = options.ExitInterrupted

// Run executes imagectl with args and returns the process exit code
// (base.Execute: the error printed once, then the catalog hint).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd, g := newRootCommand(stdout, stderr)
	return base.Execute(ctx, cmd, args, stderr, g.CatalogHint)
}

// NewRootCommand returns the imagectl command tree.
func NewRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root, _ := newRootCommand(stdout, stderr)
	return root
}

// newRootCommand is NewRootCommand and the globals its verbs share.
func newRootCommand(stdout, stderr io.Writer) (*cobra.Command, *options.Globals) {
	g := options.NewGlobals(stdout, stderr)
	root := &cobra.Command{
		Use:   "imagectl",
		Short: "Build, sign, verify and publish code-server with the Ray Distributed Debugger",
		Long: `imagectl resolves a compatible set of code-server, Python, Ray, debugpy and
VS Code extensions (matrix.yaml + catalog.json), fetches the exact extension
files per platform, builds a multi-arch image through BuildKit, signs every
manifest with cosign, verifies published images, smoke-tests a debugger attach
on KubeRay, and plans scheduled rebuilds.`,
		Example: `  imagectl matrix resolve --ray 2.46.0 --explain
  imagectl build --ray 2.46.0 --platform linux/amd64,linux/arm64
  imagectl verify docker.io/example/code-server-ray:4.101.2-ray2.46.0-py3.12 --key cosign.pub`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       options.CurrentVersion().Line(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	// The hook of every verb: the environment fallbacks and required flags
	// (see options.PrepareFlags).
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		warnRenamedEnv(stderr)
		return options.PrepareFlags(cmd)
	}
	g.AddFlags(root.PersistentFlags())

	// One line per verb: a verb is a package under app with
	// New(*options.Globals) *cobra.Command (see doc.go).
	root.AddCommand(
		version.New(g),
		matrix.New(g),
		extensions.New(g),
		build.New(g),
		sign.New(g),
		verify.New(g),
		smoke.New(g),
		release.NewPlan(g),
		release.New(g),
		inject.New(g),
		debugcmd.New(g),
	)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	base.EnforceUsage(root)
	options.HideFileFlags(root)
	root.Long += "\n\n" + environmentHelp(root)
	return root, g
}
