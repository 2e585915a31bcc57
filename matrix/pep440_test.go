package matrix

import (
	"strings"
	"testing"
)

// Ray and debugpy constraints are PEP 440 specifiers; code-server's stays
// semver.
func TestPythonPackageConstraints(t *testing.T) {
	const base = `
image: {name: t, repositories: [localhost:5000/t]}
components:
  codeServer: {constraint: "CS"}
  ray: {constraint: "RAY", exclude: [RAYX]}
  debugpy: {constraint: "DBG"}
extensions:
  - {id: ms-python.python, source: marketplace}
tags:
  - template: "{{.CodeServer}}-ray{{.Ray}}-py{{.Python}}-{{.Inputs}}"
`
	tests := []struct {
		name, cs, ray, rayx, dbg string
		wantErr                  string
	}{
		{name: "PEP 440 operators", cs: ">=4.96.0", ray: "==2.46.0", rayx: "2.46.0.post1", dbg: "~=1.8, !=1.8.5"},
		{name: "wildcards and epochs", cs: "*", ray: "==2.*, !=2.40.*", rayx: "1!2.0", dbg: ">=1.8.0rc1"},
		{name: "semver caret is not PEP 440", cs: "*", ray: "*", rayx: "2.0", dbg: "^1.8",
			wantErr: `test.yaml:6: components.debugpy.constraint: bad version specifier "^1.8"`},
		{name: "or is not PEP 440", cs: "*", ray: ">=2.39 || <2", rayx: "2.0", dbg: "*",
			wantErr: `test.yaml:5: components.ray.constraint: bad version specifier ">=2.39 || <2"`},
		{name: "bad excluded version", cs: "*", ray: "*", rayx: "two", dbg: "*",
			wantErr: `test.yaml:5: components.ray.exclude[0]: bad version "two"`},
		{name: "code-server stays semver", cs: "~=4.96", ray: "*", rayx: "2.0", dbg: "*",
			wantErr: `test.yaml:4: components.codeServer.constraint: bad version constraint "~=4.96"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := strings.NewReplacer("CS", tc.cs, "RAYX", tc.rayx, "RAY", tc.ray, "DBG", tc.dbg).Replace(base)
			_, err := Parse("test.yaml", []byte(y))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Fatalf("Parse error = %v, want prefix %q", err, tc.wantErr)
			}
		})
	}
}
