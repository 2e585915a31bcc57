package app

import (
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
)

// flagMeanings is every flag name imagectl has, with its one meaning
// (docs/cli.md lists the shared ones). A new flag needs a row here: reuse
// a name only for the same meaning, and pick a new name for a new one.
var flagMeanings = map[string]string{
	// shared
	"matrix": "matrix.yaml", "catalog": "catalog.json", "verbose": "log to stderr", "help": "help",
	"output":       "format of stdout: text (default) or json; yaml/diff on inject, github on plan",
	"timeout":      "the whole run",
	"http-timeout": "one HTTP attempt (or one registry lookup)", "idle-timeout": "a body that sends nothing",
	"insecure":   "plain HTTP to registries",
	"repository": "the image repository: REGISTRY/NAME or REGISTRY",
	"platform":   "OCI platforms",
	"key":        "cosign key", "key-password-file": "the key's password", "verify-key": "public half of --key",
	"keyless":              "Fulcio + Rekor",
	"certificate-identity": "keyless identity", "certificate-identity-regexp": "keyless identity",
	"certificate-oidc-issuer": "keyless issuer", "certificate-oidc-issuer-regexp": "keyless issuer",
	"ray": "Ray version", "python": "Python version", "code-server": "code-server version",
	"cache-dir": "extension cache", "marketplace-url": "gallery", "openvsx-url": "gallery",
	"require-pins": "refuse unpinned extension files", "parallel": "concurrent downloads",
	"max-expanded-bytes": "VSIX limit", "max-expansion-ratio": "VSIX limit",
	"package-index": "PEP 503 index", "tools-image": "build tools image", "python-runtime": "runtime",
	"python-standalone-url": "runtime", "python-standalone-sha256": "runtime",
	"buildkit-addr": "buildkitd", "driver": "buildkitd", "builder": "buildkitd per platform",
	"cache-from": "BuildKit cache", "cache-to": "BuildKit cache", "progress": "BuildKit progress",
	"provenance": "SLSA provenance", "sbom-format": "SBOM format", "sbom-from-lock": "SBOM written from the lock", "sbom-scanner": "SBOM scanner executable",
	"source-date-epoch": "timestamps", "revision": "revision label",
	"skip-contents": "verify without layers", "image": "an image reference",
	"dashboard": "Ray dashboard address", "settings": "code-server settings.json",
	"step-timeout": "each step of a smoke", "boot-timeout": "code-server boot of a smoke",
	"runtime": "container runtime", "work-dir": "unpack directory", "runc-root": "runc --root",
	"archive": "OCI archive", "name": "a name",
	// build, release
	"push": "push", "dist": "archive directory", "buildkit-sbom": "buildkitd's SBOM", "sign": "sign", "force": "rebuild",
	"dry-run": "write nothing", "expect-digest": "tag only this digest", "no-floating": "versioned tag only",
	"only": "some plan entries", "smoke-image": "smoke before tagging",
	"smoke-runtime": "--runtime of smoke image", "smoke-work-dir": "--work-dir of smoke image",
	"smoke-runc-root": "--runc-root of smoke image", "smoke-boot-timeout": "--boot-timeout of smoke image",
	"smoke-step-timeout": "--step-timeout of smoke image",
	// sign, verify
	"all-manifests": "sign", "attestation-manifests": "sign", "annotation": "sign", "sbom": "SBOM file",
	"fulcio-url": "keyless", "rekor-url": "keyless", "generate-key": "key pair",
	"allow-repository": "mirror", "skip-attestations": "verify",
	// extensions
	"out": "output directory", "in-image-dir": "layout", "no-python-lock": "refresh",
	// matrix
	"explain": "resolve", "base-image": "refresh", "github-token-host": "refresh", "github-url": "refresh",
	"pip": "refresh", "pypi-url": "refresh", "retries": "refresh", "versions": "refresh",
	// smoke
	"kind-image": "kind", "kuberay-version": "kind", "cluster-name": "kind", "keep": "kind", "log-dir": "kind",
	"debug":        "kind: also run imagectl debug",
	"probe-binary": "kind", "action": "attach", "check-source": "attach", "expect-file": "attach",
	"expect-function": "attach", "local-root": "attach", "poll-interval": "attach", "post-mortem": "attach",
	"stop-timeout": "attach", "pause-timeout": "attach: waiting for a paused worker", "task": "attach",
	// inject
	"filename": "inject", "in-place": "inject", "remove": "inject", "helm-values": "inject",
	"resolve-digest": "inject", "no-resolve": "inject", "port": "inject", "secret-name": "inject",
	"secret-key": "inject", "secret-file": "inject", "rotate-password": "inject", "requests": "inject",
	"limits": "inject", "image-pull-secret": "inject", "keep-unresolved": "inject", "allow-hostpath": "inject", "restricted": "inject", "arbitrary-uid": "inject",
	"prepull-file": "inject: the pre-pull DaemonSet's file",
	// cobra
	"no-descriptions": "completion", "version": "--version",
	"kubeconfig": "kubeconfig file", "context": "kubeconfig context", "namespace": "Kubernetes namespace",
	"cluster": "debug: a running RayCluster", "working-dir": "debug: the job's working_dir",
	"ready-timeout": "debug: waiting for the head Pod", "replace": "debug: an existing RayJob",
	"cleanup": "debug: delete what it created", "show-password": "debug", "open": "debug: a browser",
	"logs": "debug: the job's logs", "code-server-port": "debug: local port",
	"prepull": "debug: the pre-pull DaemonSet",
	"local":   "debug: the VS Code on this machine", "local-port": "debug: local port of the dashboard proxy",
	"write-launch": "debug: a launch.json of attach configurations", "step": "attach: step over the paused line", "hold": "attach: stay attached before the action",
}

// Every flag of every verb has a name from flagMeanings and keeps one
// type across verbs; no flag is a hidden alias; --timeout bounds the whole
// run and --http-timeout one attempt wherever they appear; -o is --output,
// text by default where a verb prints a report.
func TestFlagNames(t *testing.T) {
	root := NewRootCommand(io.Discard, io.Discard)
	types := map[string]string{}
	base.WalkCommands(root, func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		visit := func(f *pflag.Flag) {
			where := c.CommandPath() + " --" + f.Name
			if _, ok := flagMeanings[f.Name]; !ok {
				t.Errorf("%s: not in flagMeanings (reuse a name of the same meaning, or add a row)", where)
			}
			if f.Hidden {
				t.Errorf("%s: a hidden flag (no aliases: one name per flag)", where)
			}
			if prev, ok := types[f.Name]; ok && prev != f.Value.Type() && f.Name != "platform" {
				t.Errorf("%s: type %s, elsewhere %s", where, f.Value.Type(), prev)
			}
			types[f.Name] = f.Value.Type()
			switch f.Name {
			case "timeout":
				if !strings.Contains(f.Usage, "whole") {
					t.Errorf("%s: %q does not bound the whole run", where, f.Usage)
				}
			case "http-timeout":
				if !strings.Contains(f.Usage, "one HTTP attempt") && !strings.Contains(f.Usage, "each registry lookup") {
					t.Errorf("%s: %q is not one attempt's limit", where, f.Usage)
				}
			case "output":
				want := "text"
				if c.Name() == "inject" {
					want = "yaml"
				}
				if f.Shorthand != "o" || f.DefValue != want {
					t.Errorf("%s: -%s default %q, want -o default %q", where, f.Shorthand, f.DefValue, want)
				}
			}
			if f.Shorthand != "" && !slices.Contains([]string{"o", "v", "h", "f", "i", "a", "n"}, f.Shorthand) {
				t.Errorf("%s: shorthand -%s is not one of the CLI's", where, f.Shorthand)
			}
		}
		c.LocalFlags().VisitAll(visit)
	})
	for _, old := range []string{"repo", "insecure-registry", "password-file", "registry-override", "max-time", "sbom-from-labels", "create-secret"} {
		if _, ok := types[old]; ok {
			t.Errorf("--%s is back", old)
		}
	}
	if unused := slices.DeleteFunc(slices.Sorted(maps.Keys(flagMeanings)), func(n string) bool { _, ok := types[n]; return ok || n == "help" || n == "version" }); len(unused) > 0 {
		t.Errorf("flagMeanings lists flags no verb has: %v", unused)
	}
}
