package smoketest

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

//go:embed rayjob.yaml.tmpl
var rayJobTemplate string

// TaskScript is the driver the RayJob runs: four @ray.remote tasks that stop
// at breakpoint() and return x*x.
//
//go:embed smoke_task.py
var TaskScript string

// Expected facts about a successful smoke run.
const (
	ExpectedOutput   = "RESULT [0, 1, 4, 9]"
	ExpectedFunction = "f"
	ExpectedFile     = "smoke_task.py"
	ExpectedPauses   = 4
)

// Params are the template's inputs.
type Params struct {
	Name                  string // RayJob name (DNS label)
	Namespace             string
	Image                 string // the code-server image under test
	RayVersion            string // e.g. 2.46.0
	Python                string // e.g. 3.12
	Password              string // code-server password, put in a Secret
	ActiveDeadlineSeconds int
}

// RayImage is rayproject/ray:<ray>-py<XY>.
func (p Params) RayImage() string {
	return "rayproject/ray:" + p.RayVersion + "-py" + strings.ReplaceAll(p.Python, ".", "")
}

// TaskScript is exposed to the template.
func (p Params) TaskScript() string { return TaskScript }

var (
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)
	rayVersion = regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	pyVersion  = regexp.MustCompile(`^3\.\d+$`)
)

// Render renders the ConfigMap, Secret and RayJob as a multi-document YAML.
func Render(p Params) ([]byte, error) {
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	if p.ActiveDeadlineSeconds == 0 {
		p.ActiveDeadlineSeconds = 1800
	}
	switch {
	case !dnsLabel.MatchString(p.Name):
		return nil, fmt.Errorf("rayjob name %q: expected a DNS label of at most 40 characters", p.Name)
	case !dnsLabel.MatchString(p.Namespace):
		return nil, fmt.Errorf("namespace %q: expected a DNS label", p.Namespace)
	case p.Image == "" || strings.ContainsAny(p.Image, " \n\"'"):
		return nil, fmt.Errorf("image %q: expected an image reference", p.Image)
	case !rayVersion.MatchString(p.RayVersion):
		return nil, fmt.Errorf("ray version %q: expected X.Y.Z", p.RayVersion)
	case !pyVersion.MatchString(p.Python):
		return nil, fmt.Errorf("python version %q: expected 3.N", p.Python)
	case len(p.Password) < 16:
		return nil, fmt.Errorf("code-server password: expected at least 16 characters")
	}
	t, err := template.New("rayjob.yaml.tmpl").Option("missingkey=error").Funcs(template.FuncMap{
		"quote":  strconv.Quote,
		"indent": indent,
	}).Parse(rayJobTemplate)
	if err != nil {
		return nil, fmt.Errorf("parsing rayjob.yaml.tmpl: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, p); err != nil {
		return nil, fmt.Errorf("rendering rayjob.yaml.tmpl: %w", err)
	}
	return b.Bytes(), nil
}

func indent(n int, s string) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n")
}
