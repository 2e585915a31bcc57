package matrix

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode/utf8"
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

// Bounds of tag templates: an OCI tag is at most 128 bytes, so a template
// (text plus {{.Field}} references) longer than twice that cannot be one.
const (
	maxTagLen      = 128
	maxTemplateLen = 2 * maxTagLen
)

// tagRE is the OCI distribution tag grammar.
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// tagFields are the field names of TagData, the only thing a template may
// reference.
var tagFields = func() []string {
	t := reflect.TypeFor[TagData]()
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		out = append(out, t.Field(i).Name)
	}
	return out
}()

// Render executes the tag template with d and checks the result is a valid
// OCI tag. A template is text and {{.Field}} references to TagData fields
// only: no functions (printf with a huge width could exhaust memory), no
// pipelines, variables, conditionals, loops or nested templates. Rendering
// stops after 128 bytes, and errors quote at most the first 64 bytes of the
// template.
func (t Tag) Render(d TagData) (string, error) {
	tmpl, err := parseTag(t.Template)
	if err != nil {
		return "", err
	}
	var w limitedWriter
	if err := tmpl.Execute(&w, d); err != nil {
		if errors.Is(err, errTagTooLong) {
			return "", fmt.Errorf("tag template %s renders more than %d bytes, not a valid tag", quoteCut(t.Template), maxTagLen)
		}
		return "", fmt.Errorf("tag template %s: %w", quoteCut(t.Template), err)
	}
	s := w.b.String()
	if !tagRE.MatchString(s) {
		return "", fmt.Errorf("tag template %s renders %s, not a valid tag (want [A-Za-z0-9_][A-Za-z0-9_.-]{0,127})", quoteCut(t.Template), quoteCut(s))
	}
	return s, nil
}

// parseTag parses a tag template and rejects anything but text and
// {{.Field}} references to TagData fields.
func parseTag(text string) (*template.Template, error) {
	if len(text) > maxTemplateLen {
		return nil, fmt.Errorf("tag template %s: %d bytes, want at most %d (a tag is at most %d)", quoteCut(text), len(text), maxTemplateLen, maxTagLen)
	}
	tmpl, err := template.New("tag").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("tag template %s: %s", quoteCut(text), cut(err.Error(), 200))
	}
	if len(tmpl.Templates()) > 1 {
		return nil, fmt.Errorf("tag template %s: {{define}} and {{block}} are not allowed (want text and {{.Field}} references)", quoteCut(text))
	}
	if tmpl.Tree == nil || tmpl.Tree.Root == nil {
		return nil, fmt.Errorf("tag template %s: empty, not a valid tag", quoteCut(text))
	}
	for _, n := range tmpl.Tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			continue
		case *parse.ActionNode:
			if field := fieldRef(n); field != "" {
				if !slices.Contains(tagFields, field) {
					return nil, fmt.Errorf("tag template %s: {{.%s}}: unknown field (want one of .%s)", quoteCut(text), cut(field, 32), strings.Join(tagFields, " ."))
				}
				continue
			}
		}
		return nil, fmt.Errorf("tag template %s: %s is not allowed: only text and {{.Field}} references (.%s), no functions, pipelines or control structures",
			quoteCut(text), quoteCut(n.String()), strings.Join(tagFields, " ."))
	}
	return tmpl, nil
}

// fieldRef returns Field for an action that is exactly {{.Field}}.
func fieldRef(n *parse.ActionNode) string {
	p := n.Pipe
	if p == nil || len(p.Decl) != 0 || p.IsAssign || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return ""
	}
	f, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
	if !ok || len(f.Ident) != 1 {
		return ""
	}
	return f.Ident[0]
}

var errTagTooLong = errors.New("tag too long")

// limitedWriter keeps at most maxTagLen bytes and fails beyond.
type limitedWriter struct{ b strings.Builder }

func (w *limitedWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > maxTagLen {
		return 0, errTagTooLong
	}
	return w.b.Write(p)
}

// quoteCut quotes untrusted text for an error, cut to 64 bytes.
func quoteCut(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(cut(s, max)) + fmt.Sprintf("... (%d bytes)", len(s))
}

// cut shortens s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
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
