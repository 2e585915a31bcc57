package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app/build"
	debugcmd "github.com/imagectl/imagectl/cmd/imagectl/app/debug"
	"github.com/imagectl/imagectl/cmd/imagectl/app/extensions"
	"github.com/imagectl/imagectl/cmd/imagectl/app/inject"
	"github.com/imagectl/imagectl/cmd/imagectl/app/matrix"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/cmd/imagectl/app/release"
	"github.com/imagectl/imagectl/cmd/imagectl/app/sign"
	"github.com/imagectl/imagectl/cmd/imagectl/app/smoke"
	"github.com/imagectl/imagectl/cmd/imagectl/app/verify"
	"github.com/imagectl/imagectl/cmd/imagectl/app/version"
	"github.com/imagectl/imagectl/internal/safetext"
)

// ExitInterrupted is the exit code of a run ended by SIGINT or SIGTERM
// (128 + SIGINT, as a shell reports it).
const ExitInterrupted = options.ExitInterrupted

// Run executes imagectl with args and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd, g := newRootCommand(stdout, stderr)
	cmd.SetArgs(args)
	verb, err := cmd.ExecuteContextC(ctx)
	if ctx.Err() != nil {
		// Interrupted (Ctrl-C, SIGTERM): whatever the verb returned, the
		// run did not finish; a verb writes nothing once interrupted.
		fmt.Fprintf(stderr, "imagectl: %s\n", safetext.Text(interrupted(ctx, verb, err)))
		return options.ExitInterrupted
	}
	if err == nil {
		return 0
	}
	// The last line of defence: whatever an error carries (an upstream's
	// error body, a publisher name, a URL with a password) is printed with
	// control characters escaped and userinfo redacted.
	fmt.Fprintf(stderr, "imagectl: %s\n", safetext.Text(err.Error()))
	if h := g.CatalogHint(); h != "" {
		fmt.Fprintf(stderr, "imagectl: %s\n", h)
	}
	var ee *options.ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return options.ExitFailure
}

// interrupted says which verb an interrupt stopped, why (the cause of ctx:
// "interrupt signal received") and, when err says more than that the
// context ended, what it was doing.
func interrupted(ctx context.Context, verb *cobra.Command, err error) string {
	cause := context.Cause(ctx)
	msg := "imagectl"
	if verb != nil {
		msg = verb.CommandPath()
	}
	msg = strings.TrimPrefix(msg, "imagectl ") + " interrupted (" + cause.Error() + ")"
	if err == nil {
		return msg
	}
	what := err.Error()
	for _, end := range []string{ctx.Err().Error(), cause.Error()} {
		what = strings.TrimSuffix(strings.TrimSuffix(what, end), ": ")
	}
	if what == "" {
		return msg
	}
	return msg + " while " + what
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
	enforceUsage(root)
	options.HideFileFlags(root)
	root.Long += "\n\n" + environmentHelp(root)
	return root, g
}
