package imagespec_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// homes are the packages (directories under the module root) where a fact
// may be spelled out; everywhere else it must be used through them.
var homes = []struct {
	what string
	home string // directory
	// literal reports whether a Go string literal spells the fact out.
	literal func(s string) bool
}{
	{"an in-toto predicate type", "imagespec", func(s string) bool {
		return s == "https://spdx.dev/Document" || s == "https://cyclonedx.org/bom" || strings.HasPrefix(s, "https://slsa.dev/provenance/")
	}},
	{"the in-toto predicate-type annotation", "imagespec", func(s string) bool { return s == "in-toto.io/predicate-type" }},
	{"PEP 503 name normalisation", "imagespec", func(s string) bool { return strings.Contains(s, "[-_.]+") }},
	{"linux/arm64's default variant", "imagespec", func(s string) bool { return strings.Contains(s, "arm64/v8") }},
	{"a Python runtime name", "imagespec", func(s string) bool { return s == "standalone" }},
	{"an in-toto statement or DSSE envelope field", "attest", func(s string) bool {
		return strings.Contains(s, `json:"predicateType"`) || strings.Contains(s, `json:"payloadType"`)
	}},
}

// TestOneHome: each fact of homes is spelled out in its home package only
// (test files and tests/ aside: they build what they check).
func TestOneHome(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../"))
		if d.IsDir() {
			switch {
			case strings.HasPrefix(d.Name(), ".") && path != "..", d.Name() == "testdata", rel == "tests":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		dir := filepath.ToSlash(filepath.Dir(rel))
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, h := range homes {
				if dir != h.home && h.literal(s) {
					t.Errorf("%s: %s spelled out (%s); use package %s", fset.Position(lit.Pos()), h.what, lit.Value, h.home)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d production Go files, want the module's", files)
	}
}
