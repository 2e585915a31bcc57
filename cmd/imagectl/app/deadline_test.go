package app

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
)

// A registry (or gallery) that accepts connections and never answers ends
// verify, sign, plan and extensions fetch within their time limit, with a
// notice of what they wait for and one final line naming the host.
func TestRegistryThatNeverAnswersEndsWithinTimeout(t *testing.T) {
	host, _ := stall(t)
	dir := t.TempDir()
	key, pub, pwFile := keyFiles(t, dir)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	root := filepath.Join("..", "..", "..")
	for _, tc := range []struct {
		name  string
		args  []string
		limit time.Duration
		flag  string // default --timeout
		what  string // default registry
	}{
		{"verify", []string{"verify", host + "/team/img:v1", "--key", pub}, 8 * time.Second, "", ""},
		// Decrypting the key (scrypt), and plan's resolving and rendering,
		// take seconds on a loaded machine before the registry is asked
		// anything; the notice comes 3 s after that.
		{"sign", []string{"sign", host + "/team/img:v1", "--key", key, "--key-password-file", pwFile}, 15 * time.Second, "", ""},
		{"plan", []string{"--matrix", filepath.Join(root, "matrix.yaml"), "--catalog", filepath.Join(root, "catalog.json"), "plan", "--repository", host}, 8 * time.Second, "", ""},
		{"extensions fetch", []string{"--matrix", filepath.Join(root, "matrix.yaml"), "--catalog", filepath.Join(root, "catalog.json"),
			"extensions", "fetch", "--ray", "2.46.0", "--cache-dir", filepath.Join(dir, "cache"),
			"--marketplace-url", "http://" + host, "--openvsx-url", "http://" + host}, 8 * time.Second, "", "host"},
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
			if !strings.Contains(errb.String(), "imagectl: waiting for "+host+" to answer") {
				t.Errorf("stderr does not say what it waits for:\n%s", errb.String())
			}
		})
	}
}
