package matrix_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/cmd/imagectl/app/apptest"
	"github.com/imagectl/imagectl/imagespec"
)

// The committed files at the repository root.

func TestMatrixResolveJSON(t *testing.T) {
	code, out, errOut := apptest.Run(t, "--matrix", apptest.RepoMatrix, "matrix", "resolve", "--ray", "2.46.0", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	// One shape with or without --explain: {"set": ..., "explanation": ...}.
	var res struct {
		Set         imagespec.Set   `json:"set"`
		Explanation json.RawMessage `json:"explanation"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("stdout is not {\"set\": ...}: %v\n%s", err, out)
	}
	set := res.Set
	if res.Explanation != nil {
		t.Errorf("an explanation without --explain: %s", res.Explanation)
	}
	_, explained, _ := apptest.Run(t, "--matrix", apptest.RepoMatrix, "matrix", "resolve", "--ray", "2.46.0", "--output", "json", "--explain")
	var withExplain struct {
		Set         imagespec.Set   `json:"set"`
		Explanation json.RawMessage `json:"explanation"`
	}
	if err := json.Unmarshal([]byte(explained), &withExplain); err != nil || withExplain.Explanation == nil {
		t.Errorf("--explain -o json: %v, explanation %s", err, withExplain.Explanation)
	}
	if diff := cmp.Diff(set, withExplain.Set); diff != "" {
		t.Errorf("the set differs with --explain (-without +with):\n%s", diff)
	}
	if len(set.Tags) == 0 {
		t.Error("the set's JSON has no tags")
	}
	if diff := cmp.Diff([]string{"3.9", "3.10", "3.11", "3.12"}, set.RayPythons); diff != "" {
		t.Errorf("rayPythons (-want +got):\n%s", diff)
	}
	if set.Python != "3.12" || !strings.HasPrefix(set.CodeServer.Version, "4.") || set.Debugpy != "1.8.14" {
		t.Errorf("python %q code-server %q debugpy %q", set.Python, set.CodeServer.Version, set.Debugpy)
	}
	var ids []string
	for _, e := range set.Extensions {
		ids = append(ids, e.ID)
		for _, p := range []string{"linux/amd64", "linux/arm64"} {
			if e.Files[p].TargetPlatform == "" {
				t.Errorf("%s: no file for %s", e.ID, p)
			}
		}
	}
	if diff := cmp.Diff([]string{"ms-python.python", "ms-python.debugpy", "anyscalecompute.ray-distributed-debugger"}, ids); diff != "" {
		t.Errorf("extensions (-want +got):\n%s", diff)
	}
	// Same input, byte-identical output.
	_, again, _ := apptest.Run(t, "--matrix", apptest.RepoMatrix, "matrix", "resolve", "--ray", "2.46.0", "--output", "json", "--platform", "linux/arm64,linux/amd64")
	if again != out {
		t.Errorf("second run differs:\n%s\nvs\n%s", again, out)
	}
}

func TestMatrixResolveExplain(t *testing.T) {
	code, out, errOut := apptest.Run(t, "--matrix", apptest.RepoMatrix, "--catalog", apptest.RepoCatalog, "matrix", "resolve", "--ray", "2.46.0", "--explain")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{
		"code-server  4.101.2 (VS Code 1.101.2)",
		"python 3.12 chosen: highest CPython with Ray 2.46.0 wheels on linux/amd64 and linux/arm64",
		"ms-python.python 2025.10.0 chosen:",
		"engines ^1.66.0 accepts VS Code 1.101.2",
		"base image digests for lscr.io/linuxserver/code-server:4.101.2 are unknown",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestMatrixResolveErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown ray", []string{"--ray", "9.9.9"}, `unknown Ray version "9.9.9"; known Ray versions: 2.46.0`},
		{"missing ray", nil, "--ray is required"},
		{"bad output", []string{"--ray", "2.46.0", "--output", "yaml"}, `--output "yaml": want text or json`},
		{"bad platform", []string{"--ray", "2.46.0", "--platform", "linux/riscv64"}, `platform "linux/riscv64": want linux/amd64 or linux/arm64`},
		{"python not shipped", []string{"--ray", "2.46.0", "--python", "3.13"}, "--python 3.13: Ray 2.46.0 ships wheels for it on none"},
		{"unknown code-server", []string{"--ray", "2.46.0", "--code-server", "4.1.0"}, "code-server 4.1.0 is not in the catalog (known: 4.101.2)"},
		{"extra args", []string{"--ray", "2.46.0", "x"}, "imagectl matrix resolve takes no arguments, got \"x\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := apptest.Run(t, append([]string{"--matrix", apptest.RepoMatrix, "matrix", "resolve"}, tc.args...)...)
			if code == 0 {
				t.Fatalf("exit 0, want failure")
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut, tc.wantErr)
			}
		})
	}
}

func TestMatrixResolveMissingFiles(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := apptest.Run(t, "--matrix", dir+"/matrix.yaml", "matrix", "resolve", "--ray", "2.46.0")
	if code == 0 || !strings.Contains(errOut, "matrix.yaml") {
		t.Errorf("exit %d stderr %q; want a failure naming matrix.yaml", code, errOut)
	}
	code, _, errOut = apptest.Run(t, "--matrix", apptest.RepoMatrix, "--catalog", dir+"/none.json", "matrix", "resolve", "--ray", "2.46.0")
	if code == 0 || !strings.Contains(errOut, "none.json") || !strings.Contains(errOut, "imagectl matrix refresh") {
		t.Errorf("exit %d stderr %q; want a failure naming the catalog and refresh", code, errOut)
	}
}

func TestMatrixList(t *testing.T) {
	code, out, errOut := apptest.Run(t, "--matrix", apptest.RepoMatrix, "matrix", "list")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "RAY") || !strings.Contains(lines[1], "4.101.2-ray2.46.0-py3.12") {
		t.Errorf("table:\n%s", out)
	}
	code, out, errOut = apptest.Run(t, "--matrix", apptest.RepoMatrix, "matrix", "list", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var got struct {
		Sets []imagespec.Set `json:"sets"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Sets) != 1 || got.Sets[0].Ray != "2.46.0" {
		t.Errorf("sets = %+v", got.Sets)
	}
}

func TestMatrixHelpHasExamples(t *testing.T) {
	for _, sub := range []string{"resolve", "list", "refresh"} {
		code, out, _ := apptest.Run(t, "matrix", sub, "--help")
		if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "imagectl matrix "+sub) {
			t.Errorf("matrix %s --help: exit %d, output:\n%s", sub, code, out)
		}
	}
}

func TestMatrixRefreshFailureKeepsCatalog(t *testing.T) {
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`[{"tag_name":"v4.101.2","draft":false,"prerelease":false}]`))
	}))
	defer gh.Close()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html><body>captive portal</body></html>"))
	}))
	defer html.Close()
	dir := t.TempDir()
	cat := filepath.Join(dir, "catalog.json")
	old := []byte(`{"schemaVersion": 1, "describes": "2000-01-01"}` + "\n")
	if err := os.WriteFile(cat, old, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("IMAGECTL_GITHUB_URL", gh.URL)
	code, _, errOut := apptest.Run(t, "--matrix", apptest.RepoMatrix, "--catalog", cat, "matrix", "refresh",
		"--versions", "github-releases", "--pypi-url", html.URL, "--retries", "0")
	if code == 0 {
		t.Fatal("refresh against an HTML PyPI succeeded")
	}
	for _, want := range []string{"left unchanged", html.URL + "/simple/ray/", `answered Content-Type "text/html; charset=utf-8"`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	after, _ := os.ReadFile(cat)
	if string(after) != string(old) {
		t.Errorf("catalog changed:\n%s", after)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the catalog directory, want 1 (no temp files)", len(entries))
	}

	// A catalog that is not there is not "left unchanged": it is not
	// written.
	missing := filepath.Join(dir, "new.json")
	code, _, errOut = apptest.Run(t, "--matrix", apptest.RepoMatrix, "--catalog", missing, "matrix", "refresh",
		"--versions", "github-releases", "--pypi-url", html.URL, "--retries", "0")
	if want := "refresh failed, " + missing + " not written: "; code == 0 || !strings.Contains(errOut, want) || strings.Contains(errOut, "left unchanged") {
		t.Errorf("refresh to a new catalog: exit %d, stderr %q; want %q", code, errOut, want)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("a failed refresh wrote %s", missing)
	}
}
