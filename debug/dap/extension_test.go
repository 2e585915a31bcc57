package dap

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExtensionAttachArguments(t *testing.T) {
	want := map[string]any{
		"name": "Python: Remote Attach", "type": "python", "request": "attach",
		"connect": map[string]any{"host": "10.0.0.5", "port": 43123}, "justMyCode": false,
		"pathMappings": []any{
			map[string]any{"localRoot": "", "remoteRoot": "."},
			map[string]any{"localRoot": "", "remoteRoot": ""},
		},
	}
	if diff := cmp.Diff(want, ExtensionAttachArguments("10.0.0.5", 43123, "")); diff != "" {
		t.Errorf("attach arguments (-want +got):\n%s", diff)
	}
}
