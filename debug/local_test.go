package debug

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteLaunchKeepsTheUsersConfigurations(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".vscode", "launch.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	user := `{"version": "0.2.0", "compounds": [], "configurations": [{"name": "mine", "type": "debugpy", "request": "launch", "program": "x.py", "port": 5678}, {"name": "imagectl: task old on Pod gone, debugpy at 10.0.0.9:1", "type": "debugpy"}]}`
	if err := os.WriteFile(path, []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}
	paused := []*PausedTask{
		{WorkerID: "b", Name: "on_worker", IP: "10.0.0.6", Port: 41002, Pod: "w-1", NodeType: "worker", Local: "127.0.0.1:50002"},
		{WorkerID: "a", Name: "on_head", IP: "10.0.0.5", Port: 41001, Pod: "h-1", NodeType: "head", Local: "127.0.0.1:50001"},
	}
	if err := writeLaunch(path, paused, "/src"); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(mustRead(t, path), &got); err != nil {
		t.Fatal(err)
	}
	attach := func(name string, port int) map[string]any {
		return map[string]any{
			"name": name, "type": "debugpy", "request": "attach", "justMyCode": false,
			"connect": map[string]any{"host": "127.0.0.1", "port": float64(port)},
			"pathMappings": []any{
				map[string]any{"localRoot": "/src", "remoteRoot": "."},
				map[string]any{"localRoot": "/src", "remoteRoot": "/src"},
			},
		}
	}
	want := map[string]any{
		"version": "0.2.0", "compounds": []any{},
		"configurations": []any{
			map[string]any{"name": "mine", "type": "debugpy", "request": "launch", "program": "x.py", "port": float64(5678)},
			attach("imagectl: task on_head on Pod h-1 (head), debugpy at 10.0.0.5:41001", 50001),
			attach("imagectl: task on_worker on Pod w-1 (worker), debugpy at 10.0.0.6:41002", 50002),
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("launch.json (-want +got):\n%s", diff)
	}
	// Every task resumed: the user's configuration alone is left.
	if err := writeLaunch(path, nil, "/src"); err != nil {
		t.Fatal(err)
	}
	got = nil
	if err := json.Unmarshal(mustRead(t, path), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want["configurations"].([]any)[:1], got["configurations"]); diff != "" {
		t.Errorf("launch.json after the resumes (-want +got):\n%s", diff)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".vscode", ".launch-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestWriteLaunchRefusesAFileWithComments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "launch.json")
	orig := "{\n  // mine\n  \"configurations\": []\n}\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	err := writeLaunch(path, []*PausedTask{{WorkerID: "a", Local: "127.0.0.1:1"}}, "/src")
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "comments") {
		t.Errorf("got %v: want a refusal naming the file and why", err)
	}
	if string(mustRead(t, path)) != orig {
		t.Error("the file was changed")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
