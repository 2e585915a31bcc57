package resolve

import (
	"fmt"
	"strings"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/matrix"
)

// RenderTags renders matrix.yaml's tag templates for set, whose image has
// the inputs digest inputs ("sha256:<64 hex>", build.InputsDigest): the
// first InputsLen hex digits become {{.Inputs}}. The result lines up with
// cfg.Tags, each tag flagged floating as its template is. It is the only
// place tags are rendered: build (what --push writes) and release (what plan
// checks and release writes) both split its result with the imagespec.Tags
// methods.
func RenderTags(cfg *matrix.Config, set imagespec.Set, inputs string) (imagespec.Tags, error) {
	hex, ok := strings.CutPrefix(inputs, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("rendering tags: inputs digest %q is not sha256:<64 hex digits>", inputs)
	}
	d := matrix.TagData{
		CodeServer: set.CodeServer.Version, VSCode: set.CodeServer.VSCode,
		Ray: set.Ray, RayMinor: minorOf(set.Ray), Python: set.Python, Debugpy: set.Debugpy,
		Inputs: hex[:matrix.InputsLen],
	}
	tags := make(imagespec.Tags, 0, len(cfg.Tags))
	for _, t := range cfg.Tags {
		s, err := t.Render(d)
		if err != nil {
			return nil, err
		}
		tags = append(tags, imagespec.Tag{Name: s, Floating: t.Floating})
	}
	return tags, nil
}
