package imagectl_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"gopkg.in/yaml.v3"

	"github.com/imagectl/imagectl/internal/docsurl"
)

// TestOneHome: the project has one home. The Go module path (what go install
// fetches), the README's install command, the image's
// org.opencontainers.image.source label (matrix.yaml image.source) and the
// keyless certificate identity users verify against (README, docs) name the
// same GitHub repository; the release workflow signs under
// github.repository, so it is that repository's workflows.
func TestOneHome(t *testing.T) {
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	mod := modfile.ModulePath([]byte(read("go.mod")))
	owner, repo, ok := strings.Cut(strings.TrimPrefix(mod, "github.com/"), "/")
	if !strings.HasPrefix(mod, "github.com/") || !ok || strings.Contains(repo, "/") {
		t.Fatalf("module path %q is not github.com/OWNER/REPO", mod)
	}
	home := "github.com/" + owner + "/" + repo

	readme := read("README.md")
	if !strings.Contains(readme, "go install "+home+"/cmd/imagectl@latest") {
		t.Errorf("README.md does not install from the module path: want go install %s/cmd/imagectl@latest", home)
	}

	var m struct {
		Image struct {
			Source string `yaml:"source"`
		} `yaml:"image"`
	}
	if err := yaml.Unmarshal([]byte(read("matrix.yaml")), &m); err != nil {
		t.Fatal(err)
	}
	if m.Image.Source != "https://"+home {
		t.Errorf("matrix.yaml image.source (the org.opencontainers.image.source label) = %q, want https://%s", m.Image.Source, home)
	}
	if docsurl.Home != "https://"+home {
		t.Errorf("docsurl.Home (the documentation messages link) = %q, want https://%s", docsurl.Home, home)
	}

	wantID := `^https://github\.com/` + owner + "/" + repo + `/\.github/workflows/`
	idRe := regexp.MustCompile(`--certificate-identity-regexp[ =]'([^']*)'`)
	for _, f := range []string{"README.md", "docs/verify.md"} {
		hits := idRe.FindAllStringSubmatch(read(f), -1)
		if len(hits) == 0 {
			t.Errorf("%s gives no --certificate-identity-regexp", f)
		}
		for _, h := range hits {
			if h[1] != wantID {
				t.Errorf("%s: certificate identity %q, want %q", f, h[1], wantID)
			}
		}
		if strings.Contains(strings.ToLower(read(f)), "onesizefitsquorum/code-server-with-ray-distributed-debugger/") {
			t.Errorf("%s names the proof of concept's GitHub repository as a home", f)
		}
	}
	var wf struct {
		Env map[string]any `yaml:"env"`
	}
	if err := yaml.Unmarshal([]byte(read(".github/workflows/release.yml")), &wf); err != nil {
		t.Fatal(err)
	}
	if got, _ := wf.Env["CERT_IDENTITY_RE"].(string); got != `^https://github\.com/${{ github.repository }}/\.github/workflows/` {
		t.Errorf("release.yml CERT_IDENTITY_RE = %q, want the running repository's workflows", got)
	}
}
