package kind

import (
	"bytes"
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/imagectl/imagectl/inject"
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

// TaskScript is exposed to the template.
func (p Params) TaskScript() string { return TaskScript }

var (
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)
	rayVersion = regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	pyVersion  = regexp.MustCompile(`^3\.\d+$`)
)

// RenderPlain renders the ConfigMap with the task script and the RayJob,
// without the sidecar: what a user has before imagectl inject.
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

// SecretFile is where the user guide's `imagectl inject` step writes the
// password Secret (--secret-file).
const SecretFile = "code-server-password.yaml"

// InjectArgs are the flags of the user guide's `imagectl inject` step that
// the harness uses. The harness adds --image (the image under test, by
// digest) and, for a private repository, --image-pull-secret.
var InjectArgs = []string{"--secret-file", SecretFile}

// InjectOptions maps `imagectl inject` flags to library options: the
// harness runs the library with exactly the flags it documents. Only the
// flags the harness uses are known.
func InjectOptions(args []string) ([]inject.Option, error) {
	fs := flag.NewFlagSet("imagectl inject", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("secret-file", "", "") // the Secret is written apart: see Manifest
	image := fs.String("image", "", "")
	pullSecret := fs.String("image-pull-secret", "", "")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("imagectl inject %s: %w", strings.Join(args, " "), err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("imagectl inject: unexpected %q", fs.Args())
	}
	var opts []inject.Option
	if *image != "" {
		opts = append(opts, inject.WithImage(*image))
	}
	if *pullSecret != "" {
		opts = append(opts, inject.WithImagePullSecret(*pullSecret))
	}
	return opts, nil
}

// Manifest is the plain RayJob with the sidecar injected by the inject
// library with args (InjectArgs plus --image ...).
func Manifest(ctx context.Context, p Params, args []string) ([]byte, []string, error) {
	plain, err := RenderPlain(p)
	if err != nil {
		return nil, nil, err
	}
	opts, err := InjectOptions(args)
	if err != nil {
		return nil, nil, err
	}
	res, err := inject.Apply(ctx, "rayjob.yaml", plain, opts...)
	if err != nil {
		return nil, nil, err
	}
	out := res.Output
	if slices.Contains(args, "--secret-file") {
		// The password Secret --secret-file writes, after the RayJob.
		sec, err := inject.PasswordSecret(SecretFile, nil, "")
		if err != nil {
			return nil, nil, err
		}
		out = append(append(out, "---\n"...), sec.Doc...)
	}
	return out, res.Warnings, nil
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
