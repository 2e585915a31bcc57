package base

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/internal/waitnotice"
)

// WaitNoticeAfter is how long a network request waits for its answer before
// stderr says what it waits for.
const WaitNoticeAfter = 3 * time.Second

// AddCommandTimeout gives cmd a flag (--timeout, or flag) that bounds its
// whole run (default def), says on s's stderr what a network request waits
// for once it waits longer than WaitNoticeAfter, and turns the end of that
// time into one line naming the hosts that did not answer. what names such
// a host ("registry" or "host").
func AddCommandTimeout(s *Streams, cmd *cobra.Command, flag string, def time.Duration, what string) {
	var limit time.Duration
	cmd.Flags().DurationVar(&limit, flag, def, "the longest the whole command may take, network waits included")
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if limit <= 0 {
			return &ExitError{Code: ExitUsage, Err: fmt.Errorf("--%s %s: want a positive duration", flag, limit)}
		}
		n := &waitnotice.Notice{After: WaitNoticeAfter, Printf: func(format string, args ...any) {
			fmt.Fprintf(s.Stderr, "imagectl: %s\n", safetext.Text(fmt.Sprintf(format, args...)))
		}}
		ctx, cancel := context.WithTimeoutCause(waitnotice.With(cmd.Context(), n), limit, errCommandTimeout)
		defer cancel()
		cmd.SetContext(ctx)
		err := run(cmd, args)
		if err == nil || !errors.Is(context.Cause(ctx), errCommandTimeout) {
			return err
		}
		hosts := n.Cut()
		if len(hosts) == 0 {
			return fmt.Errorf("%s did not finish within --%s %s: %w", cmd.CommandPath(), flag, limit, err)
		}
		return fmt.Errorf("%s %s did not answer within --%s %s (%s gave up)", what, strings.Join(hosts, ", "), flag, limit, cmd.CommandPath())
	}
}

var errCommandTimeout = errors.New("the command's time limit was reached")
