package kube

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/internal/testutil"
)

// readmeDebugHeading is README's section whose first command is the one
// the node tests run as a user types it.
const readmeDebugHeading = "## Debug a RayJob on KubeRay"

// readmeDebugCommand is README's first command of its debug section,
// split into its flags (before `--`) and its entrypoint (after).
func readmeDebugCommand(t *testing.T) (flags, entrypoint []string) {
	t.Helper()
	lines, err := testutil.ShellLines(string(readFile(t, filepath.Join(repoRoot(t), "README.md"))), readmeDebugHeading)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if len(lines) == 0 {
		t.Fatalf("README.md's %q has no command", readmeDebugHeading)
	}
	flags, entrypoint, err = splitDebugCommand(lines[0])
	if err != nil {
		t.Fatalf("README.md's first debug command %q: %v", lines[0], err)
	}
	return flags, entrypoint
}

// splitDebugCommand splits `imagectl debug FLAGS -- ENTRYPOINT`.
func splitDebugCommand(line string) (flags, entrypoint []string, err error) {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "imagectl" || f[1] != "debug" {
		return nil, nil, fmt.Errorf("not an imagectl debug command")
	}
	f = f[2:]
	for i, a := range f {
		if a == "--" {
			if i+1 == len(f) {
				return nil, nil, fmt.Errorf("nothing after --")
			}
			return f[:i], f[i+1:], nil
		}
	}
	return nil, nil, fmt.Errorf("no -- ENTRYPOINT")
}

// debugArgsAsDocumented turns README's command into the one a test runs,
// and says each change: the values of -f and --working-dir become the
// test's files (README's are names a user has), the entrypoint becomes the
// test's (README's sample_code.py calls Ray's API, and the Ray container
// here is the stand-in, which runs a driver of its own: driverPy), and the
// test's own flags (test.flags: its kubeconfig, the image the node has,
// bounds and cleanup) come after README's. A flag README gives that the
// test does not replace is passed as written; a value README gives for a
// flag the test also sets is an error (the test would not be running the
// documented command).
func debugArgsAsDocumented(t *testing.T, replace map[string]string, testFlags, entrypoint []string) []string {
	t.Helper()
	flags, doc := readmeDebugCommand(t)
	args, err := documentedArgs(flags, replace, testFlags)
	if err != nil {
		t.Fatalf("README.md's debug command: %v", err)
	}
	t.Logf("README's command %q run as: imagectl debug %s -- %s (values of %s replaced by the test's files; README's entrypoint %q replaced: the stand-in runs its own driver)",
		"imagectl debug "+strings.Join(flags, " ")+" -- "+strings.Join(doc, " "), strings.Join(args, " "), strings.Join(entrypoint, " "), strings.Join(keys(replace), ", "), strings.Join(doc, " "))
	return append(append(args, "--"), entrypoint...)
}

func documentedArgs(flags []string, replace map[string]string, testFlags []string) ([]string, error) {
	testSets := map[string]bool{}
	for _, f := range testFlags {
		if strings.HasPrefix(f, "-") {
			testSets[strings.SplitN(f, "=", 2)[0]] = true
		}
	}
	var args []string
	seen := map[string]bool{}
	for i := 0; i < len(flags); i++ {
		name, _, hasValue := strings.Cut(flags[i], "=")
		if !strings.HasPrefix(name, "-") {
			if i == 0 {
				return nil, fmt.Errorf("%q is not a flag (an argument before --)", flags[i])
			}
			args = append(args, flags[i]) // the value of the flag before it, as written
			continue
		}
		if testSets[name] {
			return nil, fmt.Errorf("gives %s, which the test sets itself", name)
		}
		if r, ok := replace[name]; ok {
			if !hasValue {
				if i+1 == len(flags) {
					return nil, fmt.Errorf("%s without its value", name)
				}
				i++ // README's value, replaced
			}
			args = append(args, name, r)
			seen[name] = true
			continue
		}
		args = append(args, flags[i])
	}
	for name := range replace {
		if !seen[name] {
			return nil, fmt.Errorf("does not give %s", name)
		}
	}
	return append(args, testFlags...), nil
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestReadmeDebugCommandIsWhatTheNodeTestRuns checks the derivation the
// node tests use (debugArgsAsDocumented) on README's command and on
// commands it must refuse: the node test runs README's flags as written,
// only the files and the entrypoint replaced.
func TestReadmeDebugCommandIsWhatTheNodeTestRuns(t *testing.T) {
	flags, entry := readmeDebugCommand(t)
	replace := map[string]string{"-f": "/t/job.yaml", "--working-dir": "/t/wd"}
	got, err := documentedArgs(flags, replace, []string{"--kubeconfig", "/t/kc", "--cleanup"})
	if err != nil {
		t.Fatalf("README's command %v -- %v: %v", flags, entry, err)
	}
	if want := "-f /t/job.yaml --working-dir /t/wd --kubeconfig /t/kc --cleanup"; strings.Join(got, " ") != want {
		t.Errorf("args %q, want %q", strings.Join(got, " "), want)
	}
	for _, tc := range []struct{ line, want string }{
		{"imagectl debug -f j.yaml -- python x.py", "does not give --working-dir"},
		{"imagectl debug -f j.yaml --working-dir w --cleanup -- python x.py", "gives --cleanup, which the test sets itself"},
		{"imagectl debug -f j.yaml --working-dir -- python x.py", "--working-dir without its value"},
		{"imagectl debug -f=j.yaml --working-dir=w -n team -- python x.py", ""},
		{"imagectl debug -f j.yaml --working-dir w python x.py", "no -- ENTRYPOINT"},
		{"imagectl inject -f j.yaml", "not an imagectl debug command"},
	} {
		fl, _, err := splitDebugCommand(tc.line)
		if err == nil {
			_, err = documentedArgs(fl, replace, []string{"--cleanup"})
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.line, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.line, err, tc.want)
		}
	}
}
