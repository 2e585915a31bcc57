package contract_test

import (
	"strings"
	"testing"

	"github.com/imagectl/imagectl/extensions/contract"
)

// FuzzCheck: any script and package.json (a VSIX is upstream input) give
// differences, never a panic or a hang.
func FuzzCheck(f *testing.F) {
	pj, js := readShape(f)
	f.Add(pj, js)
	f.Add(`{"contributes":{"configuration":{"properties":{}}}}`, `const i={request:"attach",pathMappings:[{localRoot:`)
	f.Add(`[]`, "`http://${e}/api/v0/workers?${`")
	f.Add(`{}`, `x.localRoot??"${workspaceFolder}";{request:'attach',connect:{host:"\`)
	f.Fuzz(func(t *testing.T, pj, js string) {
		contract.Check([]byte(pj), "extension/dist/extension.js", []byte(js))
	})
}

// TestTruncatedScripts: the stand-in cut at every offset (unclosed
// strings, templates and literals) gives differences, never a panic or a
// hang.
func TestTruncatedScripts(t *testing.T) {
	pj, js := readShape(t)
	for i := range len(js) {
		contract.Check([]byte(pj), "extension/dist/extension.js", []byte(js[:i]))
		contract.Check([]byte(pj), "extension/dist/extension.js", []byte(js[i:]))
	}
}

// TestUnbalancedLiteral: an attach object whose list is closed by a brace
// (found by FuzzCheck: it looped for ever) is a difference.
func TestUnbalancedLiteral(t *testing.T) {
	ds := contract.Check([]byte(`{}`), "extension/dist/extension.js", []byte(`const i={request:"attach",pathMappings:[a}`))
	found := false
	for _, d := range ds {
		found = found || d.Item == "attach configuration" && strings.Contains(d.Detail, "does not parse as an object literal")
	}
	if !found {
		t.Errorf("differences %q, want the attach configuration named as not parsing", ds)
	}
}
