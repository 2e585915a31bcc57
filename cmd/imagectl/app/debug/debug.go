package debug

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/debug"
	"github.com/imagectl/imagectl/inject"
	"github.com/imagectl/imagectl/internal/safefile"
)

// maxManifestFile bounds -f, as inject's: Kubernetes stores an object of at
// most about 1.5 MiB, so a few of them fit many times over.
const maxManifestFile = 16 << 20

// ExitJobFailed is the exit code of imagectl debug when the job it
// followed ended FAILED or STOPPED.
const ExitJobFailed = 8

// debugFlags are imagectl debug's flags.
type debugFlags struct {
	file           oneFile
	kube           debug.KubeFlags
	cluster        string
	workingDir     string
	timeout        time.Duration
	replace        bool
	prepull        bool
	cleanup        bool
	showPassword   bool
	open           bool
	logs           bool
	output         string
	codeServerPort int
	sidecar        options.SidecarOptions
	local          bool
	localPort      int
	localRoot      string
	writeLaunch    string
}

// New returns imagectl debug.
func New(g *options.Globals) *cobra.Command {
	var f debugFlags
	cmd := &cobra.Command{
		Use:   "debug -f MANIFEST [--local] [--working-dir DIR] [-- ENTRYPOINT...] | debug --cluster NAME [--local]",
		Short: "From a Ray manifest to the paused line: inject, apply, wait, submit, port-forward, report paused tasks",
		Long: `debug runs a debugging session on a Kubernetes cluster in one command:

  1. adds the code-server sidecar to the RayJob, RayCluster or RayService of
     MANIFEST (the same code as imagectl inject) and creates the password
     Secret unless it exists;
  2. applies every document server-side (field manager imagectl-debug) in one
     namespace: -n, else the kubeconfig context's, as kubectl chooses it,
     after a server-side dry run of all of them, so that what the API server
     refuses (RBAC, admission, validation) leaves nothing behind; --prepull
     adds the DaemonSet that pulls the Ray and sidecar images onto every
     node;
  3. waits for the head Pod, printing the RayCluster's state and each Pod's
     phase, image pulls and readiness; it explains an unschedulable Pod (the
     resource), an image that cannot be pulled (the image and node) and a
     container that keeps exiting (its last log lines), and stops at --ready-timeout
     naming what it waited for;
  4. port-forwards code-server and the dashboard to local ports through the
     API server (no kubectl needed) and prints the code-server URL and where
     the password is (--show-password prints it, --open opens a browser);
  5. for a RayJob in InteractiveMode (or a RayCluster given an entrypoint after
     --), submits the entrypoint through the Ray Jobs API, the --working-dir
     packaged and uploaded as Ray's own SDK does (no local Ray CLI, no kubectl
     ray plugin), and sets the RayJob's spec.jobId; other RayJobs are submitted
     by KubeRay itself;
  6. reports each paused task as it appears (task, Pod, head or worker, the
     debugpy address) and when it resumes, and the job's logs with --logs.

Open the code-server URL, then the Ray Distributed Debugger view: the paused
task is listed there; attach, and the source opens at the paused line.

It ends when the job ends (exit 0 when it succeeded, 8 when it failed or was
stopped), or on Ctrl-C (exit 130), stopping its port-forwards. With --cleanup
it then deletes exactly what it created (never an object that existed
before); without it, it says what it left. A second Ctrl-C exits at once.
--cluster NAME attaches to a RayCluster that runs already: nothing is applied,
and its head must carry the sidecar (unless --local).

When the head Pod is gone (deleted, evicted, replaced), a session that follows
no job (a RayCluster or RayService without an entrypoint, or a job not yet
submitted) waits for the head Pod KubeRay makes instead and serves it on the
same local addresses; a session that follows a job ends, since the job ran on
that head.

--local debugs with the VS Code on this machine instead: no sidecar is
injected (the manifest is applied as it is), and no code-server runs. It
port-forwards the head's dashboard and serves a dashboard proxy on
127.0.0.1:--local-port (8265) that passes every request through, except the
State API's records of paused workers, whose ip and debugger_port it rewrites
to a local tunnel: each tunnel relays its connections through an exec in the
paused task's Pod (debugpy listens on the Pod's IP, which a port-forward
cannot reach). In the Ray Distributed Debugger view add the cluster
127.0.0.1:8265 with localRoot --local-root (default: --working-dir, else the
current directory); or attach ms-python.debugpy to the address each paused
event gives (--write-launch FILE keeps a launch.json with one attach
configuration per paused task). It needs, in the namespace: create on
pods/portforward and pods/exec, get and list on pods, get on rayclusters.ray.io,
checked before anything is applied.

-o json prints one event per line (applied, waiting, ready, submitted, paused,
resumed, log, finished, cleanup) for tools.`,
		Example: `  imagectl debug -f rayjob.yaml --working-dir . -- python my_script.py
  imagectl debug -f rayjob.yaml -n team-a --ready-timeout 15m --cleanup
  imagectl debug -f rayjob.yaml --prepull --cleanup --working-dir . -- python my_script.py
  imagectl debug -f raycluster.yaml --working-dir ./src -- python train.py
  imagectl debug --cluster my-raycluster -n team-a --show-password
  imagectl debug -f rayjob.yaml -o json | jq -c 'select(.event=="paused")'
  imagectl debug -f rayjob.yaml --local --working-dir . --write-launch .vscode/launch.json -- python my_script.py
  imagectl debug --cluster my-raycluster --local --local-root ./src`,
		RunE: func(cmd *cobra.Command, args []string) error { return run(g, cmd, &f, args) },
	}
	fl := cmd.Flags()
	fl.VarP(&f.file, "filename", "f", "the manifest: a RayJob, RayCluster or RayService with any other documents it needs; - for stdin")
	fl.StringVar(&f.cluster, "cluster", "", "attach to this running RayCluster instead of applying a manifest")
	fl.StringVar(&f.kube.Kubeconfig, "kubeconfig", "", "the kubeconfig file (default: KUBECONFIG, else ~/.kube/config)")
	fl.StringVar(&f.kube.Context, "context", "", "the kubeconfig context (default: the current context)")
	fl.StringVarP(&f.kube.Namespace, "namespace", "n", "", "the namespace (default: the context's namespace, else default)")
	fl.StringVar(&f.workingDir, "working-dir", "", "a local directory uploaded as the job's working_dir (InteractiveMode RayJob, or a RayCluster with an entrypoint)")
	fl.DurationVar(&f.timeout, "ready-timeout", debug.DefaultTimeout, "how long to wait for the head Pod to be ready (the session itself runs until the job ends or Ctrl-C)")
	fl.BoolVar(&f.replace, "replace", false, "delete an existing RayJob of the same name (and its cluster) and create it again")
	fl.BoolVar(&f.prepull, "prepull", false, "also apply the pre-pull DaemonSet "+inject.PrepullName+" of the manifest's Ray and sidecar images (inject.Prepull), so that every node pulls them; not waited for, deleted by --cleanup when created")
	fl.BoolVar(&f.cleanup, "cleanup", false, "on the way out (the job ended, Ctrl-C, an error), delete what this session created")
	fl.BoolVar(&f.showPassword, "show-password", false, "print the code-server password (default: say which Secret holds it)")
	fl.BoolVar(&f.open, "open", false, "open the code-server URL in a browser")
	fl.BoolVar(&f.logs, "logs", false, "print the job's log lines as they come")
	fl.StringVarP(&f.output, "output", "o", "text", "text, or json (one event per line)")
	fl.IntVar(&f.codeServerPort, "code-server-port", 0, "the local port of code-server's port-forward (default: a free port)")
	f.sidecar.AddFlags(fl)
	fl.BoolVar(&f.local, "local", false, "debug with the VS Code on this machine: no sidecar; a local dashboard proxy and a tunnel per paused task")
	fl.IntVar(&f.localPort, "local-port", debug.DefaultLocalPort, "--local: the port of the dashboard proxy on 127.0.0.1 (0: a free port)")
	fl.StringVar(&f.localRoot, "local-root", "", "--local: the local directory of the job's files, the attach's localRoot (default: --working-dir, else the current directory)")
	fl.StringVar(&f.writeLaunch, "write-launch", "", "--local: keep this launch.json up to date with an attach configuration per paused task (others in it are kept)")
	return cmd
}

func run(g *options.Globals, cmd *cobra.Command, f *debugFlags, args []string) error {
	if err := f.check(cmd, args); err != nil {
		return err
	}
	o := debug.Options{
		Kube:           f.kube,
		ClusterName:    f.cluster,
		Inject:         f.sidecar.InjectOptions(),
		Restricted:     f.sidecar.Restricted || f.sidecar.ArbitraryUID,
		SecretName:     f.sidecar.SecretName,
		SecretKey:      f.sidecar.SecretKey,
		SidecarName:    f.sidecar.Name,
		WorkingDir:     f.workingDir,
		Entrypoint:     strings.Join(args, " "),
		Timeout:        f.timeout,
		Replace:        f.replace,
		Prepull:        f.prepull,
		Cleanup:        f.cleanup,
		ShowPassword:   f.showPassword,
		Logs:           f.logs,
		CodeServerPort: f.codeServerPort,
		NewJobs:        debug.NewRayJobs,
		Local:          f.local,
		LocalPort:      f.localPort,
		LocalRoot:      f.localRoot,
		WriteLaunch:    f.writeLaunch,
	}
	if f.file != "" {
		data, err := readManifest(cmd, string(f.file))
		if err != nil {
			return err
		}
		o.File, o.Manifest = string(f.file), data
	}
	var r debug.Reporter = debug.TextReporter(g.Stdout)
	if f.output == "json" {
		r = debug.JSONReporter(g.Stdout)
	}
	if f.open {
		inner := r
		opened := false // a head Pod that replaces a lost one is served on the same URL
		r = debug.ReporterFunc(func(e debug.Event) {
			inner.Report(e)
			if e.Kind == debug.KindReady && !opened {
				opened = true
				if err := openBrowser(e.CodeServerURL); err != nil {
					fmt.Fprintf(g.Stderr, "imagectl: --open: %v (open %s yourself)\n", err, e.CodeServerURL)
				}
			}
		})
	}
	// client-go's port-forward writes the errors it cannot return as klog
	// lines on stderr; the session reports what they mean, and -v shows
	// them, one plain line each.
	var kubeLog func(string)
	if g.Verbose {
		kubeLog = func(line string) { fmt.Fprintf(g.Stderr, "imagectl debug: client-go: %s\n", line) }
	}
	debug.LogKubeErrors(kubeLog)
	out, err := debug.Run(cmd.Context(), o, r)
	if err != nil {
		return err
	}
	if out.Failed() {
		return &options.ExitError{Code: ExitJobFailed, Err: fmt.Errorf("job %s ended %s: %s", out.JobID, out.JobStatus, out.Message)}
	}
	return nil
}

// check refuses what debug cannot do (exit 2).
func (f *debugFlags) check(cmd *cobra.Command, args []string) error {
	if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
		return options.Usagef("unexpected argument %q: the entrypoint goes after --, as in imagectl debug -f job.yaml -- python main.py", args[0])
	}
	if f.cluster != "" {
		for _, fl := range []string{"image", "repository", "no-resolve", "requests", "limits", "image-pull-secret", "allow-hostpath", "replace", "port", "working-dir", "prepull"} {
			if cmd.Flags().Changed(fl) {
				return options.Usagef("--cluster attaches to a running cluster and applies nothing; --%s does not apply", fl)
			}
		}
	}
	if f.local {
		for _, fl := range []string{"image", "repository", "no-resolve", "http-timeout", "name", "port", "secret-name", "secret-key", "requests", "limits", "image-pull-secret", "allow-hostpath", "prepull", "show-password", "open", "code-server-port"} {
			if cmd.Flags().Lookup(fl) != nil && cmd.Flags().Changed(fl) {
				return options.Usagef("--local injects no sidecar and runs no code-server; --%s does not apply", fl)
			}
		}
		if f.localPort < 0 || f.localPort > 65535 {
			return options.Usagef("--local-port %d: want 0 (a free port) to 65535", f.localPort)
		}
		if f.localRoot != "" {
			if fi, err := os.Stat(f.localRoot); err != nil || !fi.IsDir() {
				return options.Usagef("--local-root %s: not a directory", f.localRoot)
			}
		}
	} else {
		for _, fl := range []string{"local-port", "local-root", "write-launch"} {
			if cmd.Flags().Changed(fl) {
				return options.Usagef("--%s is for --local", fl)
			}
		}
	}
	if err := f.sidecar.Validate(); err != nil {
		return err
	}
	if f.timeout <= 0 {
		return options.Usagef("--ready-timeout %s: want a positive duration", f.timeout)
	}
	if f.codeServerPort < 0 || f.codeServerPort > 65535 {
		return options.Usagef("--code-server-port %d: want 0 (a free port) to 65535", f.codeServerPort)
	}
	if err := options.CheckOutput(f.output, "text", "json"); err != nil {
		return err
	}
	if (f.file == "") == (f.cluster == "") {
		return options.Usagef("give -f MANIFEST (or -f - for stdin), or --cluster NAME for a running RayCluster, one of them")
	}
	return nil
}

// readManifest reads -f (or stdin), bounded like inject's.
func readManifest(cmd *cobra.Command, file string) ([]byte, error) {
	if file == "-" {
		return safefile.ReadAll(cmd.InOrStdin(), "stdin", maxManifestFile)
	}
	return safefile.ReadFile(file, maxManifestFile)
}

// openBrowser opens url with the desktop's opener.
func openBrowser(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	if _, err := exec.LookPath(name); err != nil {
		return fmt.Errorf("no %s on PATH", name)
	}
	c := exec.Command(name, url)
	c.Stdout, c.Stderr = io.Discard, os.Stderr
	return c.Start()
}

// oneFile is -f: debug reads one manifest, so a second -f is refused rather
// than silently replacing the first.
type oneFile string

func (o *oneFile) String() string { return string(*o) }
func (o *oneFile) Type() string   { return "string" }
func (o *oneFile) Set(v string) error {
	if *o != "" {
		return fmt.Errorf("given twice (%s, then %s): debug follows one manifest", string(*o), v)
	}
	*o = oneFile(v)
	return nil
}
