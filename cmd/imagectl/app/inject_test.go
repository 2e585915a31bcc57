package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const injectPlainJob = `# my job
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: job
spec:
  entrypoint: python main.py
  runtimeEnvYAML: |
    pip: ["debugpy>=1.8.0"]
  rayClusterSpec:
    rayVersion: "2.46.0"
    headGroupSpec:
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.46.0-py312
`

func runIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := NewRootCommand(&out, &errb)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	code := 0
	if err != nil {
		errb.WriteString("imagectl: " + err.Error() + "\n")
		code = 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
	}
	return code, out.String(), errb.String()
}

func TestInjectCLI(t *testing.T) {
	code, out, errs := runIn(t, injectPlainJob, "inject", "-f", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"# my job\n",
		"          - name: code-server # added by imagectl inject\n",
		"            image: docker.io/onesizefitsquorum/code-server-with-ray-distributed-debugger:ray2.46.0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if errs != "" {
		t.Errorf("stderr: %s", errs)
	}

	// Idempotent through the CLI too.
	if code, again, errs := runIn(t, out, "inject", "-f", "-"); code != 0 || again != out {
		t.Errorf("inject of injected output: exit %d %s\n%s", code, errs, again)
	}

	code, diff, _ := runIn(t, injectPlainJob, "inject", "-f", "-", "-o", "diff")
	if code != 0 || !strings.Contains(diff, "--- a/-\n+++ b/-\n") || !strings.Contains(diff, "+          - name: code-server # added by imagectl inject\n") {
		t.Errorf("-o diff: exit %d\n%s", code, diff)
	}

	// -i rewrites the file; --remove -i gives the original bytes back.
	dir := t.TempDir()
	path := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(path, []byte(injectPlainJob), 0o640); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runIn(t, "", "inject", "-f", path, "-i", "--create-secret"); code != 0 || out != "" {
		t.Fatalf("-i: exit %d out %q err %s", code, out, errs)
	} else if !strings.Contains(errs, "added Secret code-server-password with a random password") {
		t.Errorf("stderr does not mention the Secret: %s", errs)
	}
	injected, _ := os.ReadFile(path)
	if !strings.Contains(string(injected), "kind: Secret") || !strings.Contains(string(injected), "name: code-server # added by imagectl inject") {
		t.Errorf("-i did not write the sidecar and Secret:\n%s", injected)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("-i changed the mode to %v", st.Mode())
	}
	if code, _, errs := runIn(t, "", "inject", "-f", path, "-i", "--remove"); code != 0 {
		t.Fatalf("--remove -i: exit %d %s", code, errs)
	}
	if back, _ := os.ReadFile(path); string(back) != injectPlainJob {
		t.Errorf("--remove -i did not restore the file:\n%s", back)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestInjectCLIErrors(t *testing.T) {
	dir := t.TempDir()
	cm := filepath.Join(dir, "cm.yaml")
	const cmText = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	if err := os.WriteFile(cm, []byte(cmText), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"no file", "", []string{"inject"}, 2, "-f FILE (or -f - for stdin) is required"},
		{"bad output", injectPlainJob, []string{"inject", "-f", "-", "-o", "json"}, 2, `--output "json": expected yaml or diff`},
		{"in place on stdin", injectPlainJob, []string{"inject", "-f", "-", "-i"}, 2, "-i (in place) needs a file"},
		{"bad port", injectPlainJob, []string{"inject", "-f", "-", "--port", "0"}, 2, "invalid option: port 0"},
		{"bad quantity", injectPlainJob, []string{"inject", "-f", "-", "--requests", "cpu=lots"}, 2, `requests cpu="lots"`},
		{"remove with options", injectPlainJob, []string{"inject", "-f", "-", "--remove", "--image", "x"}, 2, "--image does not apply"},
		{"missing file", "", []string{"inject", "-f", filepath.Join(dir, "nope.yaml")}, 2, "reading "},
		{"not a Ray kind", "", []string{"inject", "-f", cm, "-i"}, 1, cm + ": no ray.io/v1 RayJob, RayCluster or RayService"},
		{"invalid YAML", "a: [\n", []string{"inject", "-f", "-"}, 1, "-: document 1: invalid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runIn(t, tt.stdin, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errs, tt.code, tt.want)
			}
			if out != "" {
				t.Errorf("wrote to stdout on error: %q", out)
			}
		})
	}
	if b, _ := os.ReadFile(cm); string(b) != cmText {
		t.Errorf("a failed -i changed the file:\n%s", b)
	}
}

func TestInjectCLIWarns(t *testing.T) {
	job := strings.Replace(injectPlainJob, `    pip: ["debugpy>=1.8.0"]`, `    env_vars: {RAY_DEBUG: legacy}`, 1)
	code, _, errs := runIn(t, job, "inject", "-f", "-")
	if code != 0 {
		t.Fatalf("exit %d %s", code, errs)
	}
	for _, w := range []string{"imagectl: warning: -: document 1 (RayJob job): spec.runtimeEnvYAML sets RAY_DEBUG=legacy",
		"imagectl: warning: -: document 1 (RayJob job): the runtime env lacks debugpy>=1.8.0"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
}
