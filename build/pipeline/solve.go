package pipeline

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/util/progress/progressui"

	"github.com/imagectl/imagectl/build"
)

// solveAll is the solve stage: it builds every spec concurrently, showing
// one progress display for all of them.
func solveAll(ctx context.Context, b build.Interface, specs []build.Spec, out io.Writer, mode string) ([]*build.PlatformResult, error) {
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
	results, err := solvePhases(ctx, b, specs, status)
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
			s.Push, s.Prepare, s.Provenance, s.CacheTo = false, true, false, nil
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
		s := specs[i]
		s.Status = status
		r, err := b.Build(ctx, s)
		if err != nil {
			return nil, err
		}
		built := results[i]
		r.Steps, r.EmulatedSteps, r.Emulated, r.CachedSteps = built.Steps, built.EmulatedSteps, built.Emulated, built.CachedSteps
		r.Duration += built.Duration
		results[i] = r
	}
	return results, nil
}
