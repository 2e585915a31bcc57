// Command imagectl builds, signs, verifies and publishes the code-server image
// with the Ray Distributed Debugger.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run runs imagectl with SIGINT and SIGTERM handled by handleSignals.
func run(args []string) int {
	return handleSignals(func(ctx context.Context) int {
		return app.Run(ctx, args, os.Stdout, os.Stderr)
	})
}

// secondSignalGrace bounds how long a second signal waits for the child
// processes to be killed before imagectl exits.
const secondSignalGrace = time.Second

// handleSignals runs fn with a context that the first SIGINT or SIGTERM
// cancels: every long loop (downloads, hashing, extraction, copying, child
// processes) honours the context, so the command stops promptly, cleans up
// what it half wrote and exits 130 (app.Run). A second signal does not wait
// for that clean-up: it kills every child process of imagectl and their
// process groups (pip under a wrapper script, runc, docker, kubectl run in
// groups of their own and do not see the terminal's Ctrl-C) and exits 130
// at once.
func handleSignals(fn func(context.Context) int) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var exiting sync.Mutex // held by the second signal until it exits
	go func() {
		s := <-sigs
		cancel(fmt.Errorf("%s signal received", s))
		<-sigs
		exiting.Lock()
		fmt.Fprintln(os.Stderr, "imagectl: second interrupt: killing child processes and exiting")
		done := make(chan struct{})
		go func() { killDescendants(); close(done) }()
		select {
		case <-done:
		case <-time.After(secondSignalGrace):
		}
		os.Exit(app.ExitInterrupted)
	}()
	code := fn(ctx)
	// A verb that ends because the second signal killed its child leaves
	// the exit to that signal.
	exiting.Lock()
	return code
}
