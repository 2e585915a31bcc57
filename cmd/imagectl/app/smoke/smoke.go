package smoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/regauth"
	smokeimage "github.com/imagectl/imagectl/smoke/image"
	"github.com/imagectl/imagectl/smoke/kind"
	"github.com/imagectl/imagectl/smoke/probe"
)

// New returns imagectl smoke and its subcommands (kind, attach, image,
// and the hidden hold).
func New(g *options.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "smoke",
		Short: "Prove the image works: in containers (image), on KubeRay (kind), and the debugger attach itself (attach)",
		Example: `  imagectl smoke image 127.0.0.1:5000/code-server-ray:4.101.2-ray2.46.0-py3.12
  imagectl smoke kind --image docker.io/example/code-server-ray:4.101.2-ray2.46.0-py3.12 --ray 2.46.0
  imagectl smoke attach --dashboard http://127.0.0.1:8265 --expect-function f`,
	}
	cmd.AddCommand(newSmokeKindCommand(g), newSmokeAttachCommand(g), newSmokeImageCommand(g), newSmokeHoldCommand())
	return cmd
}

func newSmokeKindCommand(g *options.Globals) *cobra.Command {
	var cfg kind.Config
	var probeBin string
	out := options.NewOutputOptions("text", "json")
	cmd := &cobra.Command{
		Use:   "kind --image IMAGE",
		Short: "Prove a debugger attaches to a Ray breakpoint from the code-server sidecar (kind + KubeRay)",
		Long: `kind creates a kind cluster, installs the pinned KubeRay operator (by
default its newest supported release; "oldest" is the oldest) and follows the
README's "Debug a RayJob on KubeRay" with a plain smoke RayJob: imagectl inject
--secret-file (with this binary), a server-side apply of the Secret, a pre-pull
of both images, and "kubectl ray job submit -f" with the kubectl ray plugin
and the local Ray CLI. The node pulls the image by digest from its registry
(nothing is loaded into kind; a private repository gets an imagePullSecret
from the docker config). It runs "imagectl smoke attach" inside the sidecar
once per paused task and once with --post-mortem for a task frozen on its
exception, checks the job's output and that the RayJob reaches SUCCEEDED,
collects logs on failure and deletes the cluster. With --debug it then runs
README's "imagectl debug -f rayjob.yaml --working-dir ./working_dir -- python
sample_code.py" (with -o json, --cleanup and the image under test) on the
same cluster, attaches from the sidecar once the first task is reported
paused, and requires debug to exit 0 with the job SUCCEEDED. It needs a Docker engine,
kubectl, git, the kubectl ray plugin, the Ray CLI and the network; when one is
missing it says which and exits 2. inject runs with this binary; the one
copied into the sidecar is this one (when it is a static linux build) or
--probe-binary.`,
		Example: `  CGO_ENABLED=0 go build -o bin/imagectl ./cmd/imagectl
  bin/imagectl smoke kind --image docker.io/example/code-server-ray:4.101.2-ray2.46.0-py3.12 --ray 2.46.0 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if probeBin == "" {
				if runtime.GOOS != "linux" {
					return &options.ExitError{Code: options.ExitUsage, Err: errors.New("--probe-binary is required when not running on linux: a static linux imagectl for the sidecar")}
				}
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				probeBin = exe
			}
			cfg.ProbeBinary = probeBin
			// The guide's imagectl inject runs here, with this binary.
			if exe, err := os.Executable(); err == nil {
				cfg.Imagectl = exe
			}
			level := slog.LevelInfo
			if g.Verbose {
				level = slog.LevelDebug
			}
			cfg.Logger = g.Logger(level)
			res, err := kind.Run(cmd.Context(), cfg)
			var se *kind.SkipError
			if errors.As(err, &se) {
				return &options.ExitError{Code: options.ExitUsage, Err: fmt.Errorf("smoke cannot run here: %w", err)}
			}
			if err != nil {
				return err
			}
			if !out.JSON() {
				printKindResult(g, res)
				return nil
			}
			enc := json.NewEncoder(g.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Image, "image", "", "the code-server image to test")
	f.StringVar(&cfg.RayVersion, "ray", "2.46.0", "Ray version of the rayproject/ray image")
	f.StringVar(&cfg.Python, "python", "3.12", "Python version of the rayproject/ray image (-pyXY)")
	f.StringVar(&cfg.KindNodeImage, "kind-image", "", "kindest/node image (default: kind v0.33.0's default)")
	f.StringVar(&cfg.KubeRayVersion, "kuberay-version", "newest", "KubeRay operator version: X.Y.Z, oldest ("+kind.KubeRayOldest+") or newest ("+kind.KubeRayNewest+")")
	f.StringVar(&cfg.ClusterName, "cluster-name", "imagectl-smoke", "kind cluster name")
	f.BoolVar(&cfg.Keep, "keep", false, "keep the kind cluster afterwards")
	f.BoolVar(&cfg.Debug, "debug", false, "after the manual steps, run imagectl debug (with this binary) on the same cluster, attach from the sidecar to the tasks it reports paused, and require exit 0")
	f.StringVar(&cfg.LogDir, "log-dir", "", "where logs are collected on failure (default: a temp dir)")
	f.DurationVar(&cfg.Timeout, "timeout", 45*time.Minute, "bound on the whole run")
	f.StringVar(&probeBin, "probe-binary", "", "static linux imagectl copied into the sidecar (default: this binary)")
	options.Add(cmd, &out, options.Check(func() error {
		if err := options.CheckReference("--image", cfg.Image); err != nil {
			return err
		}
		_, err := kind.KubeRayVersion(cfg.KubeRayVersion)
		return err
	}))
	options.MarkRequired(cmd, "image")
	return cmd
}

// printKindResult is smoke's -o text.
func printKindResult(g *options.Globals, res *kind.Result) {
	fmt.Fprintf(g.Stdout, "RayJob %s: %s\n", res.JobStatus, strings.Join(res.Output, "; "))
	for _, rep := range res.Attaches {
		if rep.Attach != nil {
			fmt.Fprintf(g.Stdout, "attached to %s: stopped at %s (%s:%d)\n", rep.Attach.Address, rep.Attach.Frame.Name, rep.Attach.Frame.Path, rep.Attach.Frame.Line)
		}
	}
	if rep := res.PostMortem; rep != nil && rep.Attach != nil {
		fmt.Fprintf(g.Stdout, "attached post-mortem to %s: exception in %s (%s:%d)\n", rep.Attach.Address, rep.Attach.Frame.Name, rep.Attach.Frame.Path, rep.Attach.Frame.Line)
	}
	if d := res.Debug; d != nil {
		fmt.Fprintf(g.Stdout, "imagectl debug: job %s, %d paused events (the first after %s), %d attaches and a post-mortem attach from the sidecar; events %s\n",
			d.JobStatus, d.Paused, d.FirstPaused, len(d.Attaches), strings.Join(d.Events, " "))
	}
	if res.LogDir != "" {
		fmt.Fprintf(g.Stdout, "logs in %s\n", res.LogDir)
	}
}

// Exit codes of `imagectl smoke attach`.
const (
	exitNoPausedWorker = 3
	exitAttachRefused  = 4
	exitNoFrame        = 5
	exitDashboard      = 6
	exitSource         = 7
)

func newSmokeAttachCommand(g *options.Globals) *cobra.Command {
	var (
		dashboardURL string
		timeout      time.Duration
		stepTimeout  time.Duration
		stopTimeout  time.Duration
		interval     time.Duration
		fn, file     string
		task         string
		action       string
		act          probe.Action
		postMortem   bool
		settingsPath string
		localRoot    string
		checkSource  bool
		stepOver     bool
	)
	out := options.NewOutputOptions("text", "json")
	parseAction := func() (err error) {
		act, err = probe.ParseAction(action)
		return err
	}
	cmd := &cobra.Command{
		Use:   "attach",
		Short: "Find a Ray task paused at breakpoint() and attach to it over DAP, as the VS Code extension does",
		Long: `attach polls the Ray dashboard's State API exactly as the Ray Distributed
Debugger extension does (GET /cluster_id, /api/v0/workers for live workers with
paused threads, /api/v0/tasks for the task name), dials the worker's
ip:debugger_port, runs the Debug Adapter Protocol attach sequence against
debugpy (initialize; attach with the extension's exact configuration,
pathMappings built from the cluster's localRoot in code-server's settings;
setExceptionBreakpoints ["uncaught"] as VS Code sends by default;
configurationDone), waits for the stopped event, checks that a stack frame
matches --expect-function / --expect-file, opens that frame's source as
VS Code would from here (a file that exists here, or debugpy's
sourceReference), sets a breakpoint on it and requires it verified, then
continues or disconnects so the task resumes.

With --post-mortem the task must be frozen on an uncaught exception
(RAY_DEBUG_POST_MORTEM=1 in the job's runtime env): the stop's reason must
be "exception" and debugpy must describe the exception (exceptionInfo).

Run it where the extension runs: inside the code-server sidecar of the Ray
head pod (the worker's IP and port are cluster-internal, and the sidecar
shares the head's /tmp/ray, where the task's files are).

Exit codes: 0 attached, the frame matched and its source opened; 3 no paused
worker before --pause-timeout; 4 the port refused the connection or another client
is attached; 5 attached but no stop or no matching frame; 6 the dashboard
never answered usably; 7 the frame's source does not open here, a breakpoint
there is not verified, or (--post-mortem) the stop is not on an exception;
1 anything else. --output json prints the report in every case.`,
		Example: `  imagectl smoke attach --dashboard http://127.0.0.1:8265 --expect-function f
  imagectl smoke attach --dashboard 127.0.0.1:8265 --expect-file sample_code.py --action disconnect --output json
  imagectl smoke attach --post-mortem --expect-function fail`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelWarn
			if g.Verbose {
				level = slog.LevelDebug
			}
			logger := g.Logger(level)
			root, err := attachLocalRoot(cmd, dashboardURL, settingsPath, localRoot, logger)
			if err != nil {
				return err
			}
			rep, runErr := probe.Run(cmd.Context(), dashboardURL,
				probe.WithTimeout(timeout), probe.WithPollInterval(interval),
				probe.WithStepTimeout(stepTimeout), probe.WithStopTimeout(stopTimeout),
				probe.WithExpect(probe.Expect{Function: fn, File: file}), probe.WithTaskName(task),
				probe.WithAction(act), probe.WithLocalRoot(root), probe.WithPostMortem(postMortem), probe.WithSourceCheck(checkSource), probe.WithStep(stepOver), probe.WithLogger(logger))
			if out.JSON() {
				enc := json.NewEncoder(g.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else if runErr == nil {
				printAttachText(g, rep)
			}
			if runErr != nil {
				return &options.ExitError{Code: attachExitCode(runErr), Err: runErr}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dashboardURL, "dashboard", "http://127.0.0.1:8265", "Ray dashboard address (http://host:port or host:port)")
	f.DurationVar(&timeout, "pause-timeout", 2*time.Minute, "how long to poll the dashboard for a paused worker")
	f.DurationVar(&interval, "poll-interval", 3*time.Second, "time between dashboard polls (the extension uses 3s)")
	f.DurationVar(&stepTimeout, "step-timeout", 30*time.Second, "timeout of the dial and of each DAP request")
	f.DurationVar(&stopTimeout, "stop-timeout", 30*time.Second, "how long to wait for the stopped event after attaching")
	f.StringVar(&fn, "expect-function", "", "a frame of the stopped thread must be this function")
	f.StringVar(&file, "expect-file", "", "a frame of the stopped thread must be in this file (base name or path suffix)")
	f.StringVar(&task, "task", "", "attach only to a worker running a task of this name")
	f.StringVar(&action, "action", "continue", "after the check: continue (then disconnect) or disconnect")
	f.BoolVar(&postMortem, "post-mortem", false, "the task is frozen on an uncaught exception (RAY_DEBUG_POST_MORTEM=1): require the stop on the exception")
	f.StringVar(&settingsPath, "settings", imagespec.SettingsPath, "code-server settings whose debugger clusterDashboards give the localRoot of the attach (as the extension reads it); absent file: "+strconv.Quote(imagespec.DebuggerLocalRoot))
	f.StringVar(&localRoot, "local-root", "", "the localRoot of the attach's pathMappings, instead of the one in --settings")
	f.BoolVar(&stepOver, "step", false, "after the checks, step over the paused line (DAP next) and wait for the stop, before --action")
	f.BoolVar(&checkSource, "check-source", true, "require the paused frame's source to open here and a breakpoint set on it to be verified (off for a task whose file is not under the head's /tmp/ray, e.g. an entrypoint mounted only into the Ray container)")
	options.Add(cmd, &out, options.Check(parseAction))
	options.AddCommandTimeout(g, cmd, "timeout", 15*time.Minute, "host")
	return cmd
}

// attachLocalRoot is --local-root when given, else the localRoot the
// extension would read from the settings at path for the dashboard (the
// image's own value when the file does not exist).
func attachLocalRoot(cmd *cobra.Command, dashboardURL, path, flag string, logger *slog.Logger) (string, error) {
	if cmd.Flags().Changed("local-root") {
		return flag, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		logger.Info("no code-server settings; attaching with the image's localRoot", "settings", path, "localRoot", imagespec.DebuggerLocalRoot)
		return imagespec.DebuggerLocalRoot, nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	host := strings.TrimPrefix(strings.TrimPrefix(dashboardURL, "http://"), "https://")
	host = strings.TrimSuffix(host, "/")
	root, err := probe.LocalRootFromSettings(raw, host, os.Getenv("DEFAULT_WORKSPACE"))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return root, nil
}

func attachExitCode(err error) int {
	switch {
	case errors.Is(err, probe.ErrNoPausedWorker):
		return exitNoPausedWorker
	case errors.Is(err, probe.ErrPortRefused), errors.Is(err, probe.ErrAnotherClient):
		return exitAttachRefused
	case errors.Is(err, probe.ErrNoStop), errors.Is(err, probe.ErrFrameNotFound):
		return exitNoFrame
	case errors.Is(err, probe.ErrDashboard):
		return exitDashboard
	case errors.Is(err, probe.ErrSourceNotOpened), errors.Is(err, probe.ErrNotPostMortem):
		return exitSource
	}
	return 1
}

func printAttachText(g *options.Globals, rep *probe.Report) {
	fmt.Fprintf(g.Stdout, "dashboard %s (cluster %s): %d paused worker(s)\n", rep.Dashboard, rep.ClusterID, len(rep.Breakpoints))
	for _, b := range rep.Breakpoints {
		fmt.Fprintf(g.Stdout, "  worker %s at %s task %q job %s (%d paused thread(s))\n", b.WorkerID, b.Address(), b.TaskName, b.JobID, b.NumPausedThreads)
	}
	a := rep.Attach
	fmt.Fprintf(g.Stdout, "attached to %s in %dms; stopped (reason %q) thread %d at %s (%s:%d); %s\n",
		a.Address, a.AttachMillis, a.StopReason, a.ThreadID, a.Frame.Name, a.Frame.Path, a.Frame.Line, a.Action)
	if a.Source != nil {
		fmt.Fprintf(g.Stdout, "source opened by %s; breakpoint at line %d verified\n", a.Source.Opened, a.Source.BreakpointLine)
	}
	if a.Stepped != nil {
		fmt.Fprintf(g.Stdout, "stepped to %s (%s:%d)\n", a.Stepped.Name, a.Stepped.Path, a.Stepped.Line)
	}
	if a.Exception != nil {
		fmt.Fprintf(g.Stdout, "exception %s: %s\n", a.Exception.ID, a.Exception.Description)
	}
}

// smokeImageCommandFlags are imagectl smoke image's flags: the smoke's
// own (shared with release) and the image source's.
type smokeImageCommandFlags struct {
	smoke   options.SmokeImageOptions
	archive string
	reg     options.RegistryOptions
	out     options.OutputOptions
}

func newSmokeImageCommand(g *options.Globals) *cobra.Command {
	sf := smokeImageCommandFlags{out: options.NewOutputOptions("text", "json")}
	f := &sf.smoke
	cmd := &cobra.Command{
		Use:   "image [REF] [--archive FILE]",
		Short: "Run each platform of the built image as a container and prove Python, Ray, debugpy, a debugger attach and code-server work inside it",
		Long: `image runs every platform image of REF (a registry reference, index or single
manifest; credentials from the docker config) or of --archive (the OCI archive
imagectl build writes, or an OCI layout directory) as a container: through
Docker when an engine answers, else through runc on a root filesystem unpacked
from the image (root needed; its network namespace has only loopback). arm64
runs under QEMU (binfmt_misc). Per platform it reports, one line each:

  container    the container was created from the image's config
  python       python3 found on the image's own PATH with the image's own Env
               is the shipped interpreter at the locked Python version and
               the platform's machine; ray and debugpy import from the shipped
               site-packages at the versions of the dev.imagectl.lock label;
               every ELF file there is of the platform's machine and every
               shared object loads
  debugger     a script calling breakpoint() with debugpy listening is
               attached by the DAP client of "imagectl smoke attach", stops in
               the right function and line, continues, and exits with its result
  code-server  the image's entrypoint boots code-server, which answers
               /healthz on 8443; --list-extensions --show-versions (as the
               service user) equals the locked extensions; settings.json has
               the debugger's cluster dashboards and an interpreter path
               naming the same interpreter (skip when the base has no
               code-server)

Every container, unpacked root filesystem and loaded image is removed
afterwards, also on failure and on Ctrl-C. Exit codes: 0 every line passed
(or skipped); 1 a line failed or the image could not be read; 2 bad usage or
no container runtime.`,
		Example: `  imagectl smoke image 127.0.0.1:5000/code-server-ray:4.101.2-ray2.46.0-py3.12
  imagectl smoke image --archive dist/code-server-ray-4.101.2-ray2.46.0-py3.12.oci.tar --platform linux/arm64
  imagectl smoke image docker.io/example/code-server-ray@sha256:... --runtime docker -o json`,
		Args: options.ImageArgs(1, false),
		RunE: func(cmd *cobra.Command, args []string) error { return runSmokeImage(cmd.Context(), g, &sf, args) },
	}
	fl := cmd.Flags()
	fl.StringVar(&sf.archive, "archive", "", "OCI archive (imagectl build's .oci.tar) or OCI layout directory instead of a registry reference")
	options.AddImagePlatformsFlag(cmd.Flags(), &f.Platforms, "platforms to run (repeatable or comma separated; default: every platform of the image)")
	f.Add(cmd.Flags(), "")
	options.Add(cmd, &sf.out, &sf.reg, options.Check(f.Validate))
	options.AddCommandTimeout(g, cmd, "timeout", 45*time.Minute, "registry")
	return cmd
}

// runSmokeImage runs the smoke on args[0] or --archive and prints the
// report.
func runSmokeImage(ctx context.Context, g *options.Globals, sf *smokeImageCommandFlags, args []string) error {
	if (len(args) == 1) == (sf.archive != "") {
		return &options.ExitError{Code: options.ExitUsage, Err: errors.New("pass an image reference or --archive FILE (one of them)")}
	}
	image := sf.archive
	if image == "" {
		image = args[0]
	}
	// unread is the failure of an image that cannot be read at all: -o json
	// still prints a report, in the shape of every other.
	unread := func(err error) error {
		if sf.out.JSON() {
			rep := &smokeimage.Report{Image: image, Platforms: []smokeimage.PlatformReport{}, Error: safetext.Text(err.Error())}
			if werr := options.WriteJSON(g.Stdout, rep); werr != nil {
				return werr
			}
		}
		return err
	}
	if sf.archive != "" {
		// Before the runtime is looked for: a missing file is a missing
		// file wherever imagectl runs.
		if _, err := os.Stat(sf.archive); err != nil {
			return unread(fmt.Errorf("--archive: %w", err))
		}
	}
	opts, err := sf.smoke.Options(ctx, g)
	if errors.Is(err, smokeimage.ErrNoRuntime) {
		return &options.ExitError{Code: options.ExitUsage, Err: fmt.Errorf("smoke image cannot run here: %w", err)}
	}
	if err != nil {
		return &options.ExitError{Code: options.ExitUsage, Err: err}
	}
	var rep *smokeimage.Report
	if sf.archive != "" {
		rep, err = smokeimage.Archive(ctx, sf.archive, opts...)
	} else {
		rep, err = smokeimage.Image(ctx, args[0], append(opts, smokeimage.WithNameOptions(sf.reg.NameOptions()...),
			smokeimage.WithRemoteOptions(regauth.RemoteOptions(ctx)...))...)
	}
	if rep == nil && err != nil && ctx.Err() == nil {
		return unread(err)
	}
	if rep != nil {
		if sf.out.JSON() {
			if werr := options.WriteJSON(g.Stdout, rep); werr != nil {
				return werr
			}
		} else if werr := rep.WriteText(g.Stdout); werr != nil {
			return werr
		}
	}
	if err != nil {
		return err
	}
	return rep.Err()
}

// newSmokeHoldCommand keeps a Docker container without code-server up: the
// docker runtime mounts this (static) binary as the container's entrypoint
// and runs "smoke hold" until it removes the container.
func newSmokeHoldCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "hold",
		Short:  "Sleep until SIGTERM or SIGINT (entrypoint of smoke image's Docker containers)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
}
