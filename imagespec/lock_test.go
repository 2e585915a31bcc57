package imagespec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func testSet() Set {
	return Set{
		CodeServer: CodeServer{Version: "4.101.2", VSCode: "1.101.2", Base: "lscr.io/linuxserver/code-server:4.101.2",
			IndexDigest: "sha256:aa", Platforms: map[string]string{"linux/arm64": "sha256:bb", "linux/amd64": "sha256:cc"}},
		Ray: "2.46.0", Python: "3.12", RayPythons: []string{"3.11", "3.12"}, Debugpy: "1.8.14",
		Platforms: []string{"linux/amd64", "linux/arm64"},
		Extensions: []Extension{{ID: "ms-python.python", Version: "2025.10.0", Source: "marketplace", Engine: "^1.95.0",
			Files: map[string]File{"linux/amd64": {TargetPlatform: "linux-x64", URL: "https://example.com/a.vsix", SHA256: "11"}}}},
		ToolsImage:    "python:3.12-slim@sha256:dd",
		PythonRuntime: &PythonRuntime{Version: "3.12.11", Release: "20250808", Files: map[string]RuntimeFile{"linux/amd64": {URL: "https://example.com/p.tgz", SHA256: "ee"}}},
		PythonLocks:   map[string][]PythonDist{"linux/amd64": {{Name: "ray", Version: "2.46.0", Filename: "ray.whl", URL: "https://example.com/ray.whl", SHA256: "ff"}}},
	}
}

// TestEncodeLock pins the lock's bytes: they are a label of every image and
// go into the inputs digest, so a change here changes every image digest.
func TestEncodeLock(t *testing.T) {
	want := `{"codeServer":{"version":"4.101.2","vscode":"1.101.2","base":"lscr.io/linuxserver/code-server:4.101.2","indexDigest":"sha256:aa","platforms":{"linux/amd64":"sha256:cc","linux/arm64":"sha256:bb"}},` +
		`"ray":"2.46.0","python":"3.12","rayPythons":["3.11","3.12"],"debugpy":"1.8.14","platforms":["linux/amd64","linux/arm64"],` +
		`"extensions":[{"id":"ms-python.python","version":"2025.10.0","source":"marketplace","engine":"^1.95.0","files":{"linux/amd64":{"targetPlatform":"linux-x64","url":"https://example.com/a.vsix","sha256":"11"}}}],` +
		`"toolsImage":"python:3.12-slim@sha256:dd",` +
		`"pythonRuntime":{"version":"3.12.11","release":"20250808","files":{"linux/amd64":{"url":"https://example.com/p.tgz","sha256":"ee"}}},` +
		`"pythonLocks":{"linux/amd64":[{"name":"ray","version":"2.46.0","filename":"ray.whl","url":"https://example.com/ray.whl","sha256":"ff"}]}}`
	if diff := cmp.Diff(want, string(EncodeLock(testSet()))); diff != "" {
		t.Errorf("EncodeLock (-want +got):\n%s", diff)
	}
	// Empty optional fields stay out; tags are written when set.
	got := string(EncodeLock(Set{Ray: "2.46.0", Tags: []string{"a"}}))
	if want := `{"codeServer":{"version":"","vscode":"","base":""},"ray":"2.46.0","python":"","rayPythons":null,"debugpy":"","platforms":null,"extensions":null,"tags":["a"]}`; got != want {
		t.Errorf("EncodeLock(minimal) = %s, want %s", got, want)
	}
}

func TestDecodeLock(t *testing.T) {
	set := testSet()
	set.Tags = []string{"4.101.2-ray2.46.0-py3.12-0123456789ab"}
	raw := string(EncodeLock(set))
	got, err := DecodeLock(raw)
	if err != nil {
		t.Fatalf("DecodeLock(EncodeLock(set)): %v", err)
	}
	if diff := cmp.Diff(set, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := DecodeLock(" \n" + raw + "\n "); err != nil {
		t.Errorf("DecodeLock with surrounding white space: %v", err)
	}
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"empty", "", "empty"},
		{"blank", "  ", "empty"},
		{"null", "null", "null"},
		{"array", "[]", "cannot unmarshal array"},
		{"string", `"lock"`, "cannot unmarshal string"},
		{"unknown field", `{"ray":"2.46.0","rayy":"2.47.0"}`, `unknown field "rayy"`},
		{"unknown nested field", `{"codeServer":{"version":"4.101.2","bass":"x"}}`, `unknown field "bass"`},
		{"wrong type", `{"ray":2}`, "cannot unmarshal number"},
		{"trailing object", raw + `{}`, "data after the JSON object"},
		{"trailing text", raw + ` x`, "data after the JSON object"},
		{"truncated", raw[:len(raw)-1], "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeLock(tc.raw)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("DecodeLock(%.40q) = %v, want an error containing %q", tc.raw, err, tc.want)
			}
		})
	}
}
