// Command imagectl builds, signs, verifies and publishes the code-server image
// with the Ray Distributed Debugger.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run runs imagectl with SIGINT and SIGTERM cancelling its context: every
// long loop (downloads, hashing, extraction, copying) honours the context,
// so the command stops promptly and cleans up what it half wrote. The first
// signal only cancels; once it has, the default behaviour is restored, so a
// second Ctrl-C kills at once.
func run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	return app.Run(ctx, args, os.Stdout, os.Stderr)
}
