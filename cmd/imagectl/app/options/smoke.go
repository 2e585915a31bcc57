package options

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"

	smokeimage "github.com/imagectl/imagectl/smoke/image"
)

// SmokeImageOptions are the flags of `imagectl smoke image`, shared with
// release (which runs the same smoke on the built digest).
type SmokeImageOptions struct {
	Prefix      string // of the flag names: "smoke-" on release
	Runtime     string
	Platforms   []string
	WorkDir     string
	RuncRoot    string
	BootTimeout time.Duration
	StepTimeout time.Duration
}

// Add registers the flags, each name starting with prefix ("smoke-" on
// release).
func (f *SmokeImageOptions) Add(fl *pflag.FlagSet, prefix string) {
	f.Prefix = prefix
	fl.StringVar(&f.Runtime, prefix+"runtime", "auto", "container runtime: auto (Docker when an engine answers, else runc), runc or docker")
	fl.StringVar(&f.WorkDir, prefix+"work-dir", "", "where root filesystems are unpacked (default: $TMPDIR); removed afterwards")
	fl.StringVar(&f.RuncRoot, prefix+"runc-root", "", "runc's state directory (runc --root) for the runc runtime's containers (default: runc's own, /run/runc for root)")
	fl.DurationVar(&f.BootTimeout, prefix+"boot-timeout", 5*time.Minute, "bound on code-server's boot and on the debug script's start (arm64 runs emulated)")
	fl.DurationVar(&f.StepTimeout, prefix+"step-timeout", 5*time.Minute, "bound on each process and each debugger request in the container")
}

// Validate refuses an unknown runtime.
func (f *SmokeImageOptions) Validate() error {
	switch f.Runtime {
	case "auto", "runc", "docker":
		return nil
	}
	return fmt.Errorf("--%sruntime %q: want auto, runc or docker", f.Prefix, f.Runtime)
}

// Options maps the flags onto smoke/image options.
func (f *SmokeImageOptions) Options(ctx context.Context, g *Globals) ([]smokeimage.Option, error) {
	work := f.WorkDir
	if work == "" {
		work = os.TempDir()
	}
	opts := []smokeimage.Option{smokeimage.WithWorkDir(work), smokeimage.WithPlatforms(f.Platforms...),
		smokeimage.WithBootTimeout(f.BootTimeout), smokeimage.WithStepTimeout(f.StepTimeout)}
	level := slog.LevelWarn
	if g.Verbose {
		level = slog.LevelInfo
	}
	opts = append(opts, smokeimage.WithLogger(g.Logger(level)))
	runcOpts := []smokeimage.RuncOption{smokeimage.WithRuncWorkDir(work)}
	if f.RuncRoot != "" {
		runcOpts = append(runcOpts, smokeimage.WithRuncRoot(f.RuncRoot))
	}
	switch f.Runtime {
	case "auto":
		rt, err := smokeimage.DetectRuntime(ctx, runcOpts...)
		if err != nil {
			return nil, err
		}
		opts = append(opts, smokeimage.WithRuntime(rt))
	case "runc":
		r := smokeimage.NewRunc(runcOpts...)
		if err := r.Available(ctx); err != nil {
			return nil, fmt.Errorf("%w: %v", smokeimage.ErrNoRuntime, err)
		}
		opts = append(opts, smokeimage.WithRuntime(r))
	case "docker":
		d := smokeimage.NewDocker()
		if err := d.Available(ctx); err != nil {
			return nil, fmt.Errorf("%w: %v", smokeimage.ErrNoRuntime, err)
		}
		opts = append(opts, smokeimage.WithRuntime(d))
	default:
		return nil, UsageError(f.Validate())
	}
	return opts, nil
}
