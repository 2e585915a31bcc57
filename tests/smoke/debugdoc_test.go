package smoketest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// debugFlag is one flag of imagectl debug as its --help lists it.
type debugFlag struct {
	name  string
	value bool // takes a value
}

var (
	debugHelpOnce  sync.Once
	debugHelpFlags map[string]debugFlag // by --name and by -x
	debugHelpErr   string
)

// flagLine is a flag line of cobra's help: "  -f, --filename string   …" or
// "      --open   …" (a flag without a value has no type).
var flagLine = regexp.MustCompile(`^\s+(?:-([a-zA-Z]), )?--([a-z0-9][a-z0-9-]*)( [a-zA-Z]+)?\s\s`)

// debugFlags builds ./cmd/imagectl and reads the flags of `imagectl debug
// --help` (its own and the global ones).
func debugFlags(t *testing.T) map[string]debugFlag {
	t.Helper()
	debugHelpOnce.Do(func() {
		dir, err := os.MkdirTemp("", "imagectl-debug-help")
		if err != nil {
			debugHelpErr = err.Error()
			return
		}
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "imagectl")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/imagectl/imagectl/cmd/imagectl").CombinedOutput(); err != nil {
			debugHelpErr = "go build ./cmd/imagectl: " + err.Error() + "\n" + string(out)
			return
		}
		out, err := exec.Command(bin, "debug", "--help").Output()
		if err != nil {
			debugHelpErr = "imagectl debug --help: " + err.Error()
			return
		}
		debugHelpFlags = map[string]debugFlag{}
		for _, l := range strings.Split(string(out), "\n") {
			m := flagLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			f := debugFlag{name: "--" + m[2], value: m[3] != ""}
			debugHelpFlags[f.name] = f
			if m[1] != "" {
				debugHelpFlags["-"+m[1]] = f
			}
		}
		if len(debugHelpFlags) == 0 {
			debugHelpErr = "imagectl debug --help lists no flags:\n" + string(out)
		}
	})
	if debugHelpErr != "" {
		t.Fatal(debugHelpErr)
	}
	return debugHelpFlags
}

// debugCommandProblems checks a documented `imagectl debug …` command
// against the verb's flags: every flag exists, a flag that takes a value
// has one, nothing but flags before `--`, and an entrypoint after it.
func debugCommandProblems(args []string, flags map[string]debugFlag) []string {
	if len(args) < 2 || args[0] != "imagectl" || args[1] != "debug" {
		return []string{"the command is not imagectl debug: " + strings.Join(args, " ")}
	}
	var probs []string
	dash := false
	for i := 2; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			dash = true
			if i+1 == len(args) {
				probs = append(probs, "no entrypoint after --")
			}
			break
		}
		if !strings.HasPrefix(a, "-") {
			probs = append(probs, "argument "+a+" before --: imagectl debug takes the entrypoint after --")
			continue
		}
		name, _, hasValue := strings.Cut(a, "=")
		f, ok := flags[name]
		if !ok {
			probs = append(probs, "imagectl debug has no flag "+name)
			continue
		}
		if f.value && !hasValue {
			if i+1 == len(args) || args[i+1] == "--" {
				probs = append(probs, name+" without its value")
				continue
			}
			i++
		}
	}
	if !dash {
		probs = append(probs, "no -- ENTRYPOINT: the documented flow submits a job")
	}
	return probs
}

// proseFlag is a flag the prose names in backticks: `--cleanup`, `-n
// NAMESPACE`.
var proseFlag = regexp.MustCompile("`(--?[a-zA-Z][a-z0-9-]*)[\\s=`]")

// notDebugFlags are flags README's debug section names that belong to
// other commands, and whose.
var notDebugFlags = map[string]string{
	"--post-mortem": "imagectl smoke attach",
}

// TestReadmeDebugStartsWithTheVerb: README's "Debug a RayJob on KubeRay"
// starts with `imagectl debug -f … --working-dir … -- …`, whose flags the
// built binary's `imagectl debug --help` lists, and every flag the
// section's prose names is one of them (or of the command named in
// notDebugFlags).
func TestReadmeDebugStartsWithTheVerb(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := readmeCommands(t, string(readme), "## Debug a RayJob on KubeRay")
	if len(cmds) == 0 {
		t.Fatal("README's debug section has no command")
	}
	first := cmds[0]
	flags := debugFlags(t)
	for _, p := range debugCommandProblems(first.args, flags) {
		t.Errorf("README's first debug command %q: %s", first.line, p)
	}
	for _, want := range []string{"-f", "--working-dir"} {
		if !strings.Contains(" "+first.line+" ", " "+want+" ") {
			t.Errorf("README's first debug command %q does not give %s", first.line, want)
		}
	}
	section := readmeSection(t, string(readme), "## Debug a RayJob on KubeRay")
	seen := map[string]bool{}
	for _, m := range proseFlag.FindAllStringSubmatch(section, -1) {
		name := m[1]
		seen[name] = true
		if _, ok := flags[name]; !ok && notDebugFlags[name] == "" {
			t.Errorf("README's debug section names %s, which imagectl debug does not have", name)
		}
	}
	for _, want := range []string{"--cleanup", "-n", "--cluster", "--open", "--show-password"} {
		if !seen[want] {
			t.Errorf("README's debug section does not name `%s`", want)
		}
	}
}

// TestDebugCommandCheckCatchesDrift proves the check above can fail.
func TestDebugCommandCheckCatchesDrift(t *testing.T) {
	flags := debugFlags(t)
	if p := debugCommandProblems(strings.Fields("imagectl debug -f rayjob.yaml --working-dir ./working_dir -- python sample_code.py"), flags); len(p) != 0 {
		t.Fatalf("the documented command: %q", p)
	}
	for _, tc := range []struct{ line, want string }{
		{"imagectl debug -f rayjob.yaml --workdir ./w -- python x.py", "no flag --workdir"},
		{"imagectl debug -f rayjob.yaml python x.py", "argument python before --"},
		{"imagectl debug -f rayjob.yaml --working-dir", "--working-dir without its value"},
		{"imagectl debug -f rayjob.yaml --working-dir ./w", "no -- ENTRYPOINT"},
		{"imagectl inject -f rayjob.yaml", "not imagectl debug"},
		{"kubectl ray job submit -f rayjob.yaml -- python x.py", "not imagectl debug"},
	} {
		p := strings.Join(debugCommandProblems(strings.Fields(tc.line), flags), "; ")
		if !strings.Contains(p, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.line, p, tc.want)
		}
	}
	for _, f := range []string{"--cleanup", "-n", "--cluster", "--working-dir", "--ready-timeout", "--show-password"} {
		if _, ok := flags[f]; !ok {
			t.Errorf("imagectl debug --help lacks %s (read %d flags)", f, len(flags))
		}
	}
}
