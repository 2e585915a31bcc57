package image

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
)

// A container that floods stdout and stderr costs imagectl a bounded
// amount of memory. Each case runs in a child test process under
// `ulimit -v` of 3 GiB against a stand-in runc (a shell script) whose
// processes write gigabytes: keeping all of it would not fit.

// floodLimitKiB is the child's address space limit (ulimit -v, KiB).
const floodLimitKiB = 3 << 20

// floodChildEnv selects the case a child test process runs.
const floodChildEnv = "IMAGECTL_SMOKE_FLOOD_CHILD"

// fakeRunc stands in for runc: "create" starts a detached flood of the
// entrypoint's output ($ENTRYPOINT_BYTES; runc create's children keep its
// stdio), "exec" floods stdout and stderr ($EXEC_BYTES each) and ends with
// a result line, "delete" kills what is left of the detached flood.
const fakeRunc = `#!/bin/sh
state=$(dirname "$0")
for a; do
	case $a in
	create)
		(head -c "${ENTRYPOINT_BYTES:-0}" /dev/zero; echo; echo entrypoint-end; touch "$state/entrypoint.done") &
		echo $! >"$state/entrypoint.pid"
		exit 0 ;;
	exec)
		head -c "${EXEC_BYTES:-0}" /dev/zero >&2 &
		head -c "${EXEC_BYTES:-0}" /dev/zero
		wait
		echo
		echo 'IMAGECTL-SMOKE-RESULT "done"'
		exit 3 ;;
	delete)
		[ -f "$state/entrypoint.pid" ] && kill "$(cat "$state/entrypoint.pid")" 2>/dev/null
		exit 0 ;;
	esac
done
echo "fake runc: unexpected arguments: $*" >&2
exit 1
`

func TestFloodBounded(t *testing.T) {
	if os.Getenv(floodChildEnv) != "" {
		floodChild(t, os.Getenv(floodChildEnv))
		return
	}
	if testing.Short() {
		t.Skip("pipes gigabytes through stand-in container processes: skipped under -short")
	}
	for _, tc := range []struct {
		name string
		env  string // the flood's size, as head -c takes it
	}{
		// stdout and stderr of one runc exec: 2 GiB each.
		{"exec", "EXEC_BYTES=2G"},
		// a spawned process's stdout lines and stderr: 2 GiB each.
		{"spawn", "EXEC_BYTES=2G"},
		// the entrypoint's output, detached: more than the limit.
		{"entrypoint", "ENTRYPOINT_BYTES=3300M"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `ulimit -v "$1" && exec "$0" -test.run '^TestFloodBounded$' -test.v -test.count=1`,
				os.Args[0], fmt.Sprint(floodLimitKiB))
			cmd.Env = append(os.Environ(), floodChildEnv+"="+tc.name, tc.env, "GOTRACEBACK=single")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the child (ulimit -v %d) failed: %v\n%s", floodLimitKiB, err, tail(string(out), 30))
			}
			t.Logf("child:\n%s", tail(string(out), 10))
		})
	}
}

// floodChild runs one case with the stand-in runc.
func floodChild(t *testing.T, which string) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "runc")
	if err := os.WriteFile(bin, []byte(fakeRunc), 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	cf, err := empty.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf.Config.Cmd = []string{"/bin/sh"}
	p := &Platform{Platform: "linux/amd64", Image: empty.Image, Config: cf}
	ctx := context.Background()
	c, err := NewRunc(WithRuncBinary(bin), WithRuncWorkDir(work)).Create(ctx, p, Spec{ID: randomID("amd64")})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	defer func() {
		if err := c.Remove(ctx); err != nil {
			t.Errorf("Remove: %v", err)
		}
		if left, _ := os.ReadDir(work); len(left) > 0 {
			t.Errorf("left in the work directory: %v", left)
		}
	}()
	const kept = 16 << 20 // far more than what is kept, far less than a flood
	switch which {
	case "exec":
		res, err := c.Exec(ctx, Process{Args: []string{"python3"}})
		if err != nil {
			t.Fatalf("Exec: %v", err)
		}
		if res.ExitCode != 3 {
			t.Errorf("exit code %d, want 3", res.ExitCode)
		}
		for name, b := range map[string][]byte{"stdout": res.Stdout, "stderr": res.Stderr} {
			if len(b) > kept {
				t.Errorf("%s: %d bytes kept", name, len(b))
			}
		}
		if got, err := parseResult[string](res.Stdout); err != nil || *got != "done" {
			t.Errorf("the result line after the flood: %v, %v", got, err)
		}
		if msg := tail(string(res.Stderr)+string(res.Stdout), 4); !strings.Contains(msg, "bytes of output not kept") {
			t.Errorf("the quoted output does not say it was truncated: %q", msg)
		}
	case "spawn":
		proc, err := c.Spawn(ctx, Process{Args: []string{"python3"}})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		var last string
		for l := range proc.Lines() {
			last = l
		}
		res, err := proc.Wait()
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if last != `IMAGECTL-SMOKE-RESULT "done"` {
			t.Errorf("last line %.100q", last)
		}
		if len(res.Stdout) > kept || len(res.Stderr) > kept {
			t.Errorf("%d bytes of stdout, %d of stderr kept", len(res.Stdout), len(res.Stderr))
		}
	case "entrypoint":
		deadline := time.Now().Add(4 * time.Minute)
		for {
			if _, err := os.Stat(filepath.Join(dir, "entrypoint.done")); err == nil {
				if logs := c.Logs(ctx); strings.HasSuffix(logs, "entrypoint-end\n") {
					if len(logs) > kept {
						t.Errorf("%d bytes of the entrypoint's output kept", len(logs))
					}
					if !strings.Contains(tail(logs, 2), "bytes of output not kept") {
						t.Errorf("the quoted output does not say it was truncated: %q", tail(logs, 2))
					}
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the entrypoint's flood did not end: %.200q", tail(c.Logs(ctx), 2))
			}
			time.Sleep(100 * time.Millisecond)
		}
	default:
		t.Fatalf("unknown case %q", which)
	}
}
