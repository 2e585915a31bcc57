package probe

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/imagectl/imagectl/debug/dap"
)

// closedMeansOtherClient wraps a failed step, saying plainly when debugpy
// hung up on us.
func closedMeansOtherClient(addr, what string, c *dap.Client, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(c.Err(), io.EOF) {
		return fmt.Errorf("%s at %s: debugpy closed the connection (the worker exited or resumed, or another client is attached): %w", what, addr, err)
	}
	return fmt.Errorf("%s at %s: %w", what, addr, err)
}

// attachRefused maps debugpy's answer to a second client. Checked against
// debugpy 1.6.3 (Debian python3-debugpy): the adapter accepts the connection
// and answers initialize, then fails attach with
// "Server[pid=N] is already being debugged." while the first client stays
// attached (adapter/clients.py: conn.attach_to_session raises ValueError).
func attachRefused(addr string, c *dap.Client, err error) error {
	var re *dap.ResponseError
	if errors.As(err, &re) && strings.Contains(re.Message+" "+re.Detail, "already being debugged") {
		return fmt.Errorf("%w at %s: debugpy refused the attach: %w", ErrAnotherClient, addr, err)
	}
	if errors.As(err, &re) {
		return fmt.Errorf("attach at %s refused: %w", addr, err)
	}
	return closedMeansOtherClient(addr, "attach", c, err)
}

// Kind names the class of a probe error for the JSON report and exit codes.
func Kind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNoPausedWorker):
		return "no_paused_worker"
	case errors.Is(err, ErrPortRefused):
		return "port_refused"
	case errors.Is(err, ErrAnotherClient):
		return "another_client"
	case errors.Is(err, ErrNoStop):
		return "no_stop"
	case errors.Is(err, ErrFrameNotFound):
		return "frame_not_found"
	case errors.Is(err, ErrDashboard):
		return "dashboard"
	case errors.Is(err, ErrSourceNotOpened):
		return "source_not_opened"
	case errors.Is(err, ErrNotPostMortem):
		return "not_post_mortem"
	}
	return "error"
}
