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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
