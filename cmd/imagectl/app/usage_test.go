package app

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
)

// verbs walks the command tree and returns the path (without "imagectl")
// of every command, the root's included as nil.
func verbs(t *testing.T) map[string]*cobra.Command {
	t.Helper()
	out := map[string]*cobra.Command{}
	root := NewRootCommand(io.Discard, io.Discard)
	base.WalkCommands(root, func(c *cobra.Command) {
		out[strings.TrimSpace(strings.TrimPrefix(c.CommandPath(), root.Name()))] = c
	})
	if len(out) < 20 {
		t.Fatalf("walked %d commands, want every verb (at least 20)", len(out))
	}
	return out
}

func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// expectExit runs imagectl and wants exit code want, nothing on stdout
// when it fails, and the error printed once, on one line.
func expectExit(t *testing.T, want int, wantErr string, args ...string) {
	t.Helper()
	code, out, errOut := runArgs(t, args...)
	if code != want {
		t.Errorf("imagectl %s: exit %d, want %d\nstderr: %s", strings.Join(args, " "), code, want, errOut)
		return
	}
	if want == 0 {
		return
	}
	if out != "" {
		t.Errorf("imagectl %s: wrote to stdout on a failure: %q", strings.Join(args, " "), out)
	}
	if n := strings.Count(errOut, "imagectl: "); n != 1 {
		t.Errorf("imagectl %s: stderr has %d lines starting with imagectl:, want the error once:\n%s", strings.Join(args, " "), n, errOut)
	}
	if !strings.Contains(errOut, wantErr) {
		t.Errorf("imagectl %s: stderr %q lacks %q", strings.Join(args, " "), errOut, wantErr)
	}
}

func split(path string) []string {
	if path == "" {
		return nil
	}
	return strings.Fields(path)
}

// Every verb, found by walking the command tree, exits 2 with one error
// line on an unknown flag, a bad flag value, a wrong number of arguments,
// a missing required flag and a bad -o.
func TestEveryVerbExitsTwoOnUsageErrors(t *testing.T) {
	t.Setenv("IMAGECTL_MATRIX", "")
	for path, c := range verbs(t) {
		args := split(path)
		t.Run("unknown flag/"+path, func(t *testing.T) {
			expectExit(t, options.ExitUsage, "unknown flag: --no-such-flag", append(args, "--no-such-flag")...)
		})
		if c.Name() != "help" {
			// help takes any topic; every other command takes at most one
			// argument.
			t.Run("wrong args/"+path, func(t *testing.T) {
				expectExit(t, options.ExitUsage, "", append(args, "arg1", "arg2", "arg3")...)
			})
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			switch f.Value.Type() {
			case "bool", "int", "int64", "float64", "duration", "stringToString":
				t.Run("bad value/"+path+"/--"+f.Name, func(t *testing.T) {
					expectExit(t, options.ExitUsage, `invalid argument "not-a-value" for "`, append(args, "--"+f.Name+"=not-a-value")...)
				})
			}
			if f.Annotations[options.AnnotationRequired] != nil {
				t.Run("missing required/"+path+"/--"+f.Name, func(t *testing.T) {
					expectExit(t, options.ExitUsage, `required flag(s) "`, args...)
				})
			}
		})
		if o := c.Flags().Lookup("output"); o != nil {
			t.Run("bad output/"+path, func(t *testing.T) {
				// Otherwise correct: the required flags and an argument
				// where one is needed.
				args := append([]string{}, args...)
				if c.Args != nil && c.Args(c, nil) != nil {
					args = append(args, "127.0.0.1:1/x:t")
				}
				c.Flags().VisitAll(func(f *pflag.Flag) {
					if f.Annotations[options.AnnotationRequired] != nil {
						args = append(args, "--"+f.Name+"=x")
					}
				})
				want := `--output "no-such-format": want `
				if c.Name() == "inject" { // its formats are yaml and diff, and -f comes first
					args = append(args, "-f", "-")
					want = `--output "no-such-format": want yaml or diff`
				}
				expectExit(t, options.ExitUsage, want, append(args, "-o", "no-such-format")...)
			})
		}
	}
}

// Combinations that cannot work exit 2 before anything is read, built or
// signed.
func TestInvalidCombinationsExitTwo(t *testing.T) {
	t.Setenv("BUILDKIT_HOST", "")
	missing := filepath.Join(t.TempDir(), "missing")
	img := "127.0.0.1:1/x:t"
	for _, tc := range []struct {
		want string
		args []string
	}{
		{"pass exactly one of --key cosign.key and --keyless", []string{"sign", img, "--keyless", "--key", missing}},
		{"pass exactly one of --key cosign.key and --keyless", []string{"sign", img}},
		{"--timeout 0s: want a positive duration", []string{"verify", img, "--key", missing, "--timeout", "0"}},
		{"--timeout -1s: want a positive duration", []string{"plan", "--matrix", missing, "--timeout", "-1s"}},
		{"pass at most one of --sbom and --sbom-from-lock", []string{"sign", img, "--key", missing, "--sbom", missing, "--sbom-from-lock"}},
		{`--annotation "novalue": expected key=value`, []string{"sign", img, "--key", missing, "-a", "novalue"}},
		{"pass --key cosign.pub, or --certificate-identity", []string{"verify", img}},
		{"not both", []string{"verify", img, "--key", missing, "--certificate-identity", "x", "--certificate-oidc-issuer", "y"}},
		{"keyless verification needs an identity", []string{"verify", img, "--certificate-identity", "x"}},
		{"looks like a regular expression: it is matched exactly; use --certificate-oidc-issuer-regexp", []string{"release", "--matrix", missing, "--keyless",
			"--certificate-identity-regexp", "^https://github.com/", "--certificate-oidc-issuer", `^https://token\.actions\.githubusercontent\.com$`}},
		{`--allow-repository "a/b:latest"`, []string{"verify", img, "--key", missing, "--allow-repository", "a/b:latest"}},
		{"--keyless and --key are exclusive", []string{"release", "--matrix", missing, "--keyless", "--key", missing}},
		{"--keyless needs an identity", []string{"release", "--matrix", missing, "--keyless"}},
		{"release always requires pinned extension files", []string{"release", "--matrix", missing, "--require-pins=false"}},
		{`--smoke-runtime "podman": want auto, runc or docker`, []string{"release", "--matrix", missing, "--smoke-runtime", "podman"}},
		{`--progress "fancy"`, []string{"release", "--matrix", missing, "--progress", "fancy"}},
		{`--sbom-format "spdx-tag"`, []string{"build", "--matrix", missing, "--ray", "2.46.0", "--sbom-format", "spdx-tag"}},
		{"--verify-key is the public key of the --sign --key: add --sign", []string{"build", "--matrix", missing, "--ray", "2.46.0", "--verify-key", missing}},
		{"--sign needs --key", []string{"build", "--matrix", missing, "--ray", "2.46.0", "--sign"}},
		{"starts its own buildkitd", []string{"build", "--matrix", missing, "--ray", "2.46.0", "--driver", "docker-container", "--buildkit-addr", "tcp://x:1"}},
		{`--driver "kubernetes"`, []string{"release", "--matrix", missing, "--driver", "kubernetes"}},
		{`--builder "arm64"`, []string{"build", "--matrix", missing, "--ray", "2.46.0", "--builder", "arm64"}},
		{`--python-standalone-sha256 "sha"`, []string{"plan", "--matrix", missing, "--python-standalone-sha256", "sha"}},
		{`--versions "tarballs"`, []string{"matrix", "refresh", "--matrix", missing, "--versions", "tarballs"}},
		{"--ray is required", []string{"matrix", "resolve", "--matrix", missing}},
		{"--package-index https://x.example/simple: the URL carries credentials", []string{"build", "--matrix", missing, "--ray", "2.46.0", "--package-index", "https://u:p@x.example/simple"}},
		{"--package-index https://x.example/simple: the URL carries credentials", []string{"plan", "--matrix", missing, "--package-index", "https://tok@x.example/simple"}},
		{`action "pause"`, []string{"smoke", "attach", "--action", "pause"}},
		{"pass an image reference or --archive FILE", []string{"smoke", "image"}},
		{"-i (in place) needs a file", []string{"inject", "-f", "-", "-i"}},
		// A verb without subcommands says it takes no arguments, not
		// that an argument is an unknown command.
		{`imagectl inject takes no arguments, got "extra" (the manifest goes after -f, one per run)`, []string{"inject", "-f", "x.yaml", "extra"}},
		{`imagectl release takes no arguments, got "a b"`, []string{"release", "a", "b"}},
		// One name with no dot, port or localhost is neither a registry
		// nor REGISTRY/NAME: go-containerregistry would read it as a Docker
		// Hub namespace.
		{`--repository "myreg": one name with no dot, no port and not localhost is no registry`, []string{"plan", "--matrix", missing, "--repository", "myreg"}},
		{"for Docker Hub, docker.io/myreg/NAME", []string{"build", "--matrix", missing, "--ray", "2.46.0", "--repository", "myreg"}},
		{`--repository "myreg"`, []string{"inject", "-f", "-", "--repository", "myreg"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) { expectExit(t, options.ExitUsage, tc.want, tc.args...) })
	}
}

// A verb that is used correctly but fails (here: a file it must read is
// missing) exits 1, printing the error once.
func TestFailuresExitOne(t *testing.T) {
	t.Setenv("BUILDKIT_HOST", "")
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--matrix", missing, "matrix", "resolve", "--ray", "2.46.0"},
		{"--matrix", missing, "matrix", "list"},
		{"--matrix", missing, "matrix", "refresh", "--no-python-lock"},
		{"--matrix", missing, "extensions", "fetch", "--ray", "2.46.0"},
		{"--matrix", missing, "extensions", "layout", "--ray", "2.46.0", "--platform", "linux/amd64", "--out", filepath.Join(dir, "out")},
		{"--matrix", missing, "extensions", "pin"},
		{"extensions", "ls", "--cache-dir", filepath.Join(notDir, "cache")},
		{"--matrix", missing, "build", "--ray", "2.46.0"},
		{"--matrix", missing, "plan"},
		{"--matrix", missing, "release", "--dry-run"},
		{"sign", "127.0.0.1:1/x:t", "--key", missing},
		// The keyless flags of .github/workflows/release.yml pass the checks.
		{"--matrix", missing, "release", "--keyless", "--certificate-identity-regexp", "^https://github\\.com/x/", "--certificate-oidc-issuer-regexp", "^https://token\\.actions\\.githubusercontent\\.com$"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			want := "missing.yaml"
			if args[0] == "extensions" {
				want = notDir
			}
			expectExit(t, options.ExitFailure, want, args...)
		})
	}
}

// The exit-code table of docs/cli.md, enforced: every verb that takes a
// platform, a SOURCE_DATE_EPOCH, a KubeRay version or an image or
// repository name exits 2 on a malformed one, before it reads anything; a
// file that does not exist exits 1 whichever verb and flag name it.
func TestExitCodeTable(t *testing.T) {
	t.Setenv("BUILDKIT_HOST", "")
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"| 0 |", "| 1 |", "| 2 |", "| 3-7 |", "| 130 |"} {
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/cli.md has no exit-code row %q", row)
		}
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	img := "127.0.0.1:1/x:t"
	// Every verb with one of these flags gets the bad value (the walk finds
	// new verbs by themselves).
	bad := map[string]string{
		"platform":          "linux/s390x",
		"source-date-epoch": "yesterday",
		"kuberay-version":   "9",
		"repository":        "Not A/Repository",
		"image":             "bad image::ref",
	}
	walked := map[string]bool{}
	for path, c := range verbs(t) {
		args := split(path)
		if c.Args != nil && c.Args(c, nil) != nil {
			args = append(args, img)
		}
		for flag, v := range bad {
			if c.Flags().Lookup(flag) == nil {
				continue
			}
			walked[flag] = true
			a := append(append([]string{}, args...), "--"+flag, v)
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if f.Annotations[options.AnnotationRequired] != nil && f.Name != flag {
					a = append(a, "--"+f.Name+"=x")
				}
			})
			if c.Name() == "inject" {
				a = append(a, "-f", "-")
			}
			t.Run(path+"/--"+flag, func(t *testing.T) { expectExit(t, options.ExitUsage, v, a...) })
		}
	}
	for flag := range bad {
		if !walked[flag] {
			t.Errorf("no verb has --%s", flag)
		}
	}
	for _, args := range [][]string{
		{"verify", "BAD::NAME", "--key", missing},
		{"sign", "BAD::NAME", "--key", missing},
		{"smoke", "image", "BAD::NAME"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) { expectExit(t, options.ExitUsage, `image "BAD::NAME"`, args...) })
	}
	for _, args := range [][]string{
		{"verify", img, "--key", missing},
		{"sign", img, "--key", missing},
		{"sign", img, "--key", missing, "--sbom", missing},
		{"sign", "--generate-key", filepath.Join(dir, "k"), "--key-password-file", missing},
		{"inject", "-f", missing},
		{"smoke", "image", "--archive", missing},
		{"smoke", "attach", "--settings", dir},
		{"--matrix", missing, "matrix", "list"},
		{"--matrix", filepath.Join("..", "..", "..", "matrix.yaml"), "--catalog", missing, "matrix", "list"},
		{"build", "--ray", "2.46.0", "--matrix", missing},
	} {
		t.Run("missing file/"+strings.Join(args, " "), func(t *testing.T) {
			want := missing
			if args[0] == "smoke" && args[1] == "attach" {
				want = dir
			}
			expectExit(t, options.ExitFailure, want, args...)
		})
	}
}

// A flag spelling docs/cli.md lists as renamed or removed is refused
// (exit 2) with its new name and the link to the table, on the verbs that
// had it.
func TestRenamedFlagsPointAtTheNewName(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	const link = "https://github.com/imagectl/imagectl/blob/main/docs/cli.md#renamed-and-removed-flags"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "--repo", "x"}, "--repo is now --repository"},
		{[]string{"plan", "--registry-override", "x"}, "--registry-override is now --repository"},
		{[]string{"release", "--registry-override=x"}, "--registry-override is now --repository"},
		{[]string{"verify", "127.0.0.1:1/x:t", "--insecure-registry"}, "--insecure-registry is now --insecure"},
		{[]string{"sign", "127.0.0.1:1/x:t", "--password-file", "x"}, "--password-file is now --key-password-file"},
		{[]string{"sign", "127.0.0.1:1/x:t", "--sbom-from-labels"}, "--sbom-from-labels is now --sbom-from-lock"},
		{[]string{"extensions", "fetch", "--max-time", "1m"}, "--max-time is now --timeout"},
		{[]string{"inject", "-f", "-", "--create-secret"}, "--create-secret is removed: --secret-file FILE writes the Secret"},
		{[]string{"smoke", "--image", "x"}, "imagectl smoke --image is now imagectl smoke kind --image"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			expectExit(t, options.ExitUsage, tc.want+" ("+link+")", tc.args...)
			old := strings.TrimPrefix(strings.SplitN(tc.want, " ", 2)[0], "imagectl")
			if !strings.Contains(string(doc), "`"+strings.TrimSpace(old)) && !strings.Contains(string(doc), " "+strings.TrimSpace(old)+"`") {
				t.Errorf("docs/cli.md's table does not list %s", old)
			}
		})
	}
	// -o table (matrix list) is now -o text.
	expectExit(t, options.ExitUsage, `--output "table": want text or json (table is now text)`, "matrix", "list", "-o", "table")
	// An old environment variable is no flag: a warning says it is not
	// read and what replaced it.
	t.Setenv("IMAGECTL_REGISTRY_OVERRIDE", "localhost:5000")
	if _, _, errOut := runArgs(t, "version"); !strings.Contains(errOut, "imagectl: warning: IMAGECTL_REGISTRY_OVERRIDE is set, and no longer read: it is now IMAGECTL_REPOSITORY ("+link+")") {
		t.Errorf("IMAGECTL_REGISTRY_OVERRIDE set: stderr %q", errOut)
	}
	if !strings.Contains(string(doc), "`IMAGECTL_REGISTRY_OVERRIDE`") || !strings.Contains(string(doc), "`IMAGECTL_PACKAGE_INDEX_URL`") {
		t.Errorf("docs/cli.md's table does not list the old environment variables")
	}
}
