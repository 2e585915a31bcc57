package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/imagectl/imagectl/cmd/imagectl/app"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
	"github.com/imagectl/imagectl/debug/dashboard/dashboardtest"
	"github.com/imagectl/imagectl/smoke/probe"
)

// both runs imagectl-probe attach with args, and imagectl smoke attach
// with the same args.
func both(t *testing.T, args ...string) (probeCode int, probeOut, probeErr string, cliCode int, cliOut, cliErr string) {
	t.Helper()
	var po, pe, co, ce bytes.Buffer
	probeCode = run(context.Background(), append([]string{"attach"}, args...), &po, &pe)
	cliCode = app.Run(context.Background(), append([]string{"smoke", "attach"}, args...), &co, &ce)
	return probeCode, po.String(), pe.String(), cliCode, co.String(), ce.String()
}

// The help of imagectl-probe attach is imagectl smoke attach's, word for
// word, but for the command line it names: the same flags, defaults,
// exit codes and report.
func TestAttachHelpIsSmokeAttachs(t *testing.T) {
	code, out, errOut, cliCode, cliOut, cliErr := both(t, "--help")
	if code != 0 || cliCode != 0 || errOut != "" || cliErr != "" {
		t.Fatalf("--help: probe exit %d (stderr %q), imagectl exit %d (stderr %q)", code, errOut, cliCode, cliErr)
	}
	if want := strings.ReplaceAll(cliOut, "imagectl smoke attach", "imagectl-probe attach"); out != want {
		t.Errorf("imagectl-probe attach --help:\n%s\nwant imagectl smoke attach's:\n%s", out, want)
	}
	if !strings.Contains(out, "imagectl-probe attach --dashboard") || strings.Contains(out, "imagectl smoke") {
		t.Errorf("imagectl-probe attach --help: the examples must name imagectl-probe attach:\n%s", out)
	}
}

// Every command line of the probe's help examples parses as written.
func TestHelpExamplesParse(t *testing.T) {
	n := 0
	base.WalkCommands(newRootCommand(nil, nil), func(c *cobra.Command) {
		for _, line := range strings.Split(c.Example, "\n") {
			words := strings.Fields(line)
			if len(words) == 0 || words[0] != "imagectl-probe" {
				continue
			}
			n++
			cmd, rest, err := newRootCommand(nil, nil).Find(words[1:])
			if err == nil {
				err = cmd.ParseFlags(rest)
			}
			if err == nil {
				err = cmd.ValidateArgs(cmd.Flags().Args())
			}
			if err != nil {
				t.Errorf("%s example %q: %v", c.CommandPath(), line, err)
			}
		}
	})
	if n < 4 {
		t.Errorf("found %d example command lines, want the root's and attach's", n)
	}
}

// Usage errors exit 2 with one error line and nothing on stdout, as
// imagectl smoke attach does, and the root without a verb prints its help.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"--action", "pause"}, `action "pause"`},
		{[]string{"-o", "yaml"}, `--output "yaml"`},
		{[]string{"--timeout", "0s"}, "--timeout 0s: want a positive duration"},
		{[]string{"extra"}, "attach takes no arguments"},
		{[]string{"--max-time", "1m"}, "--max-time is now --timeout"},
	} {
		code, out, errOut, cliCode, _, cliErr := both(t, tc.args...)
		if code != base.ExitUsage || out != "" || strings.Count(errOut, "imagectl: ") != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("imagectl-probe attach %v: exit %d, stdout %q, stderr %q; want 2, nothing, one line with %q", tc.args, code, out, errOut, tc.want)
		}
		if cliCode != code || strings.ReplaceAll(cliErr, "imagectl smoke attach", "imagectl-probe attach") != errOut {
			t.Errorf("attach %v: imagectl smoke attach exits %d with %q, imagectl-probe attach %d with %q", tc.args, cliCode, cliErr, code, errOut)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"attch"}, &out, &errOut); code != base.ExitUsage || !strings.Contains(errOut.String(), "did you mean attach?") {
		t.Errorf("imagectl-probe attch: exit %d, stderr %q; want 2 and the suggestion", code, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run(context.Background(), nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), "attach") || strings.Contains(out.String(), "\n  smoke ") {
		t.Errorf("imagectl-probe: exit %d, stdout %q; want 0 and the help naming attach (and not the hidden smoke)", code, out.String())
	}
}

// imagectl-probe smoke attach, imagectl's path, is attach: a script that
// runs "/tmp/imagectl smoke attach" runs the probe unchanged.
func TestSmokeAttachPath(t *testing.T) {
	d := dashboardtest.New()
	t.Cleanup(d.Close)
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"smoke", "attach", "--dashboard", d.URL, "--settings", t.TempDir() + "/none.json",
		"--poll-interval", "50ms", "--pause-timeout", "200ms", "--output", "json"}, &out, &errOut)
	var rep probe.Report
	if code != 3 || json.Unmarshal(out.Bytes(), &rep) != nil || rep.ErrorKind == "" {
		t.Errorf("imagectl-probe smoke attach with no paused worker: exit %d, stdout %q, stderr %q; want 3 and the report", code, out.String(), errOut.String())
	}
}

// imagectl-probe attach fails with imagectl smoke attach's exit code and
// -o json report: no paused worker (3), a paused worker whose port
// refuses the connection (4), a dashboard that answers HTML (6).
func TestAttachExitCodesAndReport(t *testing.T) {
	const wid = "01000000ffffffffffffffffffffffffffffffffffffffffffffffff"
	for _, tc := range []struct {
		name  string
		setup func(d *dashboardtest.Server, closed int)
		want  int
	}{
		{"no paused worker", func(*dashboardtest.Server, int) {}, 3},
		{"port refused", func(d *dashboardtest.Server, closed int) {
			d.SetWorkers(dashboardtest.Worker{WorkerID: wid, IsAlive: true, WorkerType: "WORKER", NodeID: "n1", IP: "127.0.0.1", PID: 4242,
				DebuggerPort: closed, NumPausedThreads: 1, StartTimeMS: 1700000000000})
		}, 4},
		{"dashboard answers HTML", func(d *dashboardtest.Server, _ int) { d.SetMode(dashboardtest.HTML) }, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := dashboardtest.New()
			t.Cleanup(d.Close)
			// A port nothing listens on, picked after the dashboard's.
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			closed := l.Addr().(*net.TCPAddr).Port
			l.Close()
			tc.setup(d, closed)
			code, out, errOut, cliCode, cliOut, _ := both(t, "--dashboard", d.URL, "--settings", t.TempDir()+"/none.json",
				"--poll-interval", "50ms", "--pause-timeout", "300ms", "--step-timeout", "2s", "-o", "json")
			if code != tc.want || cliCode != tc.want {
				t.Fatalf("exit %d (imagectl smoke attach: %d), want %d\nstderr: %s", code, cliCode, tc.want, errOut)
			}
			var rep, cliRep probe.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("stdout is no report: %v\n%s", err, out)
			}
			if err := json.Unmarshal([]byte(cliOut), &cliRep); err != nil {
				t.Fatalf("imagectl smoke attach's stdout is no report: %v\n%s", err, cliOut)
			}
			if rep.OK || rep.Error == "" || rep.Dashboard == "" {
				t.Errorf("report %+v: want not ok, an error, the dashboard", rep)
			}
			// Timing: how many polls fit in --pause-timeout, in the count and
			// in the error's text ("after 300ms (6 polls of ...").
			rep.Polls, cliRep.Polls = 0, 0
			polls := regexp.MustCompile(`\(\d+ polls? of `)
			rep.Error, cliRep.Error = polls.ReplaceAllString(rep.Error, "(N polls of "), polls.ReplaceAllString(cliRep.Error, "(N polls of ")
			if a, b := mustJSON(t, rep), mustJSON(t, cliRep); a != b {
				t.Errorf("imagectl-probe attach's report:\n%s\nimagectl smoke attach's:\n%s", a, b)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
