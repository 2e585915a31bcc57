package app

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
)

// A registry (or gallery) that accepts connections and never answers ends
// every verb that waits (verify, sign, plan, release, inject, matrix
// refresh, extensions fetch and pin, smoke attach) within its time limit, with a
// notice of what they wait for and one final line naming the host.
func TestRegistryThatNeverAnswersEndsWithinTimeout(t *testing.T) {
	host, _ := stall(t)
	dir := t.TempDir()
	key, pub, pwFile := keyFiles(t, dir)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	root := filepath.Join("..", "..", "..")
	files := []string{"--matrix", filepath.Join(root, "matrix.yaml"), "--catalog", filepath.Join(root, "catalog.json")}
	job := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(job, []byte("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: c\nspec:\n  rayVersion: \"2.46.0\"\n  headGroupSpec:\n    rayStartParams: {}\n    template:\n      spec:\n        containers:\n        - name: ray-head\n          image: rayproject/ray:2.46.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// extensions pin and matrix refresh rewrite the catalog: a copy.
	cat, err := os.ReadFile(filepath.Join(root, "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	catCopy := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(catCopy, cat, 0o644); err != nil {
		t.Fatal(err)
	}
	copyFiles := []string{"--matrix", filepath.Join(root, "matrix.yaml"), "--catalog", catCopy}
	for _, tc := range []struct {
		name   string
		args   []string
		limit  time.Duration
		flag   string // default --timeout
		what   string // default registry
		notice string // default: waiting for HOST to answer
	}{
		// Round four's silent waits (issue 35 item 10): every one says
		// what it waits for, and every verb ends at --timeout.
		{"inject", []string{"inject", "-f", job, "--repository", host + "/team/img"}, 8 * time.Second, "", "", ""},
		{"inject --resolve-digest", []string{"inject", "-f", job, "--image", host + "/team/img:v1", "--resolve-digest"}, 8 * time.Second, "", "", ""},
		{"release", append(files, "release", "--dry-run", "--repository", host+"/team/img"), 8 * time.Second, "", "host", ""},
		{"matrix refresh", append(copyFiles, "matrix", "refresh", "--no-python-lock", "--versions", "github-releases", "--github-url", "http://"+host,
			"--pypi-url", "http://"+host, "--base-image", host+"/base", "--marketplace-url", "http://"+host, "--openvsx-url", "http://"+host, "--retries", "0"), 8 * time.Second, "", "host", ""},
		{"extensions pin", append(copyFiles, "extensions", "pin", "--ray", "2.46.0", "--cache-dir", filepath.Join(dir, "pincache"),
			"--marketplace-url", "http://"+host, "--openvsx-url", "http://"+host), 8 * time.Second, "", "host", ""},
		{"smoke attach", []string{"smoke", "attach", "--dashboard", "http://" + host, "--settings", filepath.Join(dir, "no-settings.json")}, 8 * time.Second, "", "host",
			"imagectl: waiting for a paused worker on the Ray dashboard http://" + host},
		{"verify", []string{"verify", host + "/team/img:v1", "--key", pub}, 8 * time.Second, "", "", ""},
		// Decrypting the key (scrypt), and plan's resolving and rendering,
		// take seconds on a loaded machine before the registry is asked
		// anything; the notice comes 3 s after that.
		{"sign", []string{"sign", host + "/team/img:v1", "--key", key, "--key-password-file", pwFile}, 15 * time.Second, "", "", ""},
		{"plan", []string{"--matrix", filepath.Join(root, "matrix.yaml"), "--catalog", filepath.Join(root, "catalog.json"), "plan", "--repository", host}, 8 * time.Second, "", "", ""},
		{"extensions fetch", []string{"--matrix", filepath.Join(root, "matrix.yaml"), "--catalog", filepath.Join(root, "catalog.json"),
			"extensions", "fetch", "--ray", "2.46.0", "--cache-dir", filepath.Join(dir, "cache"),
			"--marketplace-url", "http://" + host, "--openvsx-url", "http://" + host}, 8 * time.Second, "", "host", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			start := time.Now()
			limit := tc.limit
			flag := cmp.Or(tc.flag, "--timeout")
			code := Run(ctx, append(tc.args, flag, limit.String()), &out, &errb)
			took := time.Since(start)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Fatalf("still waiting after a minute; stderr:\n%s", errb.String())
			}
			if code != options.ExitFailure {
				t.Errorf("exit %d, want %d", code, options.ExitFailure)
			}
			if took > limit+3*time.Second {
				t.Errorf("took %s with --timeout %s", took, limit)
			}
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			want := "imagectl: " + cmp.Or(tc.what, "registry") + " " + host + " did not answer within " + flag + " " + limit.String()
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, want) {
				t.Errorf("last line of stderr %q, want it to start with %q; stderr:\n%s", last, want, errb.String())
			}
			if notice := cmp.Or(tc.notice, "imagectl: waiting for "+host+" to answer"); !strings.Contains(errb.String(), notice) {
				t.Errorf("stderr does not say what it waits for (%q):\n%s", notice, errb.String())
			}
		})
	}
}

// Every verb that waits on the network or a process has --timeout, the
// bound of its whole run. The exceptions read local files only, or (debug)
// run a session until the job ends or Ctrl-C by design.
func TestEveryVerbThatWaitsHasTimeout(t *testing.T) {
	local := map[string]string{
		"version": "prints", "matrix resolve": "reads two files", "matrix list": "reads two files",
		"extensions layout": "reads the cache", "extensions ls": "reads the cache",
		"debug": "a session that lasts until the job ends or Ctrl-C (--ready-timeout bounds the wait for the head Pod)",
	}
	for path, c := range verbs(t) {
		if c.HasSubCommands() || c.Hidden || path == "" || path == "help" || strings.HasPrefix(path, "completion") {
			continue
		}
		f := c.Flags().Lookup("timeout")
		if _, ok := local[path]; ok {
			if f != nil {
				t.Errorf("%s has --timeout but is listed as waiting for nothing", path)
			}
			continue
		}
		if f == nil || !strings.Contains(f.Usage, "whole") {
			t.Errorf("%s: no --timeout bounding the whole run", path)
		}
	}
}
