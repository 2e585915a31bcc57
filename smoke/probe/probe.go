package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/imagectl/imagectl/debug/dashboard"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/waitnotice"
)

// ErrDashboard is a dashboard that never answered usably while polling.
var ErrDashboard = errors.New("dashboard not usable")

// Breakpoint is a paused worker as the dashboard lists it.
type Breakpoint struct {
	WorkerID         string `json:"workerId"`
	IP               string `json:"ip"`
	DebuggerPort     int    `json:"debuggerPort"`
	NumPausedThreads int    `json:"numPausedThreads"`
	TaskName         string `json:"taskName,omitempty"`
	JobID            string `json:"jobId,omitempty"`
	// Driver: the paused worker is a job's driver (worker_type DRIVER), at
	// a breakpoint() in the entrypoint script. Ray lists it, as the
	// extension shows it (list_workers ignores exclude_driver); the probe
	// reports it but attaches only to tasks.
	Driver bool `json:"driver,omitempty"`
}

// Address is ip:debugger_port.
func (b Breakpoint) Address() string {
	return net.JoinHostPort(b.IP, strconv.Itoa(b.DebuggerPort))
}

// Report is the outcome of Run, printed as JSON by `imagectl smoke attach`.
type Report struct {
	OK          bool          `json:"ok"`
	Dashboard   string        `json:"dashboard"`
	ClusterID   string        `json:"clusterId,omitempty"`
	Polls       int           `json:"polls"`
	Breakpoints []Breakpoint  `json:"breakpoints"`
	Target      *Breakpoint   `json:"target,omitempty"`
	Expect      Expect        `json:"expect"`
	Attach      *AttachResult `json:"attach,omitempty"`
	Error       string        `json:"error,omitempty"`
	ErrorKind   string        `json:"errorKind,omitempty"`
}

type config struct {
	attachConfig
	timeout    time.Duration
	interval   time.Duration
	taskName   string
	httpClient *http.Client
	logger     *slog.Logger
}

// Option configures Run and Attach.
type Option func(*config)

// WithTimeout bounds the search for a paused worker (default 120s).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithPollInterval sets the time between dashboard polls (default 3s, as
// the extension).
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.interval = d } }

// WithStepTimeout bounds each DAP request and the dial (default 30s).
func WithStepTimeout(d time.Duration) Option { return func(c *config) { c.stepTimeout = d } }

// WithStopTimeout bounds the wait for the stopped event after attach
// (default 30s).
func WithStopTimeout(d time.Duration) Option { return func(c *config) { c.stopTimeout = d } }

// WithExpect sets the frame that must appear in the stopped thread's stack.
func WithExpect(e Expect) Option { return func(c *config) { c.expect = e } }

// WithAction sets what to do after the frame check (default continue).
func WithAction(a Action) Option { return func(c *config) { c.action = a } }

// WithTaskName attaches only to a paused worker running a task of that name.
func WithTaskName(name string) Option { return func(c *config) { c.taskName = name } }

// WithHTTPClient sets the dashboard HTTP client.
func WithHTTPClient(h *http.Client) Option { return func(c *config) { c.httpClient = h } }

// WithDialer makes the attach dial debugpy with dial instead of a plain
// net.Dialer (the dashboard is still reached over HTTP).
func WithDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) Option {
	return func(c *config) { c.dial = dial }
}

// WithLocalRoot sets the cluster's localRoot setting the attach arguments
// are built from, as the extension reads it from its clusterDashboards
// (default imagespec.DebuggerLocalRoot, what the image ships).
func WithLocalRoot(root string) Option { return func(c *config) { c.localRoot = root } }

// WithSourceRoot reads the files named by stack frames under dir instead of
// "/": the sidecar's file system seen from elsewhere (/proc/PID/root of a
// process in its mount namespace).
func WithSourceRoot(dir string) Option { return func(c *config) { c.sourceRoot = dir } }

// WithSourceCheck turns the check of the matched frame's source (it opens
// from here, a breakpoint there is verified) on or off (default on).
func WithSourceCheck(on bool) Option { return func(c *config) { c.noSourceCheck = !on } }

// WithStep steps over the paused line (DAP next) and waits for the stop
// before the action (AttachResult.Stepped).
func WithStep(on bool) Option { return func(c *config) { c.stepOver = on } }

// WithHold keeps the attached, stopped session for d after the checks and
// before the step and the action, as a person reading the paused frame
// does.
func WithHold(d time.Duration) Option { return func(c *config) { c.hold = d } }

// WithPostMortem expects the task to be frozen on an uncaught exception
// (RAY_DEBUG_POST_MORTEM=1): the stop's reason must be "exception" and
// debugpy must answer exceptionInfo.
func WithPostMortem(on bool) Option { return func(c *config) { c.postMortem = on } }

// LocalRootFromSettings returns the localRoot the debugger extension
// attaches with for the cluster at dashboardHost ("host:port"), given
// code-server's settings.json: the clusterDashboards entry of that host (or
// else the first), read as the extension does (`localRoot ??
// "${workspaceFolder}"`), with ${workspaceFolder} being workspace, the
// folder code-server opens.
func LocalRootFromSettings(settings []byte, dashboardHost, workspace string) (string, error) {
	var s map[string]json.RawMessage
	if err := json.Unmarshal(settings, &s); err != nil {
		return "", fmt.Errorf("settings are not a JSON object: %w", err)
	}
	var entries []struct {
		Host      string  `json:"host"`
		LocalRoot *string `json:"localRoot"`
	}
	if err := json.Unmarshal(s[imagespec.SettingClusterDashboards], &entries); err != nil || len(entries) == 0 {
		return "", fmt.Errorf("%s is not a list of {host, localRoot}", imagespec.SettingClusterDashboards)
	}
	e := entries[0]
	for _, x := range entries {
		if x.Host == dashboardHost {
			e = x
			break
		}
	}
	if e.LocalRoot != nil {
		return *e.LocalRoot, nil
	}
	if workspace == "" {
		return "", fmt.Errorf("%s entry %s has no localRoot, and no workspace folder is known for ${workspaceFolder}", imagespec.SettingClusterDashboards, e.Host)
	}
	return workspace, nil
}

// WithLogger logs progress.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

func newConfig(opts []Option) config {
	c := config{
		attachConfig: attachConfig{stepTimeout: 30 * time.Second, stopTimeout: 30 * time.Second, action: ActionContinue, clientID: "imagectl",
			localRoot: imagespec.DebuggerLocalRoot, sourceRoot: "/"},
		timeout:  120 * time.Second,
		interval: 3 * time.Second,
		logger:   slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Attach attaches directly to a debugpy adapter at addr ("ip:port"),
// without the dashboard.
func Attach(ctx context.Context, addr string, opts ...Option) (*AttachResult, error) {
	cfg := newConfig(opts)
	return attach(ctx, addr, cfg.attachConfig)
}

// Run polls the dashboard at dashboardURL until a paused worker appears,
// attaches to it and checks the frame. The report is filled in even when
// err is not nil.
func Run(ctx context.Context, dashboardURL string, opts ...Option) (*Report, error) {
	cfg := newConfig(opts)
	rep := &Report{Dashboard: dashboardURL, Expect: cfg.expect, Breakpoints: []Breakpoint{}}
	err := run(ctx, dashboardURL, cfg, rep)
	if err != nil {
		rep.Error, rep.ErrorKind = err.Error(), Kind(err)
	} else {
		rep.OK = true
	}
	return rep, err
}

func run(ctx context.Context, dashboardURL string, cfg config, rep *Report) error {
	var dopts []dashboard.Option
	if cfg.httpClient != nil {
		dopts = append(dopts, dashboard.WithHTTPClient(cfg.httpClient))
	} else {
		dopts = append(dopts, dashboard.WithTimeout(min(30*time.Second, max(cfg.timeout, time.Second))))
	}
	dc, err := dashboard.New(dashboardURL, dopts...)
	if err != nil {
		return err
	}
	rep.Dashboard = dc.URL()
	// Polling is silent: the command's wait notice (if any) names what it
	// waits for once it has waited a few seconds.
	host := dc.URL()
	if u, err := url.Parse(host); err == nil && u.Host != "" {
		host = u.Host
	}
	stopWait := waitnotice.Start(ctx, host, "a paused worker on the Ray dashboard "+dc.URL())
	defer func() { stopWait(ctx.Err()) }()

	pctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	var lastErr error
	answered := false
	for {
		rep.Polls++
		bps, err := discover(pctx, dc, rep)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// A poll cut short by the deadline says less than what came
			// before it (an HTML page, an HTTP 500, or a good answer with
			// no paused worker): keep that, unless nothing ever answered.
			if pctx.Err() == nil || (lastErr == nil && !answered) {
				lastErr = err
			}
			cfg.logger.Debug("dashboard poll failed", "err", err)
		} else {
			lastErr, answered = nil, true
			rep.Breakpoints = bps
			for i := range bps {
				if bps[i].Driver {
					cfg.logger.Info("paused driver listed, not attached: the probe attaches to tasks", "worker", bps[i].WorkerID, "address", bps[i].Address())
					continue
				}
				if cfg.taskName != "" && bps[i].TaskName != cfg.taskName {
					continue
				}
				t := bps[i]
				rep.Target = &t
				cfg.logger.Info("paused worker found", "worker", t.WorkerID, "address", t.Address(), "task", t.TaskName)
				stopWait(nil)
				stopWait = func(error) {}
				res, err := attach(ctx, t.Address(), cfg.attachConfig)
				rep.Attach = res
				return err
			}
		}
		select {
		case <-pctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if lastErr != nil {
				return fmt.Errorf("%w after %s (%d polls): %w", ErrDashboard, cfg.timeout, rep.Polls, lastErr)
			}
			what := "paused worker"
			if cfg.taskName != "" {
				what = fmt.Sprintf("paused worker running task %q", cfg.taskName)
			}
			drivers := 0
			for _, b := range rep.Breakpoints {
				if b.Driver {
					drivers++
				}
			}
			listed := fmt.Sprintf("%d paused worker(s) listed", len(rep.Breakpoints))
			if drivers > 0 {
				listed += fmt.Sprintf(", %d of them a job's driver paused in its entrypoint script, which the probe does not attach to", drivers)
			}
			return fmt.Errorf("%w: no %s after %s (%d polls of %s; %s)", ErrNoPausedWorker, what, cfg.timeout, rep.Polls, dc.URL(), listed)
		case <-time.After(cfg.interval):
		}
	}
}

// discover does one poll the way the extension does.
func discover(ctx context.Context, dc *dashboard.Client, rep *Report) ([]Breakpoint, error) {
	id, err := dc.ClusterID(ctx)
	if err != nil {
		return nil, err
	}
	rep.ClusterID = id
	ws, err := dc.PausedWorkers(ctx)
	if err != nil {
		return nil, err
	}
	bps := []Breakpoint{}
	for _, w := range ws {
		d, err := dc.Worker(ctx, w.WorkerID)
		if err != nil {
			return nil, err
		}
		if d == nil || d.NumPausedThreads < 1 || d.DebuggerPort <= 0 || d.IP == "" || !d.IsAlive {
			continue
		}
		bp := Breakpoint{WorkerID: d.WorkerID, IP: d.IP, DebuggerPort: d.DebuggerPort, NumPausedThreads: d.NumPausedThreads, Driver: d.WorkerType == "DRIVER"}
		ts, err := dc.RunningTasks(ctx, d.WorkerID)
		if err != nil {
			return nil, err
		}
		if len(ts) > 0 {
			bp.TaskName, bp.JobID = ts[0].Name, ts[0].JobID
		}
		bps = append(bps, bp)
	}
	return bps, nil
}
