package kind

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/imagectl/imagectl/inject"
)

//go:embed rayjob.yaml.tmpl
var rayJobTemplate string

// TaskScript is the job's driver (ScriptFile in WorkingDir): four
// @ray.remote tasks f that stop at breakpoint() and return x*x, then a task
// g that raises ZeroDivisionError under RAY_DEBUG_POST_MORTEM=1.
//
//go:embed sample_code.py
var TaskScript string

// Expected facts about a successful smoke run.
const (
	ExpectedOutput   = "RESULT [0, 1, 4, 9]"
	ExpectedFunction = "f"
	ExpectedFile     = ScriptFile
	ExpectedPauses   = 4
	// The post-mortem case: g raises, freezes, is attached to, and the
	// driver then prints ExpectedPostMortem.
	PostMortemFunction = "g"
	ExpectedPostMortem = "POST-MORTEM ZeroDivisionError"
)

// Params are the plain RayJob's inputs.
type Params struct {
	Name                  string // RayJob name (DNS label)
	RayVersion            string // e.g. 2.46.0
	Python                string // e.g. 3.12
	ActiveDeadlineSeconds int
}

// RayImage is rayproject/ray:<ray>-py<XY>.
func (p Params) RayImage() string {
	return "rayproject/ray:" + p.RayVersion + "-py" + strings.ReplaceAll(p.Python, ".", "")
}

var (
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)
	rayVersion = regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	pyVersion  = regexp.MustCompile(`^3\.\d+$`)
)

// RenderPlain renders the RayJob without the sidecar: the user's
// rayjob.yaml before imagectl inject.
func RenderPlain(p Params) ([]byte, error) {
	if p.ActiveDeadlineSeconds == 0 {
		p.ActiveDeadlineSeconds = 1800
	}
	switch {
	case !dnsLabel.MatchString(p.Name):
		return nil, fmt.Errorf("rayjob name %q: expected a DNS label of at most 40 characters", p.Name)
	case !rayVersion.MatchString(p.RayVersion):
		return nil, fmt.Errorf("ray version %q: expected X.Y.Z", p.RayVersion)
	case !pyVersion.MatchString(p.Python):
		return nil, fmt.Errorf("python version %q: expected 3.N", p.Python)
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

// Manifest is the plain RayJob with the sidecar added by the inject
// library with opts.
func Manifest(ctx context.Context, p Params, opts ...inject.Option) ([]byte, []string, error) {
	plain, err := RenderPlain(p)
	if err != nil {
		return nil, nil, err
	}
	res, err := inject.Apply(ctx, PlainFile, plain, opts...)
	if err != nil {
		return nil, nil, err
	}
	return res.Output, res.Warnings, nil
}

// Prepull is the pre-pull DaemonSet of the injected RayJob, as
// inject.Prepull writes it (examples/prepull.yaml is its output for
// examples/rayjob.yaml): its init containers pull the Ray image and the
// sidecar image, with pullSecret (when set) among its imagePullSecrets.
func Prepull(injected []byte, pullSecret string) ([]byte, error) {
	imgs, err := inject.ImagesToPrepull(InjectedFile, injected)
	if err != nil {
		return nil, err
	}
	if pullSecret != "" && !slices.Contains(imgs.PullSecrets, pullSecret) {
		imgs.PullSecrets = append(imgs.PullSecrets, pullSecret)
	}
	return inject.Prepull(imgs)
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
