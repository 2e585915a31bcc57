package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/internal/safetext"
)

// Version is set at link time: -ldflags "-X github.com/imagectl/imagectl/cmd/imagectl/app.Version=v0.1.0".
var Version = "dev"

// globals are the flags every command shares.
type globals struct {
	matrixPath  string // "": the built-in matrix.yaml (see resolveFiles)
	catalogPath string // "": the built-in catalog.json
	filesOnce   sync.Once
	noticeOnce  sync.Once
	verbose     bool
	stdout      io.Writer
	stderr      io.Writer
}

// Run executes imagectl with args and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := NewRootCommand(stdout, stderr)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if ctx.Err() != nil {
		// Interrupted (Ctrl-C, SIGTERM): whatever the verb returned, the
		// run did not finish; a verb writes nothing once interrupted.
		if err == nil {
			err = context.Cause(ctx)
		}
		fmt.Fprintf(stderr, "imagectl: %s\n", safetext.Text(err.Error()))
		return ExitInterrupted
	}
	if err == nil {
		return 0
	}
	// The last line of defence: whatever an error carries (an upstream's
	// error body, a publisher name, a URL with a password) is printed with
	// control characters escaped and userinfo redacted.
	fmt.Fprintf(stderr, "imagectl: %s\n", safetext.Text(err.Error()))
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailure
}

// NewRootCommand returns the imagectl command tree.
func NewRootCommand(stdout, stderr io.Writer) *cobra.Command {
	g := &globals{stdout: stdout, stderr: stderr}
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
		Version:       currentVersion().line(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	// The hook of every verb: the environment fallbacks and required flags
	// (see prepareFlags).
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return prepareFlags(cmd) }
	pf := root.PersistentFlags()
	pf.StringVar(&g.matrixPath, "matrix", "", "path to matrix.yaml (default: ./matrix.yaml, else the one built into imagectl)")
	pf.StringVar(&g.catalogPath, "catalog", "", "path to the catalog snapshot (default: catalog.json beside the matrix file; the one built into imagectl only with the built-in matrix)")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log progress and retries to stderr")
	for name, env := range map[string]string{"matrix": "IMAGECTL_MATRIX", "catalog": "IMAGECTL_CATALOG"} {
		pf.Lookup(name).Usage += " (env " + env + ")"
		_ = pf.SetAnnotation(name, annotationEnv, []string{env})
	}

	root.AddCommand(
		newVersionCommand(g),
		newMatrixCommand(g),
		newExtensionsCommand(g),
		newBuildCommand(g),
		newSignCommand(g),
		newVerifyCommand(g),
		newSmokeCommand(g),
		newPlanCommand(g),
		newReleaseCommand(g),
		newInjectCommand(g),
		newDebugCommand(g),
	)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	enforceUsage(root)
	root.Long += "\n\n" + environmentHelp(root)
	return root
}

// logger logs to stderr at level through safetext.Handler: URLs redacted,
// upstream text escaped.
func (g *globals) logger(level slog.Level) *slog.Logger {
	return slog.New(safetext.Handler(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level})))
}
