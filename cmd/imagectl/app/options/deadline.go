package options

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
)

// WaitNoticeAfter is how long a network request waits for its answer before
// stderr says what it waits for.
const WaitNoticeAfter = base.WaitNoticeAfter

// AddCommandTimeout gives cmd a flag (--timeout, or flag) that bounds its
// whole run (default def), says on stderr what a network request waits for
// once it waits longer than WaitNoticeAfter, and turns the end of that time
// into one line naming the hosts that did not answer. what names such a
// host ("registry" or "host").
func AddCommandTimeout(g *Globals, cmd *cobra.Command, flag string, def time.Duration, what string) {
	base.AddCommandTimeout(&g.Streams, cmd, flag, def, what)
}
