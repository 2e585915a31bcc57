package inject

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/inject"
	"github.com/imagectl/imagectl/internal/safefile"
)

// maxManifestFile bounds inject -f: Kubernetes stores an object of at most
// about 1.5 MiB, so a few of them fit many times over.
const maxManifestFile = 16 << 20

// injectFlags are imagectl inject's flags: the sidecar's (the group
// imagectl debug shares) and inject's own.
type injectFlags struct {
	sidecar         options.SidecarOptions
	file, output    string
	inPlace, remove bool
	helmValues      bool
	resolveDigest   bool
	keepUnresolved  bool
	secretFile      string
	prepullFile     string
	rotatePassword  bool
	dashboard       string
}

// New returns imagectl inject.
func New(g *options.Globals) *cobra.Command {
	var f injectFlags
	cmd := &cobra.Command{
		Use:   "inject -f FILE|-",
		Short: "Add the code-server debugger sidecar to your own RayJob, RayCluster or RayService",
		Long: `inject reads one or more YAML documents and writes them back with the
code-server sidecar added to the head group of every ray.io/v1 RayJob,
RayCluster and RayService; every other document passes through byte for byte.

In the head pod template it adds: the sidecar after the Ray container (which stays containers[0]) with
a named port, resources, DEFAULT_WORKSPACE, PASSWORD from a Secret (never a
plain value, no sudo password) and its own securityContext (linuxserver's init
starts as root whatever the pod's securityContext says); the /tmp/ray volume
shared by the Ray container, the sidecar and KubeRay's autoscaler (an existing
/tmp/ray mount is reused, else an emptyDir named ray-logs, KubeRay's own name;
a hostPath one only with --allow-hostpath). The sidecar's IMAGECTL_INJECTED
variable records what was added. Comments, key order and unknown fields are
kept. The Ray container must be containers[0] (a Ray image or "ray start");
anchors, aliases and merge keys in the head pod template, and duplicate keys,
are refused.

The image defaults to the published image for the Ray version of the manifest
(the Ray image's X.Y.Z tag, else rayVersion): inject lists the repository's
tags (credentials from DOCKER_CONFIG or ~/.docker/config.json, bounded by
--http-timeout) and takes the build for that patch (ray2.46.0), else the newest
build for its minor (ray2.46.1); offline, or with --no-resolve, it takes the
floating minor tag (ray2.46), unchecked (a warning). It says on stderr which it
chose and why. Ray older than 2.39.0 has no debugger and no published image:
an error unless --image.
--resolve-digest pins the image to the digest the registry reports; an image
the registry does not have is an error unless --keep-unresolved.

--secret-file FILE writes the password Secret, one document, to FILE (mode
0600), never to stdout, so the output's first document stays the Ray one
(kubectl ray job submit -f reads only that). An existing FILE keeps its
password unless --rotate-password. Apply it with
kubectl apply --server-side -f FILE (a client-side apply would copy the
password into the last-applied-configuration annotation).

Injecting an injected manifest changes nothing; --remove takes out what the
record lists, and only that, giving back the original bytes. --helm-values edits a
values file of KubeRay's ray-cluster chart instead (head.sidecarContainers,
head.volumes, head.volumeMounts).

With Ray token authentication (authOptions.mode: token, or RAY_AUTH_MODE=token
on the head's Ray container) the sidecar also mounts the token's Secret and runs
a loopback proxy that adds the token to the debugger extension's dashboard
requests; a warning says which Secret, or why none can be found.

Warnings (stderr) name what keeps the debugger from working: RAY_DEBUG=legacy
or 0, a RayJob whose runtime env lacks debugpy>=1.8.0 on a Ray image without it,
token authentication whose token inject cannot find, a KubeRay network policy,
a PodSecurity level or runAsNonRoot that refuses the sidecar.
Exit codes: 0 written; 1 a document cannot be injected (nothing is written);
2 bad usage.`,
		Example: `  imagectl inject -f job.yaml --secret-file pw.yaml > job-debug.yaml
  kubectl apply --server-side -f pw.yaml
  imagectl inject -f job.yaml --secret-file pw.yaml --prepull-file prepull.yaml > job-debug.yaml
  imagectl inject -f cluster.yaml -o diff
  imagectl inject -f cluster.yaml -i --resolve-digest
  imagectl inject -f values.yaml --helm-values -i
  kubectl get rayjob my-job -o yaml | imagectl inject -f - --image registry.example/code-server-ray@sha256:...
  imagectl inject -f job.yaml -i --remove`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runInject(g, cmd, &f) },
	}
	fl := cmd.Flags()
	f.sidecar.AddFlags(fl)
	// Where inject does more than imagectl debug with the same flag.
	fl.Lookup("http-timeout").Usage = "bound on each registry lookup (the tag list, --resolve-digest)"
	fl.Lookup("secret-name").Usage = "the Secret holding the code-server password"
	fl.VarP((*oneFile)(&f.file), "filename", "f", "the manifest (or Helm values) to read; - for stdin (once: inject reads one file)")
	fl.StringVarP(&f.output, "output", "o", "yaml", "yaml (the new documents) or diff (a unified diff)")
	fl.BoolVarP(&f.inPlace, "in-place", "i", false, "rewrite the file (atomically: an error or interrupt leaves it as it was; through a symbolic link; with --secret-file the Secret is written first)")
	fl.BoolVar(&f.remove, "remove", false, "take out everything inject added, giving back the original bytes")
	fl.BoolVar(&f.helmValues, "helm-values", false, "the file is a values file of KubeRay's ray-cluster Helm chart")
	fl.BoolVar(&f.resolveDigest, "resolve-digest", false, "pin the image to the digest the registry reports (docker config credentials)")
	fl.BoolVar(&f.keepUnresolved, "keep-unresolved", false, "with --resolve-digest: keep the image by tag (a warning) when the registry has no such image")
	fl.StringVar(&f.secretFile, "secret-file", "", "write that Secret, with a random password, to this file (mode 0600; an existing one keeps its password)")
	fl.StringVar(&f.prepullFile, "prepull-file", "", "write the pre-pull DaemonSet "+inject.PrepullName+" of the output's Ray and sidecar images (and imagePullSecrets) to this file, its Pods restricted like the sidecar with --restricted or --arbitrary-uid (examples/prepull.yaml is examples/rayjob.yaml's)")
	fl.BoolVar(&f.rotatePassword, "rotate-password", false, "with --secret-file: a new password even when the file has one")
	fl.StringVar(&f.dashboard, "dashboard", "", "dashboard host:port written into the debugger settings (default 127.0.0.1 and the head's dashboard-port)")
	options.AddCommandTimeout(g, cmd, "timeout", 5*time.Minute, "registry")
	return cmd
}

// runInject checks the flags, reads the file, injects (or removes) and
// writes the result.
func runInject(g *options.Globals, cmd *cobra.Command, f *injectFlags) error {
	if err := f.check(cmd); err != nil {
		return err
	}
	file := f.file
	var data []byte
	var err error
	if file == "-" {
		data, err = safefile.ReadAll(cmd.InOrStdin(), "stdin", maxManifestFile)
	} else {
		data, err = safefile.ReadFile(file, maxManifestFile)
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}

	var res *inject.Result
	if f.remove {
		res, err = inject.Remove(file, data)
	} else {
		opts, oerr := f.injectOptions()
		if oerr != nil {
			return oerr
		}
		res, err = inject.Apply(cmd.Context(), file, data, opts...)
	}
	if errors.Is(err, inject.ErrInvalidOption) {
		return &options.ExitError{Code: options.ExitUsage, Err: err}
	}
	if err != nil {
		return err
	}
	if err := cmd.Context().Err(); err != nil {
		// Interrupted: no file is written, not even a complete one.
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(g.Stderr, "imagectl: warning: %s: %s\n", file, w)
	}
	if f.remove && len(res.Targets) == 0 {
		fmt.Fprintf(g.Stderr, "imagectl: %s: nothing to remove: no document carries the %s record inject writes; the file is unchanged\n", file, inject.RecordEnv)
	}
	for _, u := range res.Unchecked {
		fmt.Fprintf(g.Stderr, "imagectl: warning: %s: %s\n", file, u)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(g.Stderr, "imagectl: %s: %s\n", file, n)
	}
	if f.secretFile != "" && !f.remove {
		if err := writeSecret(cmd.Context(), g, f, res); err != nil {
			return err
		}
	}
	if f.prepullFile != "" {
		if err := writePrepull(cmd.Context(), g, f, res); err != nil {
			return err
		}
	}
	if f.inPlace {
		if res.Changed {
			if err := writeAtomic(cmd.Context(), file, res.Output); err != nil {
				return err
			}
		}
	} else if f.output == "yaml" {
		if err := cmd.Context().Err(); err != nil {
			return err
		}
		if _, err := g.Stdout.Write(res.Output); err != nil {
			return err
		}
	}
	if f.output == "diff" {
		d, err := inject.Diff(filepath.ToSlash(file), data, res.Output)
		if err != nil {
			return err
		}
		_, err = io.WriteString(g.Stdout, d)
		return err
	}
	return nil
}

// writeSecret writes the password Secret for the namespace of the injected
// documents to --secret-file, mode 0600, keeping the password the file
// holds unless --rotate-password.
func writeSecret(ctx context.Context, g *options.Globals, f *injectFlags, res *inject.Result) error {
	ns, err := res.Namespace()
	if err != nil {
		return fmt.Errorf("--secret-file %s: %w", f.secretFile, err)
	}
	existing, err := safefile.ReadFile(f.secretFile, maxManifestFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading --secret-file %s: %w", f.secretFile, err)
	}
	opts := []inject.Option{inject.WithPasswordSecret(f.sidecar.SecretName, f.sidecar.SecretKey)}
	if f.rotatePassword {
		opts = append(opts, inject.WithRotatePassword())
	}
	sec, err := inject.PasswordSecret(f.secretFile, existing, ns, opts...)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(ctx, f.secretFile, sec.Doc, 0o600); err != nil {
		return err
	}
	what := "a new random password"
	if sec.Kept {
		what = "the password it held"
	}
	where := sec.Name
	if sec.Namespace != "" {
		where = sec.Namespace + "/" + sec.Name
	}
	fmt.Fprintf(g.Stderr, "imagectl: wrote Secret %s to %s (%s); apply it with: kubectl apply --server-side -f %s\n", where, f.secretFile, what, f.secretFile)
	return nil
}

// writePrepull writes the pre-pull DaemonSet of the injected documents to
// --prepull-file, replacing only a pre-pull DaemonSet.
func writePrepull(ctx context.Context, g *options.Globals, f *injectFlags, res *inject.Result) error {
	imgs, err := inject.ImagesToPrepull(f.file, res.Output)
	if err != nil {
		return fmt.Errorf("--prepull-file %s: %w", f.prepullFile, err)
	}
	ds, err := inject.Prepull(imgs)
	if err != nil {
		return fmt.Errorf("--prepull-file %s: %w", f.prepullFile, err)
	}
	existing, err := safefile.ReadFile(f.prepullFile, maxManifestFile)
	switch {
	case err == nil:
		var old struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct{ Name string }
		}
		if yerr := sigsyaml.Unmarshal(existing, &old); yerr != nil || old.APIVersion != "apps/v1" || old.Kind != "DaemonSet" || old.Metadata.Name != inject.PrepullName {
			return fmt.Errorf("--prepull-file %s holds something other than the pre-pull DaemonSet %s: refusing to replace it", f.prepullFile, inject.PrepullName)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("reading --prepull-file %s: %w", f.prepullFile, err)
	}
	if err := writeFileAtomic(ctx, f.prepullFile, ds, 0o644); err != nil {
		return err
	}
	ns := "-n \"$NS\" "
	if n, err := res.Namespace(); err == nil && n != "" {
		ns = "-n " + n + " "
	}
	fmt.Fprintf(g.Stderr, "imagectl: wrote the pre-pull DaemonSet %s (%s) to %s; apply it with: kubectl apply --server-side %s-f %s\n",
		inject.PrepullName, strings.Join(append(append([]string{}, imgs.Ray...), imgs.Sidecar), ", "), f.prepullFile, ns, f.prepullFile)
	return nil
}

// check refuses flag combinations inject cannot do (exit 2).
func (f *injectFlags) check(cmd *cobra.Command) error {
	if f.file == "" {
		return &options.ExitError{Code: options.ExitUsage, Err: errors.New("-f FILE (or -f - for stdin) is required")}
	}
	if err := f.sidecar.Validate(); err != nil {
		return err
	}
	if f.sidecar.NoResolve && f.resolveDigest {
		return &options.ExitError{Code: options.ExitUsage, Err: errors.New("--no-resolve keeps inject off the registry, and --resolve-digest asks it: drop one of them")}
	}
	if f.keepUnresolved && !f.resolveDigest {
		return &options.ExitError{Code: options.ExitUsage, Err: errors.New("--keep-unresolved applies to --resolve-digest: add it, or drop --keep-unresolved")}
	}
	if f.rotatePassword && f.secretFile == "" {
		return &options.ExitError{Code: options.ExitUsage, Err: errors.New("--rotate-password needs --secret-file FILE (the file the new password is written to)")}
	}
	if f.secretFile != "" && f.output == "diff" && !f.inPlace {
		return &options.ExitError{Code: options.ExitUsage, Err: errors.New("-o diff only shows the change, and --secret-file writes a file: drop one of them, or add -i")}
	}
	if f.prepullFile != "" && f.output == "diff" && !f.inPlace {
		return &options.ExitError{Code: options.ExitUsage, Err: errors.New("-o diff only shows the change, and --prepull-file writes a file: drop one of them, or add -i")}
	}
	if f.prepullFile != "" && (f.prepullFile == f.file || f.prepullFile == f.secretFile) {
		return &options.ExitError{Code: options.ExitUsage, Err: fmt.Errorf("--prepull-file %s is the manifest or the --secret-file: the DaemonSet needs a file of its own", f.prepullFile)}
	}
	if f.secretFile != "" && f.secretFile == f.file {
		return &options.ExitError{Code: options.ExitUsage, Err: fmt.Errorf("--secret-file %s is the manifest itself: the Secret needs a file of its own", f.secretFile)}
	}
	if err := options.CheckOutput(f.output, "yaml", "diff"); err != nil {
		return err
	}
	if f.inPlace && f.file == "-" {
		return &options.ExitError{Code: options.ExitUsage, Err: errors.New("-i (in place) needs a file, not stdin")}
	}
	if f.remove {
		for _, fl := range []string{"image", "repository", "resolve-digest", "no-resolve", "name", "port", "secret-name", "secret-key",
			"secret-file", "rotate-password", "requests", "limits", "dashboard", "image-pull-secret", "keep-unresolved", "allow-hostpath", "prepull-file"} {
			if cmd.Flags().Changed(fl) {
				return &options.ExitError{Code: options.ExitUsage, Err: fmt.Errorf("--remove takes out what inject added; --%s does not apply", fl)}
			}
		}
	}
	return nil
}

// injectOptions are the inject package's options from the flags: the
// sidecar's, then inject's own.
func (f *injectFlags) injectOptions() ([]inject.Option, error) {
	opts := f.sidecar.InjectOptions()
	if f.resolveDigest {
		opts = append(opts, inject.WithResolver(inject.RegistryResolver{Timeout: f.sidecar.HTTPTimeout}))
	}
	if f.keepUnresolved {
		opts = append(opts, inject.WithKeepUnresolved())
	}
	if f.dashboard != "" {
		opts = append(opts, inject.WithDashboard(f.dashboard))
	}
	if f.helmValues {
		opts = append(opts, inject.WithHelmValues())
	}
	return opts, nil
}

// writeAtomic replaces path with data through a temporary file in the same
// directory, keeping path's mode. A symbolic link stays one: the file it
// points to is replaced.
func writeAtomic(ctx context.Context, path string, data []byte) error {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	st, err := os.Stat(target)
	if err != nil {
		return err
	}
	return writeFileAtomic(ctx, target, data, st.Mode().Perm())
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory (created with mode 0600, so the data is never readable by
// others on the way), then gives it mode. Once ctx ends it writes nothing:
// path is replaced only if ctx is still live just before the rename, and
// the temporary file is removed whatever happens.
func writeFileAtomic(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".imagectl-*")
	if err != nil {
		// The error names the temporary file, which the user never named.
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("writing %s: the directory %s does not exist", path, filepath.Dir(path))
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}

// oneFile is -f: inject reads one file, so a second -f is refused rather
// than silently replacing the first.
type oneFile string

func (o *oneFile) String() string { return string(*o) }
func (o *oneFile) Type() string   { return "string" }
func (o *oneFile) Set(v string) error {
	if *o != "" {
		return fmt.Errorf("given twice (%s, then %s): inject reads one file; run it once per file", string(*o), v)
	}
	*o = oneFile(v)
	return nil
}
