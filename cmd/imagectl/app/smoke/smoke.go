package smoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/cmd/imagectl/app/smoke/attach"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/regauth"
	smokeimage "github.com/imagectl/imagectl/smoke/image"
	"github.com/imagectl/imagectl/smoke/kind"
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
	cmd.AddCommand(newSmokeKindCommand(g), attach.New(&g.Streams, "imagectl smoke"), newSmokeImageCommand(g), newSmokeHoldCommand())
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
copied into the sidecar is --probe-binary, else imagectl-probe beside this
binary (make build builds it: smoke attach alone, a few MB), else this one
(when it is a static linux build).`,
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
				probeBin = defaultProbe(exe)
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
	f.StringVar(&probeBin, "probe-binary", "", "static linux imagectl or imagectl-probe copied into the sidecar (default: imagectl-probe beside this binary, else this binary)")
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

// defaultProbe is what smoke kind copies into the sidecar without
// --probe-binary: imagectl-probe beside exe (smoke attach alone, which
// also answers to "smoke attach"), else exe itself.
func defaultProbe(exe string) string {
	p := filepath.Join(filepath.Dir(exe), "imagectl-probe")
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return p
	}
	return exe
}
