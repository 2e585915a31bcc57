package build

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/imagectl/imagectl/dockerfiles"
	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/upstream/pypi/pypitest"
)

// wheelsInstall returns the rendered definition's wheels-stage script up to
// and including its pip install, with the stage's paths moved under root
// (/out -> root/out, /in -> root/in), and the rendered global ARG defaults.
func wheelsInstall(t *testing.T, rendered []byte, root string) (script string, args map[string]string) {
	t.Helper()
	args = map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^ARG ([A-Z0-9_]+)="([^"]*)"$`).FindAllStringSubmatch(string(rendered), -1) {
		args[m[1]] = m[2]
	}
	def := string(rendered)
	i := strings.Index(def, " AS wheels\n")
	if i < 0 {
		t.Fatal("the definition has no wheels stage")
	}
	start := strings.Index(def[i:], "<<'SH'\n")
	if start < 0 {
		t.Fatal("the wheels stage has no RUN <<'SH' heredoc")
	}
	body := def[i+start+len("<<'SH'\n"):]
	end := strings.Index(body, "-r /in/requirements.txt\n")
	if end < 0 {
		t.Fatal("the wheels stage's script has no pip install -r /in/requirements.txt")
	}
	script = body[:end+len("-r /in/requirements.txt\n")]
	script = strings.NewReplacer("/out/", root+"/out/", "/in/", root+"/in/").Replace(script)
	return script, args
}

// TestWheelsStageInstallsTheBaseManylinuxTags runs the build's own pip
// install (the rendered definition's wheels stage, real pip) against the
// fake PyPI: a wheel tagged only with a manylinux tag the base's glibc has
// (manylinux_2_31) installs for both architectures, one tagged only
// manylinux_2_40 (newer than the base's glibc 2.39) is refused.
func TestWheelsStageInstallsTheBaseManylinuxTags(t *testing.T) {
	if out, err := exec.Command("python3", "-m", "pip", "--version").CombinedOutput(); err != nil {
		testutil.SkipOrFail(t, "python3 -m pip is needed to run the wheels stage's pip install: %v: %s", err, bytes.TrimSpace(out))
	}
	var files []pypitest.File
	for _, arch := range []string{"x86_64", "aarch64"} {
		files = append(files, pypitest.Wheel("glibcfit-1.0-cp312-cp312-manylinux_2_31_"+arch+".whl"))
	}
	f := pypitest.New([]pypitest.Project{
		{Name: "glibcfit", Releases: map[string][]pypitest.File{"1.0": files}},
		{Name: "glibcnew", Releases: map[string][]pypitest.File{"1.0": {
			pypitest.Wheel("glibcnew-1.0-cp312-cp312-manylinux_2_40_x86_64.whl"),
			pypitest.Wheel("glibcnew-1.0-cp312-cp312-manylinux_2_40_aarch64.whl"),
		}}},
	})
	srv := httptest.NewServer(f)
	defer srv.Close()
	rendered, err := Render(dockerfiles.Dockerfile(), Params{ToolsImage: "python:3.12-slim", PackageIndex: srv.URL + "/simple", PythonRuntime: imagespec.PythonRuntimeBase})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		targetArch, platform, project string
		installs                      bool
	}{
		{"amd64", "linux/amd64", "glibcfit", true},
		{"arm64", "linux/arm64", "glibcfit", true},
		{"amd64", "linux/amd64", "glibcnew", false},
		{"arm64", "linux/arm64", "glibcnew", false},
	} {
		t.Run(tc.project+"/"+tc.targetArch, func(t *testing.T) {
			arch, _ := imagespec.WheelArch(tc.platform)
			file := tc.project + "-1.0-cp312-cp312-manylinux_2_" + map[bool]string{true: "31", false: "40"}[tc.installs] + "_" + arch + ".whl"
			root := t.TempDir()
			script, args := wheelsInstall(t, rendered, root)
			if err := os.MkdirAll(filepath.Join(root, "in"), 0o755); err != nil {
				t.Fatal(err)
			}
			req := fmt.Sprintf("%s==1.0 --hash=sha256:%s\n", tc.project, f.SHA256(file))
			if err := os.WriteFile(filepath.Join(root, "in", "requirements.txt"), []byte(req), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "sh", "-c", script)
			// The machine's pip settings (PIP_FIND_LINKS, a pip.conf) are
			// not the tools image's: pip runs with none of them.
			cmd.Env = []string{"TARGETARCH=" + tc.targetArch, "PYTHON_VERSION=3.12", "PYTHONDONTWRITEBYTECODE=1", "PIP_CONFIG_FILE=/dev/null"}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "PIP_") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			for k, v := range args {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			out, err := cmd.CombinedOutput()
			installed := filepath.Join(root, "out/packages/opt/imagectl/python/lib/python3.12/site-packages", tc.project, "__init__.py")
			_, statErr := os.Stat(installed)
			if tc.installs {
				if err != nil || statErr != nil {
					t.Fatalf("the wheels stage did not install %s (only manylinux_2_31) for %s: %v, %v\n%s", file, tc.platform, err, statErr, out)
				}
				return
			}
			if err == nil || statErr == nil {
				t.Fatalf("the wheels stage installed %s (manylinux_2_40, newer than the base's glibc 2.%d) for %s\n%s", file, imagespec.BaseGlibcMinor, tc.platform, out)
			}
			if !strings.Contains(string(out), "No matching distribution found for "+tc.project) {
				t.Errorf("refusal of %s is not pip's \"No matching distribution\":\n%s", file, out)
			}
		})
	}
}
