package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/debug"
	"github.com/imagectl/imagectl/inject"
	"github.com/imagectl/imagectl/internal/safefile"
)

// exitJobFailed is the exit code of imagectl debug when the job it
// followed ended FAILED or STOPPED.
const exitJobFailed = 8

// debugFlags are imagectl debug's own flags; the sidecar's come from
// inject's (injectFlags).
type debugFlags struct {
	kube           debug.KubeFlags
	cluster        string
	workingDir     string
	timeout        time.Duration
	replace        bool
	cleanup        bool
	showPassword   bool
	open           bool
	logs           bool
	output         string
	codeServerPort int
	inject         injectFlags
}

func newDebugCommand(g *globals) *cobra.Command {
	var f debugFlags
	cmd := &cobra.Command{
		Use:   "debug -f MANIFEST [--working-dir DIR] [-- ENTRYPOINT...] | debug --cluster NAME",
		Short: "From a Ray manifest to the paused line: inject, apply, wait, submit, port-forward, report paused tasks",
		Long: `debug runs a debugging session on a Kubernetes cluster in one command:

  1. adds the code-server sidecar to the RayJob, RayCluster or RayService of
     MANIFEST (the same code as imagectl inject) and creates the password
     Secret unless it exists;
  2. applies every document server-side (field manager imagectl-debug) in one
     namespace: -n, else the kubeconfig context's, as kubectl chooses it;
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
and its head must carry the sidecar.

-o json prints one event per line (applied, waiting, ready, submitted, paused,
resumed, log, finished, cleanup) for tools.`,
		Example: `  imagectl debug -f rayjob.yaml --working-dir . -- python my_script.py
  imagectl debug -f rayjob.yaml -n team-a --ready-timeout 15m --cleanup
  imagectl debug -f raycluster.yaml --working-dir ./src -- python train.py
  imagectl debug --cluster my-raycluster -n team-a --show-password
  imagectl debug -f rayjob.yaml -o json | jq -c 'select(.event=="paused")'`,
		RunE: func(cmd *cobra.Command, args []string) error { return g.runDebug(cmd, &f, args) },
	}
	fl := cmd.Flags()
	fl.VarP((*oneFile)(&f.inject.file), "filename", "f", "the manifest: a RayJob, RayCluster or RayService with any other documents it needs; - for stdin")
	fl.StringVar(&f.cluster, "cluster", "", "attach to this running RayCluster instead of applying a manifest")
	fl.StringVar(&f.kube.Kubeconfig, "kubeconfig", "", "the kubeconfig file (default: KUBECONFIG, else ~/.kube/config)")
	fl.StringVar(&f.kube.Context, "context", "", "the kubeconfig context (default: the current context)")
	fl.StringVarP(&f.kube.Namespace, "namespace", "n", "", "the namespace (default: the context's namespace, else default)")
	fl.StringVar(&f.workingDir, "working-dir", "", "a local directory uploaded as the job's working_dir (InteractiveMode RayJob, or a RayCluster with an entrypoint)")
	fl.DurationVar(&f.timeout, "ready-timeout", debug.DefaultTimeout, "how long to wait for the head Pod to be ready (the session itself runs until the job ends or Ctrl-C)")
	fl.BoolVar(&f.replace, "replace", false, "delete an existing RayJob of the same name (and its cluster) and create it again")
	fl.BoolVar(&f.cleanup, "cleanup", false, "on the way out (the job ended, Ctrl-C, an error), delete what this session created")
	fl.BoolVar(&f.showPassword, "show-password", false, "print the code-server password (default: say which Secret holds it)")
	fl.BoolVar(&f.open, "open", false, "open the code-server URL in a browser")
	fl.BoolVar(&f.logs, "logs", false, "print the job's log lines as they come")
	fl.StringVarP(&f.output, "output", "o", "text", "text, or json (one event per line)")
	fl.IntVar(&f.codeServerPort, "code-server-port", 0, "the local port of code-server's port-forward (default: a free port)")
	// The sidecar's flags, as imagectl inject takes them.
	fl.StringVar(&f.inject.image, "image", "", "the sidecar image (default: the published image for the manifest's Ray version)")
	fl.StringVar(&f.inject.repo, "repository", inject.DefaultRepository, "where the default image is taken from")
	fl.BoolVar(&f.inject.noResolve, "no-resolve", false, "do not list the repository's tags: the default image is the floating tag of the manifest's Ray minor")
	fl.DurationVar(&f.inject.timeout, "http-timeout", 10*time.Second, "bound on each registry lookup")
	fl.StringVar(&f.inject.name, "name", inject.DefaultName, "the sidecar container's name")
	fl.IntVar(&f.inject.port, "port", inject.DefaultPort, "the code-server port in the sidecar")
	fl.StringVar(&f.inject.secretName, "secret-name", inject.DefaultSecretName, "the Secret holding the code-server password (created with a random password unless it exists)")
	fl.StringVar(&f.inject.key, "secret-key", inject.DefaultSecretKey, "the key of the password in that Secret")
	fl.StringToStringVar(&f.inject.requests, "requests", inject.DefaultRequests, "the sidecar's resource requests")
	fl.StringToStringVar(&f.inject.limits, "limits", inject.DefaultLimits, "the sidecar's resource limits")
	fl.StringVar(&f.inject.pullSecret, "image-pull-secret", "", "add this Secret to the head pod's imagePullSecrets (a private registry)")
	fl.BoolVar(&f.inject.allowHostPath, "allow-hostpath", false, "let the sidecar share a hostPath volume the Ray container mounts at /tmp/ray")
	return cmd
}

func (g *globals) runDebug(cmd *cobra.Command, f *debugFlags, args []string) error {
	if err := f.check(cmd, args); err != nil {
		return err
	}
	o := debug.Options{
		Kube:           f.kube,
		ClusterName:    f.cluster,
		Inject:         f.inject.injectOptions(),
		SecretName:     f.inject.secretName,
		SecretKey:      f.inject.key,
		SidecarName:    f.inject.name,
		WorkingDir:     f.workingDir,
		Entrypoint:     strings.Join(args, " "),
		Timeout:        f.timeout,
		Replace:        f.replace,
		Cleanup:        f.cleanup,
		ShowPassword:   f.showPassword,
		Logs:           f.logs,
		CodeServerPort: f.codeServerPort,
		NewJobs:        debug.NewRayJobs,
	}
	if f.inject.file != "" {
		data, err := readManifest(cmd, f.inject.file)
		if err != nil {
			return err
		}
		o.File, o.Manifest = f.inject.file, data
	}
	var r debug.Reporter = debug.TextReporter(g.stdout)
	if f.output == "json" {
		r = debug.JSONReporter(g.stdout)
	}
	if f.open {
		inner := r
		r = debug.ReporterFunc(func(e debug.Event) {
			inner.Report(e)
			if e.Kind == debug.KindReady {
				if err := openBrowser(e.CodeServerURL); err != nil {
					fmt.Fprintf(g.stderr, "imagectl: --open: %v (open %s yourself)\n", err, e.CodeServerURL)
				}
			}
		})
	}
	out, err := debug.Run(cmd.Context(), o, r)
	if err != nil {
		return err
	}
	if out.Failed() {
		return &exitError{exitJobFailed, fmt.Errorf("job %s ended %s: %s", out.JobID, out.JobStatus, out.Message)}
	}
	return nil
}

// check refuses what debug cannot do (exit 2).
func (f *debugFlags) check(cmd *cobra.Command, args []string) error {
	if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
		return usageError(fmt.Errorf("unexpected argument %q: the entrypoint goes after --, as in imagectl debug -f job.yaml -- python main.py", args[0]))
	}
	if f.cluster != "" {
		for _, fl := range []string{"image", "repository", "no-resolve", "requests", "limits", "image-pull-secret", "allow-hostpath", "replace", "port"} {
			if cmd.Flags().Changed(fl) {
				return usageError(fmt.Errorf("--cluster attaches to a running cluster and applies nothing; --%s does not apply", fl))
			}
		}
	}
	if err := checkRepository("repository", f.inject.repo); err != nil {
		return usageError(err)
	}
	if f.inject.image != "" {
		if err := checkReference("--image", f.inject.image); err != nil {
			return usageError(err)
		}
	}
	if f.timeout <= 0 {
		return usageError(fmt.Errorf("--ready-timeout %s: want a positive duration", f.timeout))
	}
	if f.codeServerPort < 0 || f.codeServerPort > 65535 {
		return usageError(fmt.Errorf("--code-server-port %d: want 0 (a free port) to 65535", f.codeServerPort))
	}
	if err := checkOutput(f.output, "text", "json"); err != nil {
		return err
	}
	if (f.inject.file == "") == (f.cluster == "") {
		return usageError(errors.New("give -f MANIFEST (or -f - for stdin), or --cluster NAME for a running RayCluster, one of them"))
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
