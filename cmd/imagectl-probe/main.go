// Command imagectl-probe is the debugger attach probe on its own: its one
// verb, attach, is "imagectl smoke attach" (the same implementation, package
// cmd/imagectl/app/smoke/attach: the same flags, help, exit codes 0 to 7
// and -o json report), in a binary of a few megabytes instead of
// imagectl's 62 MB (unstripped). It is what is copied into the code-server
// sidecar of a Ray head Pod, where the attach has to run (docs/smoke.md):
//
//	kubectl cp bin/imagectl-probe "$HEAD:/tmp/imagectl-probe" -c code-server
//	kubectl exec "$HEAD" -c code-server -- /tmp/imagectl-probe attach --expect-function f --output json
//
// It links options/base, never cmd/imagectl/app/options (BuildKit, cosign,
// client-go); arch_test.go's TestProbeLinks and TestBinarySizes hold it
// there and under 15 MB. make build builds it beside bin/imagectl.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
	"github.com/imagectl/imagectl/cmd/imagectl/app/smoke/attach"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}

// run runs imagectl-probe with args and returns the process exit code:
// the first SIGINT or SIGTERM cancels ctx, the attach disconnects and the
// probe exits 130 (base.Execute). The probe starts no child processes, so
// a second signal (the default action once ctx is cancelled) ends it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return base.Execute(ctx, newRootCommand(stdout, stderr), args, stderr, nil)
}

// newRootCommand is imagectl-probe: -v/--verbose, --version and attach;
// and, hidden, "smoke attach", the same command under imagectl's path, so
// that the probe stands in for imagectl where a script or harness runs
// "/tmp/imagectl smoke attach" (smoke kind's --probe-binary).
func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	s := &base.Streams{Stdout: stdout, Stderr: stderr}
	root := &cobra.Command{
		Use:   "imagectl-probe",
		Short: "Attach to a Ray task paused at breakpoint(), as the Ray Distributed Debugger does (imagectl smoke attach)",
		Long: `imagectl-probe is "imagectl smoke attach" on its own, a small static binary
to copy into the code-server sidecar of a Ray head Pod: imagectl-probe attach
takes the same flags, prints the same report and exits with the same codes.`,
		Example:       `  imagectl-probe attach --dashboard http://127.0.0.1:8265 --expect-function f --output json`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       base.CurrentVersion().LineOf("imagectl-probe"),
		// Only the environment fallbacks and required flags apply: the
		// probe reads no matrix.yaml or catalog.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return base.PrepareFlags(cmd) },
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	s.AddFlags(root.PersistentFlags())
	smoke := &cobra.Command{
		Use:    "smoke",
		Short:  "imagectl's path to attach: imagectl-probe smoke attach is imagectl-probe attach",
		Hidden: true,
	}
	smoke.AddCommand(attach.New(s, "imagectl-probe smoke"))
	root.AddCommand(attach.New(s, "imagectl-probe"), smoke)
	root.InitDefaultHelpCmd()
	base.EnforceUsage(root)
	return root
}
