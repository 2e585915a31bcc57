package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/util/progress/progressui"

	"github.com/imagectl/imagectl/build"
)

// solveAll is the solve stage: it builds every spec concurrently, showing
// one progress display for all of them. prepared, if not nil and the
// specs push, gets each platform's result as soon as its image is in its
// buildkitd's store, before it is pushed (prepareThenPush).
func solveAll(ctx context.Context, b build.Interface, specs []build.Spec, out io.Writer, mode string, prepared func(*build.PlatformResult)) ([]*build.PlatformResult, error) {
	if out == nil {
		out, mode = io.Discard, string(progressui.QuietMode)
	}
	if mode == "" {
		mode = string(progressui.AutoMode)
	}
	d, err := progressui.NewDisplay(out, progressui.DisplayMode(mode))
	if err != nil {
		return nil, fmt.Errorf("progress display %q: %w", mode, err)
	}
	status := make(chan *client.SolveStatus)
	displayDone := make(chan struct{})
	go func() {
		defer close(displayDone)
		// A failed solve is reported by Build; the display only shows it.
		_, _ = d.UpdateFrom(context.WithoutCancel(ctx), status)
	}()
	var results []*build.PlatformResult
	if prepared != nil && len(specs) > 0 && specs[0].Push {
		results, err = prepareThenPush(ctx, b, specs, status, prepared)
	} else {
		results, err = solvePhases(ctx, b, specs, status)
	}
	close(status)
	<-displayDone
	return results, err
}

// solvePhases solves every spec concurrently. When several are pushed, only
// the first pushes in that round; the others are prepared (exported into
// their buildkitd's store, every layer compressed) and then pushed one
// after the other by a second, cached solve. Concurrent pushes of a layer
// two platforms share (a universal extension, pure-Python packages) would
// both upload it, each having found it missing; pushed in turn, the second
// finds it there. The cost is one cached solve per platform after the
// first. The result of a platform solved twice counts the RUN steps of the
// first solve (the one that built) and the time of both.
func solvePhases(ctx context.Context, b build.Interface, specs []build.Spec, status chan<- *client.SolveStatus) ([]*build.PlatformResult, error) {
	twoPhase := len(specs) > 1 && specs[0].Push
	results := make([]*build.PlatformResult, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i := range specs {
		s := specs[i]
		s.Status = status
		if twoPhase && i > 0 {
			s = prepareOnly(s)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = b.Build(ctx, s)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if !twoPhase {
		return results, nil
	}
	for i := 1; i < len(specs); i++ {
		r, err := pushPrepared(ctx, b, specs[i], status, results[i])
		if err != nil {
			return nil, err
		}
		results[i] = r
	}
	return results, nil
}

// prepareThenPush solves every spec concurrently, each prepared first (the
// first platform too): prepared gets its result as the prepare ends, and
// it is pushed as soon as the platform before it is pushed, so platforms
// still push in turn (solvePhases says why). What prepared starts (the SBOM
// scan, reading the image from the builder's store) runs while the image
// is pushed. The cost against solvePhases is one cached solve more. A
// failure stops the platforms still solving or waiting for their turn.
func prepareThenPush(ctx context.Context, b build.Interface, specs []build.Spec, status chan<- *client.SolveStatus, prepared func(*build.PlatformResult)) ([]*build.PlatformResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]*build.PlatformResult, len(specs))
	errs := make([]error, len(specs))
	// pushed[i] is closed when platform i is pushed or gave up.
	pushed := make([]chan struct{}, len(specs))
	for i := range pushed {
		pushed[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for i := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(pushed[i])
			err := func() error {
				s := prepareOnly(specs[i])
				s.Status = status
				built, err := b.Build(ctx, s)
				if err != nil {
					return err
				}
				prepared(built)
				if i > 0 {
					select {
					case <-pushed[i-1]:
					case <-ctx.Done():
					}
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				results[i], err = pushPrepared(ctx, b, specs[i], status, built)
				return err
			}()
			if err != nil {
				errs[i] = err
				cancel()
			}
		}()
	}
	wg.Wait()
	// The failure to report is the one that stopped the others.
	var first error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
		if first == nil {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	return results, nil
}

// prepareOnly is s exporting into its buildkitd's store only: no push,
// no provenance (the push's solve asks for it), no cache export.
func prepareOnly(s build.Spec) build.Spec {
	s.Push, s.Prepare, s.Provenance, s.CacheTo = false, true, false, nil
	return s
}

// pushPrepared pushes the platform of s that built was the prepare of: the
// same solve again (cached), pushing; its result counts built's RUN steps
// and the time of both solves.
func pushPrepared(ctx context.Context, b build.Interface, s build.Spec, status chan<- *client.SolveStatus, built *build.PlatformResult) (*build.PlatformResult, error) {
	s.Status = status
	r, err := b.Build(ctx, s)
	if err != nil {
		return nil, err
	}
	r.Steps, r.EmulatedSteps, r.Emulated, r.CachedSteps = built.Steps, built.EmulatedSteps, built.Emulated, built.CachedSteps
	r.Duration += built.Duration
	return r, nil
}
