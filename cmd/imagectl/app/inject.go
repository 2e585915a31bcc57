package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/inject"
	"github.com/imagectl/imagectl/internal/safefile"
)

// maxManifestFile bounds inject -f: Kubernetes stores an object of at most
// about 1.5 MiB, so a few of them fit many times over.
const maxManifestFile = 16 << 20

// injectFlags are imagectl inject's flags.
type injectFlags struct {
	file, output     string
	inPlace, remove  bool
	helmValues       bool
	image, repo      string
	resolveDigest    bool
	timeout          time.Duration
	name             string
	port             int
	secretName, key  string
	createSecret     bool
	requests, limits map[string]string
	dashboard        string
	pullSecret       string
}

func newInjectCommand(g *globals) *cobra.Command {
	var f injectFlags
	cmd := &cobra.Command{
		Use:   "inject -f FILE|-",
		Short: "Add the code-server debugger sidecar to your own RayJob, RayCluster or RayService",
		Long: `inject reads one or more YAML documents and writes them back with the
code-server sidecar added to the head group of every ray.io/v1 RayJob,
RayCluster and RayService; every other document passes through byte for byte.

In the head pod template it adds, each first line marked "# added by imagectl
inject": the sidecar after the Ray container (which stays containers[0]) with
a named port, resources, DEFAULT_WORKSPACE=/tmp/ray/session_latest/runtime_resources
and PASSWORD from a Secret (never a plain value, no sudo password); the
/tmp/ray volume shared by the Ray container and the sidecar (an existing
/tmp/ray mount is reused). Comments, key order and unknown fields are kept.

The image defaults to the published image for the Ray version of the manifest
(the Ray image's X.Y.Z tag, else rayVersion) by its floating ray<X.Y.Z> tag;
--resolve-digest pins it to the digest the registry reports (credentials from
DOCKER_CONFIG or ~/.docker/config.json), and keeps the tag with a warning when
the registry cannot be reached.

Injecting an injected manifest changes nothing; --remove takes everything
marked out again and gives back the original bytes. --helm-values edits a
values file of KubeRay's ray-cluster chart instead (head.sidecarContainers,
head.volumes, head.volumeMounts).

Warnings (stderr) name what keeps the debugger from working: RAY_DEBUG=legacy
or 0, a RayJob whose runtime env lacks debugpy>=1.8.0 on a Ray image without it.
Exit codes: 0 written; 1 a document cannot be injected (nothing is written);
2 bad usage.`,
		Example: `  imagectl inject -f job.yaml | kubectl apply -f -
  imagectl inject -f job.yaml --create-secret | kubectl apply -f -
  imagectl inject -f cluster.yaml -o diff
  imagectl inject -f cluster.yaml -i --resolve-digest
  imagectl inject -f values.yaml --helm-values -i
  kubectl get rayjob my-job -o yaml | imagectl inject -f - --image registry.example/code-server-ray@sha256:...
  imagectl inject -f job.yaml -i --remove`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return g.runInject(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "filename", "f", "", "the manifest (or Helm values) to read; - for stdin")
	fl.StringVarP(&f.output, "output", "o", "yaml", "yaml (the new documents) or diff (a unified diff)")
	fl.BoolVarP(&f.inPlace, "in-place", "i", false, "rewrite the file (atomically; nothing is written on error)")
	fl.BoolVar(&f.remove, "remove", false, "take out everything inject added, giving back the original bytes")
	fl.BoolVar(&f.helmValues, "helm-values", false, "the file is a values file of KubeRay's ray-cluster Helm chart")
	fl.StringVar(&f.image, "image", "", "the sidecar image (default: the published image for the manifest's Ray version)")
	fl.StringVar(&f.repo, "repository", inject.DefaultRepository, "where the default image is taken from")
	fl.BoolVar(&f.resolveDigest, "resolve-digest", false, "pin the image to the digest the registry reports (docker config credentials)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "bound on each registry lookup of --resolve-digest")
	fl.StringVar(&f.name, "name", inject.DefaultName, "the sidecar container's name")
	fl.IntVar(&f.port, "port", inject.DefaultPort, "the code-server port")
	fl.StringVar(&f.secretName, "secret-name", inject.DefaultSecretName, "the Secret holding the code-server password")
	fl.StringVar(&f.key, "secret-key", inject.DefaultSecretKey, "the key of the password in that Secret")
	fl.BoolVar(&f.createSecret, "create-secret", false, "add that Secret with a random password as a separate document (once per namespace)")
	fl.StringToStringVar(&f.requests, "requests", inject.DefaultRequests, "the sidecar's resource requests")
	fl.StringToStringVar(&f.limits, "limits", inject.DefaultLimits, "the sidecar's resource limits")
	fl.StringVar(&f.dashboard, "dashboard", "", "dashboard host:port written into the debugger settings (default 127.0.0.1 and the head's dashboard-port)")
	fl.StringVar(&f.pullSecret, "image-pull-secret", "", "add this Secret to the head pod's imagePullSecrets (a private registry)")
	return cmd
}

// runInject checks the flags, reads the file, injects (or removes) and
// writes the result.
func (g *globals) runInject(cmd *cobra.Command, f *injectFlags) error {
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
		return &exitError{2, fmt.Errorf("reading %s: %w", file, err)}
	}

	var res *inject.Result
	if f.remove {
		res, err = inject.Remove(file, data)
	} else {
		res, err = inject.Apply(cmd.Context(), file, data, f.injectOptions()...)
	}
	if errors.Is(err, inject.ErrInvalidOption) {
		return &exitError{2, err}
	}
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(g.stderr, "imagectl: warning: %s: %s\n", file, w)
	}
	for _, s := range res.Secrets {
		if !f.remove {
			fmt.Fprintf(g.stderr, "imagectl: added Secret %s with a random password (in the output, first)\n", s)
		}
	}
	if f.inPlace {
		if res.Changed {
			if err := writeAtomic(file, res.Output); err != nil {
				return err
			}
		}
	} else if f.output == "yaml" {
		if _, err := g.stdout.Write(res.Output); err != nil {
			return err
		}
	}
	if f.output == "diff" {
		d, err := inject.Diff(filepath.ToSlash(file), data, res.Output)
		if err != nil {
			return err
		}
		_, err = io.WriteString(g.stdout, d)
		return err
	}
	return nil
}

// check refuses flag combinations inject cannot do (exit 2).
func (f *injectFlags) check(cmd *cobra.Command) error {
	if f.file == "" {
		return &exitError{2, errors.New("-f FILE (or -f - for stdin) is required")}
	}
	if f.output != "yaml" && f.output != "diff" {
		return &exitError{2, fmt.Errorf("--output %q: expected yaml or diff", f.output)}
	}
	if f.inPlace && f.file == "-" {
		return &exitError{2, errors.New("-i (in place) needs a file, not stdin")}
	}
	if f.remove {
		for _, fl := range []string{"image", "repository", "resolve-digest", "name", "port", "secret-name", "secret-key",
			"create-secret", "requests", "limits", "dashboard", "image-pull-secret"} {
			if cmd.Flags().Changed(fl) {
				return &exitError{2, fmt.Errorf("--remove takes out what inject added; --%s does not apply", fl)}
			}
		}
	}
	return nil
}

// injectOptions are the inject package's options from the flags.
func (f *injectFlags) injectOptions() []inject.Option {
	opts := []inject.Option{
		inject.WithName(f.name), inject.WithPort(f.port), inject.WithPasswordSecret(f.secretName, f.key),
		inject.WithRepository(f.repo), inject.WithResources(f.requests, f.limits),
	}
	if f.image != "" {
		opts = append(opts, inject.WithImage(f.image))
	}
	if f.resolveDigest {
		opts = append(opts, inject.WithResolver(inject.RegistryResolver{Timeout: f.timeout}))
	}
	if f.createSecret {
		opts = append(opts, inject.WithCreateSecret())
	}
	if f.dashboard != "" {
		opts = append(opts, inject.WithDashboard(f.dashboard))
	}
	if f.pullSecret != "" {
		opts = append(opts, inject.WithImagePullSecret(f.pullSecret))
	}
	if f.helmValues {
		opts = append(opts, inject.WithHelmValues())
	}
	return opts
}

// writeAtomic replaces path with data through a temporary file in the same
// directory, keeping path's mode.
func writeAtomic(path string, data []byte) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".imagectl-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
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
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}
