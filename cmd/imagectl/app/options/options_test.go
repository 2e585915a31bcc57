package options

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/build"
)

// parseOptions registers opts on a command and parses args as imagectl
// does: flags, then the environment fallbacks, then Validate.
func parseOptions(t *testing.T, args []string, opts ...Options) error {
	t.Helper()
	cmd := &cobra.Command{Use: "test", RunE: func(*cobra.Command, []string) error { return nil }}
	Add(cmd, opts...)
	if err := cmd.ParseFlags(args); err != nil {
		return err
	}
	if err := PrepareFlags(cmd); err != nil {
		return err
	}
	return cmd.PreRunE(cmd, nil)
}

func TestBuildKitOptions(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     string
		want    map[string]string // platform -> address
		wantErr string
	}{
		{name: "default", want: map[string]string{"linux/amd64": build.DefaultAddress}},
		{name: "env", env: "tcp://bk:1234", want: map[string]string{"linux/arm64": "tcp://bk:1234"}},
		{name: "flag beats env", args: []string{"--buildkit-addr", "unix:///x.sock"}, env: "tcp://bk:1234", want: map[string]string{"linux/amd64": "unix:///x.sock"}},
		{name: "per-platform builder", args: []string{"--buildkit-addr", "unix:///x.sock", "--builder", "linux/arm64=tcp://arm:1234"},
			want: map[string]string{"linux/amd64": "unix:///x.sock", "linux/arm64": "tcp://arm:1234"}},
		{name: "builder without address", args: []string{"--builder", "linux/arm64="}, wantErr: "want PLATFORM=ADDRESS"},
		{name: "builder without platform", args: []string{"--builder", "tcp://arm:1234"}, wantErr: "want PLATFORM=ADDRESS"},
		{name: "builder bad platform", args: []string{"--builder", "arm64=tcp://arm:1234"}, wantErr: "linux/arm64"},
		{name: "unknown driver", args: []string{"--driver", "kubernetes"}, wantErr: "want remote or docker-container"},
		{name: "docker-container with an address", args: []string{"--driver", "docker-container", "--buildkit-addr", "tcp://x:1"}, wantErr: "starts its own buildkitd"},
		{name: "docker-container with BUILDKIT_HOST", args: []string{"--driver", "docker-container"}, env: "tcp://x:1", wantErr: "starts its own buildkitd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BUILDKIT_HOST", tc.env)
			var o BuildKitOptions
			err := parseOptions(t, tc.args, &o)
			if tc.wantErr != "" {
				var ee *ExitError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ee) || ee.Code != ExitUsage {
					t.Fatalf("err = %v, want a usage error containing %q", err, tc.wantErr)
				}
				// Called directly, BuildKit refuses the same flags.
				if _, err := o.BuildKit(context.Background()); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("BuildKit: err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			bk, err := o.BuildKit(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for p, want := range tc.want {
				if got := bk.Address(p); got != want {
					t.Errorf("Address(%s) = %q, want %q", p, got, want)
				}
			}
		})
	}
}

func TestBuildSourceDateEpoch(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	got, err := SourceDateEpoch("")
	if err != nil || !got.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("from env: %v, %v", got, err)
	}
	got, err = SourceDateEpoch("1752537600")
	if err != nil || !got.Equal(time.Unix(1752537600, 0)) {
		t.Errorf("flag over env: %v, %v", got, err)
	}
	for _, bad := range []string{"yesterday", "-5", "1.5"} {
		if _, err := SourceDateEpoch(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// -v's log lines start "imagectl: " like every other line imagectl prints
// on stderr, and carry no timestamp.
func TestLoggerLinesArePrefixed(t *testing.T) {
	var errb bytes.Buffer
	g := NewGlobals(io.Discard, &errb)
	log := g.Logger(slog.LevelDebug)
	log.Info("fetching", "url", "https://user:pw@example.com/x")
	log.Debug("two\nlines")
	lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), errb.String())
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "imagectl: ") || strings.Contains(l, "time=") {
			t.Errorf("log line %q: want the imagectl: prefix and no time", l)
		}
	}
	if !strings.Contains(lines[0], "msg=fetching") || strings.Contains(lines[0], "pw@") {
		t.Errorf("log line %q: want the message, the URL redacted", lines[0])
	}
}
