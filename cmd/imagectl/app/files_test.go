package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
)

// --matrix and --catalog belong to the verbs that read them: every other
// verb refuses them (exit 2, naming the verbs that do) instead of ignoring
// them, and its help does not list them. The readers are found by running
// each verb on a missing --matrix: a reader fails naming the file (exit 1).
func TestFileFlagsOnlyWhereRead(t *testing.T) {
	t.Setenv("BUILDKIT_HOST", "")
	t.Setenv("IMAGECTL_MATRIX", "")
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	readers := map[string][]string{
		"matrix resolve":    {"--ray", "2.46.0"},
		"matrix list":       nil,
		"matrix refresh":    {"--no-python-lock"},
		"extensions fetch":  {"--ray", "2.46.0"},
		"extensions layout": {"--ray", "2.46.0", "--platform", "linux/amd64", "--out", filepath.Join(t.TempDir(), "out")},
		"extensions pin":    nil,
		"build":             {"--ray", "2.46.0"},
		"plan":              nil,
		"release":           {"--dry-run"},
	}
	for path, extra := range readers {
		args := append(append([]string{"--matrix", missing}, split(path)...), extra...)
		t.Run("reads/"+path, func(t *testing.T) { expectExit(t, options.ExitFailure, missing, args...) })
	}
	others := [][]string{
		{"inject", "-f", "-", "--no-resolve"},
		{"verify", "127.0.0.1:1/x:t", "--key", missing},
		{"sign", "127.0.0.1:1/x:t", "--key", missing},
		{"smoke", "image", "--archive", missing},
		{"extensions", "ls"},
		{"debug", "-f", missing},
	}
	for _, a := range others {
		for _, flag := range []string{"--matrix", "--catalog"} {
			args := append([]string{flag, missing}, a...)
			want := flag + ": imagectl " + a[0]
			t.Run("refuses/"+strings.Join(a, " ")+flag, func(t *testing.T) { expectExit(t, options.ExitUsage, want, args...) })
		}
	}
	// The help of a verb lists --matrix only where it is read.
	for path, c := range verbs(t) {
		if path == "" || c.HasSubCommands() || c.Name() == "help" || c.Name() == "completion" || c.Parent().Name() == "completion" {
			continue
		}
		_, isReader := readers[path]
		code, out, _ := runArgs(t, append(split(path), "--help")...)
		if code != 0 {
			t.Errorf("%s --help: exit %d", path, code)
			continue
		}
		if lists := strings.Contains(out, "--matrix") && strings.Contains(out, "--catalog"); lists != isReader {
			t.Errorf("%s --help lists --matrix and --catalog: %v, want %v", path, lists, isReader)
		}
	}
}
