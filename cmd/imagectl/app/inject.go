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

func newInjectCommand(g *globals) *cobra.Command {
	var (
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
	)
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return &exitError{2, errors.New("-f FILE (or -f - for stdin) is required")}
			}
			if output != "yaml" && output != "diff" {
				return &exitError{2, fmt.Errorf("--output %q: expected yaml or diff", output)}
			}
			if inPlace && file == "-" {
				return &exitError{2, errors.New("-i (in place) needs a file, not stdin")}
			}
			if remove {
				for _, f := range []string{"image", "repository", "resolve-digest", "name", "port", "secret-name", "secret-key",
					"create-secret", "requests", "limits", "dashboard", "image-pull-secret"} {
					if cmd.Flags().Changed(f) {
						return &exitError{2, fmt.Errorf("--remove takes out what inject added; --%s does not apply", f)}
					}
				}
			}
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
			if remove {
				res, err = inject.Remove(file, data)
			} else {
				opts := []inject.Option{
					inject.WithName(name), inject.WithPort(port), inject.WithPasswordSecret(secretName, key),
					inject.WithRepository(repo), inject.WithResources(requests, limits),
				}
				if image != "" {
					opts = append(opts, inject.WithImage(image))
				}
				if resolveDigest {
					opts = append(opts, inject.WithResolver(inject.RegistryResolver{Timeout: timeout}))
				}
				if createSecret {
					opts = append(opts, inject.WithCreateSecret())
				}
				if dashboard != "" {
					opts = append(opts, inject.WithDashboard(dashboard))
				}
				if pullSecret != "" {
					opts = append(opts, inject.WithImagePullSecret(pullSecret))
				}
				if helmValues {
					opts = append(opts, inject.WithHelmValues())
				}
				res, err = inject.Apply(cmd.Context(), file, data, opts...)
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
				if !remove {
					fmt.Fprintf(g.stderr, "imagectl: added Secret %s with a random password (in the output, first)\n", s)
				}
			}
			if inPlace {
				if res.Changed {
					if err := writeAtomic(file, res.Output); err != nil {
						return err
					}
				}
			} else if output == "yaml" {
				if _, err := g.stdout.Write(res.Output); err != nil {
					return err
				}
			}
			if output == "diff" {
				d, err := inject.Diff(filepath.ToSlash(file), data, res.Output)
				if err != nil {
					return err
				}
				_, err = io.WriteString(g.stdout, d)
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "filename", "f", "", "the manifest (or Helm values) to read; - for stdin")
	f.StringVarP(&output, "output", "o", "yaml", "yaml (the new documents) or diff (a unified diff)")
	f.BoolVarP(&inPlace, "in-place", "i", false, "rewrite the file (atomically; nothing is written on error)")
	f.BoolVar(&remove, "remove", false, "take out everything inject added, giving back the original bytes")
	f.BoolVar(&helmValues, "helm-values", false, "the file is a values file of KubeRay's ray-cluster Helm chart")
	f.StringVar(&image, "image", "", "the sidecar image (default: the published image for the manifest's Ray version)")
	f.StringVar(&repo, "repository", inject.DefaultRepository, "where the default image is taken from")
	f.BoolVar(&resolveDigest, "resolve-digest", false, "pin the image to the digest the registry reports (docker config credentials)")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "bound on each registry lookup of --resolve-digest")
	f.StringVar(&name, "name", inject.DefaultName, "the sidecar container's name")
	f.IntVar(&port, "port", inject.DefaultPort, "the code-server port")
	f.StringVar(&secretName, "secret-name", inject.DefaultSecretName, "the Secret holding the code-server password")
	f.StringVar(&key, "secret-key", inject.DefaultSecretKey, "the key of the password in that Secret")
	f.BoolVar(&createSecret, "create-secret", false, "add that Secret with a random password as a separate document (once per namespace)")
	f.StringToStringVar(&requests, "requests", inject.DefaultRequests, "the sidecar's resource requests")
	f.StringToStringVar(&limits, "limits", inject.DefaultLimits, "the sidecar's resource limits")
	f.StringVar(&dashboard, "dashboard", "", "dashboard host:port written into the debugger settings (default 127.0.0.1 and the head's dashboard-port)")
	f.StringVar(&pullSecret, "image-pull-secret", "", "add this Secret to the head pod's imagePullSecrets (a private registry)")
	return cmd
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
