package build

import (
	"os"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/imagespec"
)

// A package index URL with userinfo is refused: PIP_INDEX_URL is a build
// argument, recorded in the image's history and provenance. The error
// names the index without the password.
func TestRenderRefusesIndexCredentials(t *testing.T) {
	def, err := os.ReadFile("../dockerfiles/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, idx := range []string{"https://user:s3cret@idx.example/simple", "http://tok3n@idx.example/simple"} {
		out, err := Render(def, Params{ToolsImage: "x", PackageIndex: idx, PythonRuntime: imagespec.PythonRuntimeBase})
		if err == nil {
			t.Errorf("%s: rendered, want an error; PIP_INDEX_URL line: %q", idx, pipIndexLine(out))
			continue
		}
		if !strings.Contains(err.Error(), "carries credentials") || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "tok3n") {
			t.Errorf("%s: error %q, want one saying it carries credentials without showing them", idx, err)
		}
	}
}

func pipIndexLine(def []byte) string {
	for _, l := range strings.Split(string(def), "\n") {
		if strings.Contains(l, "PIP_INDEX_URL=") {
			return l
		}
	}
	return ""
}
