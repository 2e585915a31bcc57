package debug

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/imagectl/imagectl/debug/dashboard/dashboardtest"
	"github.com/imagectl/imagectl/debug/dashproxy"
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

// TestTokenAuthentication: when the head's Ray container runs with
// RAY_AUTH_MODE=token and RAY_AUTH_TOKEN from a Secret (as KubeRay's
// authOptions.mode token sets it), the proxy and the session's own
// dashboard URL both reach a dashboard that refuses requests without the
// token, and no event carries the token.
func TestTokenAuthentication(t *testing.T) {
	const token = "s3cr3t-t0ken-value"
	// The dashboard fake refuses a request without the token as Ray's
	// middleware does.
	upstream := dashboardtest.New()
	defer upstream.Close()
	upstream.SetAuthToken(token)
	head := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rc-head-x", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "ray-head",
		Env: []corev1.EnvVar{{Name: "RAY_AUTH_MODE", Value: "token"}, {Name: "RAY_AUTH_TOKEN", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "rc"}, Key: "auth_token"}}}},
	}}}}
	var events []Event
	newSession := func(objs ...runtime.Object) *session {
		return &session{o: Options{Local: true}, c: &Cluster{Namespace: "ns", Core: clientsetCore{kubefake.NewSimpleClientset(objs...)}}, cluster: "rc",
			r: ReporterFunc(func(e Event) { events = append(events, e) })}
	}

	s := newSession(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "ns"}, Data: map[string][]byte{"auth_token": []byte(token + "\n")}})
	tok, err := s.rayAuthToken(t.Context(), head)
	if err != nil || tok != token {
		t.Fatalf("rayAuthToken = %q, %v: want the Secret's token", tok, err)
	}
	proxyURL, sessionURL, stop, err := s.startLocal(strings.TrimPrefix(upstream.URL, "http://"), tok)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// Without --local (the sidecar mode) the session's requests go
	// through the same header-adding proxy.
	sidecarURL, stopSidecar, err := sessionProxy(upstream.URL, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer stopSidecar()
	if plain, stopPlain, err := sessionProxy(upstream.URL, ""); err != nil || plain != upstream.URL {
		t.Errorf("sessionProxy without a token = %q, %v; want the dashboard's own URL", plain, err)
	} else {
		stopPlain()
	}
	for _, c := range []struct {
		name, url string
		want      int
	}{
		{"the dashboard itself, without the token", upstream.URL, http.StatusUnauthorized},
		{"--local's proxy", proxyURL, http.StatusOK},
		{"--local's session URL", sessionURL, http.StatusOK},
		{"the sidecar mode's session URL", sidecarURL, http.StatusOK},
	} {
		resp, err := http.Get(c.url + "/cluster_id")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: GET %s/cluster_id: %d, want %d", c.name, c.url, resp.StatusCode, c.want)
		}
	}
	for _, e := range events {
		if b, _ := json.Marshal(e); strings.Contains(string(b), token) {
			t.Errorf("event carries the token: %s", b)
		}
	}

	// Without the Secret: the error names it and the permission.
	_, err = newSession().rayAuthToken(t.Context(), head)
	if err == nil || !strings.Contains(err.Error(), "Secret rc in namespace ns") || !strings.Contains(err.Error(), `"get" on secrets`) {
		t.Errorf("got %v: want an error naming the Secret and the permission", err)
	}
	// Without token authentication: no token, no Secret read.
	head.Spec.Containers[0].Env = nil
	if tok, err := newSession().rayAuthToken(t.Context(), head); tok != "" || err != nil {
		t.Errorf("no RAY_AUTH_MODE: got %q, %v; want nothing", tok, err)
	}
}

// TestTunnelForAGonePod: a paused worker whose IP no running Pod of the
// cluster has any more is named, with no tunnel opened.
func TestTunnelForAGonePod(t *testing.T) {
	ended := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rc-workers-worker-old", Namespace: "ns", Labels: map[string]string{"ray.io/cluster": "rc"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-worker"}}}, Status: corev1.PodStatus{Phase: corev1.PodFailed, PodIP: "10.0.0.9"}}
	s := &session{o: Options{Local: true}, c: &Cluster{Namespace: "ns", Core: clientsetCore{kubefake.NewSimpleClientset(ended)}}, cluster: "rc"}
	ts := newTunnels(s)
	defer ts.closeAll()
	_, _, err := ts.Tunnel(t.Context(), dashproxy.Worker{WorkerID: "w1", IP: "10.0.0.9", DebuggerPort: 41000, NumPausedThreads: 1})
	want := "no running Pod of RayCluster rc in namespace ns has the paused worker's IP 10.0.0.9: its Pod is gone"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	if len(ts.open) != 0 {
		t.Errorf("tunnels open: %v", ts.open)
	}
}
