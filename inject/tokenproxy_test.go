package inject_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/imagectl/imagectl/debug/dashboard"
	fakedash "github.com/imagectl/imagectl/debug/dashboard/dashboardtest"
	"github.com/imagectl/imagectl/inject"
	"github.com/imagectl/imagectl/internal/syncbuf"
	"github.com/imagectl/imagectl/internal/testutil"
)

func requirePython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		testutil.SkipOrFail(t, "no python3 on PATH: the sidecar's token proxy is a Python script, run here as the image's python3 runs it")
	}
}

var listeningRE = regexp.MustCompile(`listening on (127\.0\.0\.1:\d+),`)

// startTokenProxy runs inject.TokenProxyScript as the sidecar does, on a
// free loopback port, in front of upstream (host:port); it returns the
// proxy's base URL and its stderr.
func startTokenProxy(t *testing.T, upstream, tokenFile string) (string, *syncbuf.Buffer) {
	t.Helper()
	requirePython(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "python3", "-c", inject.TokenProxyScript, "127.0.0.1:0", upstream, tokenFile)
	stderr := &syncbuf.Buffer{}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); pw.Close(); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case addr := <-found:
		return "http://" + addr, stderr
	case <-done:
		t.Fatalf("the token proxy exited before listening: %s", stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("the token proxy did not say where it listens within 20s: %s", stderr)
	}
	return "", nil
}

func fetchBody(t *testing.T, method, url string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

const proxyToken = "dG9rZW4tb2YtdGhlLXJheS1jbHVzdGVyLWZvci10ZXN0cw=="

// TestTokenProxyCarriesTheExtensionsQueries: against a dashboard that
// refuses requests without the token as Ray's middleware does, the exact
// queries the debugger extension sends (the paused workers, one worker,
// its running tasks, the job) succeed through the sidecar's proxy and are
// answered byte for byte as the dashboard answers a request that carries
// the token; without the proxy they are refused; the proxy's own token wins
// over one a client sends; a rotated token is followed.
func TestTokenProxyCarriesTheExtensionsQueries(t *testing.T) {
	fake := fakedash.New()
	defer fake.Close()
	fake.SetAuthToken(proxyToken)
	fake.SetWorkers(
		fakedash.Worker{WorkerID: "w1", IsAlive: true, WorkerType: "WORKER", IP: "10.1.2.3", DebuggerPort: 41234, NumPausedThreads: 1},
		fakedash.Worker{WorkerID: "w2", IsAlive: true, WorkerType: "WORKER", IP: "10.1.2.4"},
	)
	fake.SetTasks(fakedash.Task{TaskID: "t1", Name: "f", State: "RUNNING", Type: "NORMAL_TASK", WorkerID: "w1", FuncOrClassName: "f"})
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(proxyToken+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	proxy, stderr := startTokenProxy(t, fake.Address(), tokenFile)

	uris := []string{
		"/api/v0/workers?" + dashboard.PausedWorkersQuery,
		"/api/v0/workers?" + dashboard.WorkerQuery("w1"),
		"/api/v0/tasks?" + dashboard.RunningTasksQuery("w1"),
		"/cluster_id",
		"/api/version",
	}
	for _, uri := range uris {
		status, _, body := fetchBody(t, "GET", fake.URL+uri)
		if status != http.StatusUnauthorized || body != fakedash.MissingTokenBody {
			t.Errorf("GET %s straight to the dashboard: %d %q, want it refused (401 %q)", uri, status, body, fakedash.MissingTokenBody)
		}
		_, _, want := fetchBody(t, "GET", fake.URL+uri, "X-Ray-Authorization", "Bearer "+proxyToken)
		status, hdr, got := fetchBody(t, "GET", proxy+uri)
		if status != http.StatusOK || got != want {
			t.Errorf("GET %s through the proxy: %d %q, want 200 and the dashboard's answer %q", uri, status, got, want)
		}
		if ct := hdr.Get("Content-Type"); ct != "application/json" {
			t.Errorf("GET %s through the proxy: Content-Type %q, want the dashboard's application/json", uri, ct)
		}
	}
	// The debugger's own client, as the attach probe uses it.
	c, err := dashboard.New(proxy)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := c.PausedWorkers(context.Background())
	if err != nil || len(ws) != 1 || ws[0].WorkerID != "w1" || ws[0].IP != "10.1.2.3" || ws[0].DebuggerPort != 41234 {
		t.Errorf("PausedWorkers through the proxy: %+v, %v; want w1 at 10.1.2.3:41234 unchanged", ws, err)
	}
	// A client's own credential does not override the proxy's.
	if status, _, body := fetchBody(t, "GET", proxy+"/cluster_id", "Authorization", "Bearer wrong", "X-Ray-Authorization", "Bearer wrong"); status != http.StatusOK {
		t.Errorf("a client's wrong Authorization through the proxy: %d %q, want 200", status, body)
	}
	// HEAD goes through; a write is refused by the proxy and never reaches the dashboard.
	if status, hdr, body := fetchBody(t, "HEAD", proxy+"/cluster_id"); status != http.StatusOK || body != "" || hdr.Get("Content-Length") == "" {
		t.Errorf("HEAD /cluster_id through the proxy: %d, Content-Length %q, body %q; want 200, the dashboard's length and no body", status, hdr.Get("Content-Length"), body)
	}
	before := len(fake.Requests())
	status, hdr, body := fetchBody(t, "POST", proxy+"/api/jobs/")
	if status != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET, HEAD" || !strings.Contains(body, "only GET and HEAD") {
		t.Errorf("POST /api/jobs/ through the proxy: %d (Allow %q) %q, want 405", status, hdr.Get("Allow"), body)
	}
	if after := fake.Requests(); len(after) != before {
		t.Errorf("the refused POST reached the dashboard: %q", after[before:])
	}
	// A rotated Secret (updated in place) is followed.
	const rotated = "cm90YXRlZC10b2tlbg=="
	fake.SetAuthToken(rotated)
	if err := os.Chmod(tokenFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte(rotated), 0o400); err != nil {
		t.Fatal(err)
	}
	if status, _, body := fetchBody(t, "GET", proxy+"/api/v0/workers?"+dashboard.PausedWorkersQuery); status != http.StatusOK {
		t.Errorf("after the token changed: %d %q, want 200", status, body)
	}
	if out := stderr.String(); strings.Contains(out, proxyToken) || strings.Contains(out, rotated) {
		t.Errorf("the proxy's log holds the token:\n%s", out)
	}
	if out := stderr.String(); strings.Count(out, "\n") != 1 || !strings.Contains(out, tokenFile) {
		t.Errorf("the proxy's log: %q, want the one line saying where it listens and naming the token file, and no request", out)
	}
}

// TestTokenProxyFailures: a missing or empty token file stops the proxy at
// once with a message naming the file; a dashboard that cannot be reached
// is a 502 naming it; no message holds the token.
func TestTokenProxyFailures(t *testing.T) {
	requirePython(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o400); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{filepath.Join(dir, "missing"), "No such file or directory"},
		{empty, "is empty"},
	} {
		cmd := exec.Command("python3", "-c", inject.TokenProxyScript, "127.0.0.1:0", "127.0.0.1:1", tc.file)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("token file %s: %v, want exit status 1\n%s", tc.file, err, out)
		}
		if !strings.Contains(string(out), "cannot read the Ray token") || !strings.Contains(string(out), tc.file) || !strings.Contains(string(out), tc.want) {
			t.Errorf("token file %s: %q, want a message naming the file and saying %q", tc.file, out, tc.want)
		}
	}

	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(proxyToken), 0o400); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: bind one and close it.
	down := fakedash.New()
	addr := down.Address()
	down.Close()
	proxy, stderr := startTokenProxy(t, addr, tokenFile)
	status, _, body := fetchBody(t, "GET", proxy+"/api/v0/workers?"+dashboard.PausedWorkersQuery)
	if status != http.StatusBadGateway || !strings.Contains(body, "dashboard at "+addr) || strings.Contains(body, "filter_keys") {
		t.Errorf("dashboard down: %d %q, want a 502 naming the dashboard (and not the query)", status, body)
	}
	// The token file disappears (a deleted Secret): a 502 naming it.
	if err := os.Remove(tokenFile); err != nil {
		t.Fatal(err)
	}
	status, _, body = fetchBody(t, "GET", proxy+"/cluster_id")
	if status != http.StatusBadGateway || !strings.Contains(body, tokenFile) {
		t.Errorf("token file gone: %d %q, want a 502 naming %s", status, body, tokenFile)
	}
	if strings.Contains(stderr.String()+body, proxyToken) {
		t.Errorf("a message holds the token:\n%s\n%s", stderr, body)
	}
}
