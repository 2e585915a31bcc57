package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
	"github.com/imagectl/imagectl/debug/dashproxy"
)

// newDashboardProxyCommand is imagectl-probe dashboard-proxy: the loopback
// proxy that adds Ray's token to the dashboard requests of the debugger
// extension (dashproxy.NewTokenProxy), for a sidecar inject did not set up
// with one (inject runs the same proxy, in Python, in the sidecars it
// writes for clusters with token authentication).
func newDashboardProxyCommand(s *base.Streams) *cobra.Command {
	var listen, upstream, tokenFile string
	cmd := &cobra.Command{
		Use:   "dashboard-proxy",
		Short: "Serve the Ray dashboard on a loopback port with Ray's token added (token authentication)",
		Long: `dashboard-proxy listens on --listen and forwards GET and HEAD requests to the
Ray dashboard at --upstream with "Authorization: Bearer <token>", the token read
from --token-file (a Secret's key mounted as a file, surrounding whitespace
trimmed) when it starts and again for each request. Point the Ray Distributed
Debugger extension (its clusterDashboards setting) or imagectl-probe attach at
it when the Ray cluster runs with token authentication (RAY_AUTH_MODE=token,
KubeRay's authOptions.mode: token). Other methods get 405: through the proxy the
dashboard is read, no job is submitted, stopped or deleted. The token is never
printed or logged.

Exit codes: 1 the token file cannot be read or is empty, or --listen cannot be
bound; 2 bad usage; 130 interrupted (the normal way to stop it).`,
		Example: `  imagectl-probe dashboard-proxy --token-file /etc/imagectl/ray-auth/token
  imagectl-probe dashboard-proxy --listen 127.0.0.1:8266 --upstream http://127.0.0.1:8265 --token-file /tmp/token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if _, err := dashproxy.ReadToken(tokenFile); err != nil {
				return err
			}
			level := slog.LevelInfo
			if s.Verbose {
				level = slog.LevelDebug
			}
			h, err := dashproxy.NewTokenProxy(upstream, tokenFile, s.Logger(level))
			if err != nil {
				return base.UsageError(err)
			}
			ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
			fmt.Fprintf(s.Stderr, "imagectl: dashboard proxy listening on %s, forwarding GET and HEAD to %s with the token of %s\n", ln.Addr(), upstream, tokenFile)
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			select {
			case err := <-done:
				return err
			case <-ctx.Done():
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(sctx)
				if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
					return err
				}
				return ctx.Err()
			}
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", "127.0.0.1:8266", "host:port to serve on (keep it on loopback: whoever reaches it reads the dashboard as the token's holder)")
	fl.StringVar(&upstream, "upstream", "http://127.0.0.1:8265", "the Ray dashboard, http://host:port")
	fl.StringVar(&tokenFile, "token-file", "", "the file holding Ray's token (required)")
	base.MarkRequired(cmd, "token-file")
	return cmd
}
