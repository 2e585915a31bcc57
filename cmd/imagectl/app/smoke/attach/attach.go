package attach

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/smoke/probe"
)

// Exit codes of attach (imagectl smoke attach, imagectl-probe attach), besides
// base.ExitFailure (1) and base.ExitUsage (2).
const (
	exitNoPausedWorker = 3
	exitAttachRefused  = 4
	exitNoFrame        = 5
	exitDashboard      = 6
	exitSource         = 7
)

// New returns the attach command: imagectl smoke attach, and imagectl-probe
// attach. s are the streams and --verbose of the root it is added to;
// parent is the command line of that parent ("imagectl smoke",
// "imagectl-probe"), for the examples of its help.
func New(s *base.Streams, parent string) *cobra.Command {
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
		hold         time.Duration
	)
	out := base.NewOutputOptions("text", "json")
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
		Example: strings.ReplaceAll(`  PARENT attach --dashboard http://127.0.0.1:8265 --expect-function f
  PARENT attach --dashboard 127.0.0.1:8265 --expect-file sample_code.py --action disconnect --output json
  PARENT attach --post-mortem --expect-function fail`, "PARENT", parent),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelWarn
			if s.Verbose {
				level = slog.LevelDebug
			}
			logger := s.Logger(level)
			root, err := mappingRoot(cmd, dashboardURL, settingsPath, localRoot, logger)
			if err != nil {
				return err
			}
			rep, runErr := probe.Run(cmd.Context(), dashboardURL,
				probe.WithTimeout(timeout), probe.WithPollInterval(interval),
				probe.WithStepTimeout(stepTimeout), probe.WithStopTimeout(stopTimeout),
				probe.WithExpect(probe.Expect{Function: fn, File: file}), probe.WithTaskName(task),
				probe.WithAction(act), probe.WithLocalRoot(root), probe.WithPostMortem(postMortem), probe.WithSourceCheck(checkSource), probe.WithStep(stepOver), probe.WithHold(hold), probe.WithLogger(logger))
			if out.JSON() {
				enc := json.NewEncoder(s.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else if runErr == nil {
				printText(s, rep)
			}
			if runErr != nil {
				return &base.ExitError{Code: ExitCode(runErr), Err: runErr}
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
	f.DurationVar(&hold, "hold", 0, "after the checks, stay attached and stopped this long before --step and --action")
	f.BoolVar(&stepOver, "step", false, "after the checks, step over the paused line (DAP next) and wait for the stop, before --action")
	f.BoolVar(&checkSource, "check-source", true, "require the paused frame's source to open here and a breakpoint set on it to be verified (off for a task whose file is not under the head's /tmp/ray, e.g. an entrypoint mounted only into the Ray container)")
	base.Add(cmd, &out, base.Check(parseAction))
	base.AddCommandTimeout(s, cmd, "timeout", 15*time.Minute, "host")
	return cmd
}

// mappingRoot is --local-root when given, else the localRoot the
// extension would read from the settings at path for the dashboard (the
// image's own value when the file does not exist).
func mappingRoot(cmd *cobra.Command, dashboardURL, path, flag string, logger *slog.Logger) (string, error) {
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

// ExitCode is the exit code of a failed probe.Run: one of the exit codes
// above, else base.ExitFailure.
func ExitCode(err error) int {
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
	return base.ExitFailure
}

// printText is attach's -o text: the paused workers, the attach and its
// checks.
func printText(s *base.Streams, rep *probe.Report) {
	fmt.Fprintf(s.Stdout, "dashboard %s (cluster %s): %d paused worker(s)\n", rep.Dashboard, rep.ClusterID, len(rep.Breakpoints))
	for _, b := range rep.Breakpoints {
		fmt.Fprintf(s.Stdout, "  worker %s at %s task %q job %s (%d paused thread(s))\n", b.WorkerID, b.Address(), b.TaskName, b.JobID, b.NumPausedThreads)
	}
	a := rep.Attach
	fmt.Fprintf(s.Stdout, "attached to %s in %dms; stopped (reason %q) thread %d at %s (%s:%d); %s\n",
		a.Address, a.AttachMillis, a.StopReason, a.ThreadID, a.Frame.Name, a.Frame.Path, a.Frame.Line, a.Action)
	if a.Source != nil {
		fmt.Fprintf(s.Stdout, "source opened by %s; breakpoint at line %d verified\n", a.Source.Opened, a.Source.BreakpointLine)
	}
	if a.Stepped != nil {
		fmt.Fprintf(s.Stdout, "stepped to %s (%s:%d)\n", a.Stepped.Name, a.Stepped.Path, a.Stepped.Line)
	}
	if a.Exception != nil {
		fmt.Fprintf(s.Stdout, "exception %s: %s\n", a.Exception.ID, a.Exception.Description)
	}
}
