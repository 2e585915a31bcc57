package base

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/internal/safetext"
)

// Execute runs the command tree root with args and returns the process
// exit code: 0, the code of an ExitError, ExitInterrupted once ctx is
// cancelled (Ctrl-C, SIGTERM), else ExitFailure. The error is printed here,
// once, on stderr, with control characters escaped and URL userinfo
// redacted; hint, when not nil and not "", is one more line after it.
func Execute(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer, hint func() string) int {
	root.SetArgs(args)
	verb, err := root.ExecuteContextC(ctx)
	if ctx.Err() != nil {
		// Interrupted (Ctrl-C, SIGTERM): whatever the verb returned, the
		// run did not finish; a verb writes nothing once interrupted.
		fmt.Fprintf(stderr, "imagectl: %s\n", safetext.Text(interrupted(ctx, root, verb, err)))
		return ExitInterrupted
	}
	if err == nil {
		return 0
	}
	// The last line of defence: whatever an error carries (an upstream's
	// error body, a publisher name, a URL with a password) is printed with
	// control characters escaped and userinfo redacted.
	fmt.Fprintf(stderr, "imagectl: %s\n", safetext.Text(err.Error()))
	if hint != nil {
		if h := hint(); h != "" {
			fmt.Fprintf(stderr, "imagectl: %s\n", h)
		}
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailure
}

// interrupted says which verb an interrupt stopped, why (the cause of ctx:
// "interrupt signal received") and, when err says more than that the
// context ended, what it was doing.
func interrupted(ctx context.Context, root, verb *cobra.Command, err error) string {
	cause := context.Cause(ctx)
	msg := root.Name()
	if verb != nil {
		msg = verb.CommandPath()
	}
	msg = strings.TrimPrefix(msg, root.Name()+" ") + " interrupted (" + cause.Error() + ")"
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
