package app

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/build"
)

func TestBuildKitFlags(t *testing.T) {
	cmd := &cobra.Command{}
	cmd.SetContext(context.Background())
	tests := []struct {
		name    string
		f       buildFlags
		env     string
		want    map[string]string // platform -> address
		wantErr string
	}{
		{name: "default", f: buildFlags{driver: "remote"}, want: map[string]string{"linux/amd64": build.DefaultAddress}},
		{name: "env", f: buildFlags{driver: "remote"}, env: "tcp://bk:1234", want: map[string]string{"linux/arm64": "tcp://bk:1234"}},
		{name: "flag beats env", f: buildFlags{driver: "remote", addr: "unix:///x.sock"}, env: "tcp://bk:1234", want: map[string]string{"linux/amd64": "unix:///x.sock"}},
		{name: "per-platform builder", f: buildFlags{driver: "remote", addr: "unix:///x.sock", builders: []string{"linux/arm64=tcp://arm:1234"}},
			want: map[string]string{"linux/amd64": "unix:///x.sock", "linux/arm64": "tcp://arm:1234"}},
		{name: "builder without address", f: buildFlags{driver: "remote", builders: []string{"linux/arm64="}}, wantErr: "want PLATFORM=ADDRESS"},
		{name: "builder without platform", f: buildFlags{driver: "remote", builders: []string{"tcp://arm:1234"}}, wantErr: "want PLATFORM=ADDRESS"},
		{name: "builder bad platform", f: buildFlags{driver: "remote", builders: []string{"arm64=tcp://arm:1234"}}, wantErr: "linux/arm64"},
		{name: "unknown driver", f: buildFlags{driver: "kubernetes"}, wantErr: "want remote or docker-container"},
		{name: "docker-container with an address", f: buildFlags{driver: "docker-container", addr: "tcp://x:1"}, wantErr: "starts its own buildkitd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BUILDKIT_HOST", tc.env)
			bk, err := tc.f.buildKit(cmd)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
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
	got, err := buildSourceDateEpoch("")
	if err != nil || !got.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("from env: %v, %v", got, err)
	}
	got, err = buildSourceDateEpoch("1752537600")
	if err != nil || !got.Equal(time.Unix(1752537600, 0)) {
		t.Errorf("flag over env: %v, %v", got, err)
	}
	for _, bad := range []string{"yesterday", "-5", "1.5"} {
		if _, err := buildSourceDateEpoch(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestBuildCommandRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "--ray", "2.46.0", "--output", "yaml"}, `--output "yaml": want text or json`},
		{[]string{"build"}, `required flag(s) "ray" not set`},
	} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), tc.args, &out, &errb); code == 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want failure mentioning %q", tc.args, code, errb.String(), tc.want)
		}
	}
}
