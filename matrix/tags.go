package matrix

import (
	"bytes"
	"fmt"
	"regexp"
	"text/template"
)

// TagData is what a tag template sees, e.g. {{.CodeServer}}-ray{{.Ray}}-py{{.Python}}.
type TagData struct {
	CodeServer string // 4.101.2
	VSCode     string // 1.101.2
	Ray        string // 2.46.0
	RayMinor   string // 2.46
	Python     string // 3.12
	Debugpy    string // 1.8.14
	// Inputs is the first 12 hex digits of the image's inputs digest
	// (build.InputsDigest), e.g. 3f2a9c0b1d4e: the versioned tag changes
	// whenever anything that goes into the image changes.
	Inputs string
}

// InputsLen is how many hex digits of the inputs digest TagData.Inputs holds.
const InputsLen = 12

// tagRE is the OCI distribution tag grammar.
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// Render executes the tag template with d and checks the result is a valid
// OCI tag.
func (t Tag) Render(d TagData) (string, error) {
	tmpl, err := template.New("tag").Option("missingkey=error").Parse(t.Template)
	if err != nil {
		return "", fmt.Errorf("tag template %q: %w", t.Template, err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, d); err != nil {
		return "", fmt.Errorf("tag template %q: %w", t.Template, err)
	}
	if !tagRE.MatchString(b.String()) {
		return "", fmt.Errorf("tag template %q renders %q, not a valid tag (want [A-Za-z0-9_][A-Za-z0-9_.-]{0,127})", t.Template, b.String())
	}
	return b.String(), nil
}

// sampleTagData are used to check templates at load time: an immutable tag
// must change whenever code-server, Ray, Python or the inputs change.
var sampleTagData = []TagData{
	{CodeServer: "4.101.2", VSCode: "1.101.2", Ray: "2.46.0", RayMinor: "2.46", Python: "3.12", Debugpy: "1.8.14", Inputs: "0123456789ab"},
	{CodeServer: "4.102.0", VSCode: "1.102.0", Ray: "2.46.0", RayMinor: "2.46", Python: "3.12", Debugpy: "1.8.14", Inputs: "0123456789ab"},
	{CodeServer: "4.101.2", VSCode: "1.101.2", Ray: "2.47.1", RayMinor: "2.47", Python: "3.12", Debugpy: "1.8.14", Inputs: "0123456789ab"},
	{CodeServer: "4.101.2", VSCode: "1.101.2", Ray: "2.46.0", RayMinor: "2.46", Python: "3.11", Debugpy: "1.8.14", Inputs: "0123456789ab"},
}

// otherInputs replaces sampleTagData[0].Inputs to check how a template
// reacts to new inputs alone.
const otherInputs = "ba9876543210"
