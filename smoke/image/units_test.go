package image

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

func TestImageEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		home string
		want []string
	}{
		{"as the image sets it", []string{"PATH=/opt/bin:/usr/bin", "HOME=/config", "PYTHONPATH=/x"}, "/root", []string{"PATH=/opt/bin:/usr/bin", "HOME=/config", "PYTHONPATH=/x"}},
		{"docker defaults", []string{"A=1"}, "/config", []string{"A=1", "PATH=" + DefaultPath, "HOME=/config"}},
		{"root home", nil, "", []string{"PATH=" + DefaultPath, "HOME=/root"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cf := &v1.ConfigFile{Config: v1.Config{Env: tc.env}}
			if diff := cmp.Diff(tc.want, ImageEnv(cf, tc.home)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLookupUser(t *testing.T) {
	files := map[string]string{
		"/etc/passwd": "root:x:0:0:root:/root:/bin/bash\nabc:x:911:911::/config:/bin/false\n",
		"/etc/group":  "root:x:0:\nabc:x:911:\nusers:x:100:\n",
	}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
	for _, tc := range []struct {
		user     string
		uid, gid uint32
		err      string
	}{
		{"", 0, 0, ""}, {"root", 0, 0, ""}, {"abc", 911, 911, ""}, {"abc:users", 911, 100, ""},
		{"911", 911, 911, ""}, {"1000", 1000, 1000, ""}, {"1000:100", 1000, 100, ""},
		{"nobody", 0, 0, `user "nobody" is not in the image's /etc/passwd`},
	} {
		uid, gid, err := lookupUser(read, tc.user)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: error %v, want %q", tc.user, err, tc.err)
			}
			continue
		}
		if err != nil || uid != tc.uid || gid != tc.gid {
			t.Errorf("%q: %d:%d, %v; want %d:%d", tc.user, uid, gid, err, tc.uid, tc.gid)
		}
	}
	if h := homeOf([]byte(files["/etc/passwd"]), 911); h != "/config" {
		t.Errorf("homeOf 911 = %q", h)
	}
}

func TestExtensionLines(t *testing.T) {
	out := "[warn] something\nms-python.python@2025.10.0\nMS-Python.debugpy@2025.10.0\nanyscalecompute.ray-distributed-debugger@0.1.4\n\n"
	want := []string{"anyscalecompute.ray-distributed-debugger@0.1.4", "ms-python.debugpy@2025.10.0", "ms-python.python@2025.10.0"}
	if diff := cmp.Diff(want, extensionLines(out)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestStartFailures(t *testing.T) {
	runcMsg := []byte(`time="x" level=error msg="exec failed: unable to start container process: exec: \"python3\": executable file not found in $PATH"`)
	if err := startFailure(runcMsg); !errors.Is(err, ErrExecStart) || !strings.Contains(err.Error(), "executable file not found") {
		t.Errorf("runc: %v", err)
	}
	if err := startFailure([]byte(`msg="exec failed: cannot exec in a stopped container"`)); !errors.Is(err, ErrStopped) {
		t.Errorf("runc stopped: %v", err)
	}
	if err := startFailure([]byte("Traceback ...\nImportError: x")); err != nil {
		t.Errorf("a failing program is not a start failure: %v", err)
	}
	dockerMsg := []byte(`OCI runtime exec failed: exec failed: unable to start container process: exec: "python3": executable file not found in $PATH: unknown`)
	if err := dockerStartFailure(127, dockerMsg); !errors.Is(err, ErrExecStart) {
		t.Errorf("docker: %v", err)
	}
	if err := dockerStartFailure(1, []byte("ModuleNotFoundError")); err != nil {
		t.Errorf("docker, failing program: %v", err)
	}
}

// A fake docker CLI records its calls; the Docker runtime must publish on
// 127.0.0.1 only, mount the scripts read-only, run the platform asked for,
// pass the image's environment to exec, and remove what it loaded.
func TestDockerCommands(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	fake := filepath.Join(dir, "docker")
	script := `#!/bin/sh
echo "$*" >> ` + log + `
case $1 in
  load) cat >/dev/null ;;
  port) echo "127.0.0.1:49153" ;;
  exec) echo out ;;
esac
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{OS: "linux", Architecture: "arm64", Config: v1.Config{Env: []string{"PATH=/x"}, Entrypoint: []string{"/init"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPlatform(img, "linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	d := NewDocker(WithDockerBinary(fake), WithHolder("/bin/holder", "smoke", "hold"))
	ctx := context.Background()
	c, err := d.Create(ctx, p, Spec{ID: "imagectl-smoke-arm64-1", Mount: "/scripts", Ports: []int{8443, 5678}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Hold(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, Process{Args: []string{"python3", "-V"}, Env: []string{"PATH=/x"}, UID: 0, GID: 0})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "out" {
		t.Fatalf("exec: %+v %v", res, err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	tag := "imagectl-smoke.invalid/imagectl-smoke-arm64-1:arm64"
	// The securityContext inject writes for the sidecar.
	create := "create --name imagectl-smoke-arm64-1 --platform linux/arm64 --hostname imagectl-smoke " +
		"--security-opt no-new-privileges --cap-drop ALL --cap-add CHOWN --cap-add DAC_OVERRIDE --cap-add FOWNER --cap-add KILL --cap-add SETGID --cap-add SETUID --publish 127.0.0.1::8443 --publish 127.0.0.1::5678 --volume /scripts:/.imagectl-smoke:ro "
	want := []string{
		"load --quiet",
		create + tag,
		"rm --force imagectl-smoke-arm64-1",
		create + "--volume /bin/holder:/.imagectl-smoke-holder:ro --entrypoint /.imagectl-smoke-holder " + tag + " smoke hold",
		"start imagectl-smoke-arm64-1",
		"exec --user 0:0 --env PATH=/x imagectl-smoke-arm64-1 python3 -V",
		"rm --force imagectl-smoke-arm64-1",
		create + tag,
		"start imagectl-smoke-arm64-1",
		"rm --force --volumes imagectl-smoke-arm64-1",
		"image rm " + tag,
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(string(b)), "\n")); diff != "" {
		t.Errorf("docker calls (-want +got):\n%s", diff)
	}
}

func TestBoundedOutput(t *testing.T) {
	letters := "abcdefghijklmnopqrstuvwxyz"
	for _, tc := range []struct {
		name    string
		writes  []string
		want    string
		dropped int64
	}{
		{"fits", []string{"abc"}, "abc", 0},
		{"head and tail exactly", []string{"0123", "456789"}, "0123456789", 0},
		{"one write over", []string{"0123456789AB"}, "0123\n[imagectl: 2 bytes of output not kept]\n6789AB", 2},
		{"byte by byte", strings.Split(letters, ""), "abcd\n[imagectl: 16 bytes of output not kept]\nuvwxyz", 16},
		{"a write larger than the tail", []string{"ab", letters}, "abab\n[imagectl: 18 bytes of output not kept]\nuvwxyz", 18},
		{"small writes after a large one", []string{letters, "1", "2", "3"}, "abcd\n[imagectl: 19 bytes of output not kept]\nxyz123", 19},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &boundedOutput{headMax: 4, tailMax: 6}
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if diff := cmp.Diff(tc.want, string(b.Bytes())); diff != "" {
				t.Errorf("Bytes (-want +got):\n%s", diff)
			}
			if got := b.Dropped(); got != tc.dropped {
				t.Errorf("Dropped = %d, want %d", got, tc.dropped)
			}
			if len(b.tail) > 2*b.tailMax {
				t.Errorf("%d bytes of tail held, want at most %d", len(b.tail), 2*b.tailMax)
			}
		})
	}
}

func TestTail(t *testing.T) {
	long := strings.Repeat("y", 3*maxMessage)
	for _, tc := range []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"last lines", "a\nb\nc\n", 2, "b\nc"},
		{"the marker among the last lines", "a\n[imagectl: 5 bytes of output not kept]\nc\n", 2, "[imagectl: 5 bytes of output not kept]\nc"},
		{"the marker before the last lines", "a\n[imagectl: 5 bytes of output not kept]\nc\nd\ne\n", 2,
			"[imagectl: 5 bytes of output not kept] (output truncated; its last lines follow)\nd\ne"},
		{"two markers add up", "[imagectl: 5 bytes of output not kept]\nx\n[imagectl: 7 bytes of output not kept]\nc\nd\n", 1,
			"[imagectl: 12 bytes of output not kept] (output truncated; its last lines follow)\nd"},
		{"a long line is cut", "a\n" + long, 2, "..." + long[:maxMessage]},
		{"control characters are dropped", "a\x00\x00b\x1b[31mc\td\xff\n", 1, "ab[31mc\td"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tail(tc.s, tc.n)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
