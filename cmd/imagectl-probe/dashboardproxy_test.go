package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
	smokedash "github.com/imagectl/imagectl/debug/dashboard"
	"github.com/imagectl/imagectl/inject"
	"github.com/imagectl/imagectl/internal/fakes/dashboard"
	"github.com/imagectl/imagectl/internal/testutil"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var proxyListening = regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)

// waitListening waits for a proxy's "listening on" line in its stderr.
func waitListening(t *testing.T, stderr *syncBuffer, exited <-chan struct{}) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if m := proxyListening.FindStringSubmatch(stderr.String()); m != nil {
			return "http://" + m[1]
		}
		select {
		case <-exited:
			t.Fatalf("the proxy exited before listening: %s", stderr)
		case <-deadline:
			t.Fatalf("the proxy did not listen within 20s: %s", stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startProbeProxy runs imagectl-probe dashboard-proxy until the test ends;
// it returns its URL, its stderr and a function that stops it and returns
// its exit code.
func startProbeProxy(t *testing.T, args ...string) (string, *syncBuffer, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncBuffer{}
	exited := make(chan struct{})
	var code int
	go func() {
		code = run(ctx, append([]string{"dashboard-proxy", "--listen", "127.0.0.1:0"}, args...), io.Discard, stderr)
		close(exited)
	}()
	stop := func() int { cancel(); <-exited; return code }
	t.Cleanup(func() { stop() })
	return waitListening(t, stderr, exited), stderr, stop
}

// startPythonProxy runs inject's Python twin as the sidecar does.
func startPythonProxy(t *testing.T, upstream, tokenFile string) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		testutil.SkipOrFail(t, "no python3 on PATH: inject's token proxy is a Python script")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "python3", "-c", inject.TokenProxyScript, "127.0.0.1:0", upstream, tokenFile)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	return waitListening(t, stderr, exited)
}

type answer struct {
	status int
	ctype  string
	body   string
	allow  string
}

func send(t *testing.T, method, url string, header ...string) answer {
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
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), string(b), resp.Header.Get("Allow")}
}

const token = "cHJvYmUtdG9rZW4tZm9yLXRoZS1yYXktY2x1c3Rlcg=="

// TestDashboardProxyCarriesTheExtensionsQueries: against a dashboard that
// refuses requests without the token as Ray's middleware does, the
// extension's queries succeed through imagectl-probe dashboard-proxy,
// answered as the dashboard answers them with the token, and as inject's
// Python proxy in the sidecar answers them; writes get 405 from both and
// never reach the dashboard; the token is never printed.
func TestDashboardProxyCarriesTheExtensionsQueries(t *testing.T) {
	d := dashboard.New()
	t.Cleanup(d.Close)
	d.SetAuthToken(token)
	d.SetWorkers(dashboard.Worker{WorkerID: "w1", IsAlive: true, WorkerType: "WORKER", IP: "10.0.0.9", DebuggerPort: 40000, NumPausedThreads: 1})
	d.SetTasks(dashboard.Task{TaskID: "t1", Name: "f", State: "RUNNING", Type: "NORMAL_TASK", WorkerID: "w1", FuncOrClassName: "f"})
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	proxy, stderr, stop := startProbeProxy(t, "--upstream", d.URL, "--token-file", tokenFile)
	py := startPythonProxy(t, d.Address(), tokenFile)

	for _, uri := range []string{
		"/api/v0/workers?" + smokedash.PausedWorkersQuery,
		"/api/v0/workers?" + smokedash.WorkerQuery("w1"),
		"/api/v0/tasks?" + smokedash.RunningTasksQuery("w1"),
		"/cluster_id",
	} {
		if a := send(t, "GET", d.URL+uri); a.status != http.StatusUnauthorized || a.body != dashboard.MissingTokenBody {
			t.Errorf("GET %s without the proxy: %+v, want 401 %q", uri, a, dashboard.MissingTokenBody)
		}
		want := send(t, "GET", d.URL+uri, "X-Ray-Authorization", "Bearer "+token)
		if got := send(t, "GET", proxy+uri, "Authorization", "Bearer not-the-token"); got != want || got.status != http.StatusOK {
			t.Errorf("GET %s through dashboard-proxy: %+v, want the dashboard's %+v", uri, got, want)
		}
		if got := send(t, "GET", py+uri, "Authorization", "Bearer not-the-token"); got != want {
			t.Errorf("GET %s through inject's Python proxy: %+v, want the dashboard's %+v", uri, got, want)
		}
	}
	c, err := smokedash.New(proxy)
	if err != nil {
		t.Fatal(err)
	}
	if ws, err := c.PausedWorkers(context.Background()); err != nil || len(ws) != 1 || ws[0].IP != "10.0.0.9" || ws[0].DebuggerPort != 40000 {
		t.Errorf("PausedWorkers through dashboard-proxy: %+v, %v", ws, err)
	}
	before := len(d.Requests())
	for _, base := range []string{proxy, py} {
		a := send(t, "POST", base+"/api/jobs/")
		if a.status != http.StatusMethodNotAllowed || a.allow != "GET, HEAD" || !strings.Contains(a.body, "only GET and HEAD") {
			t.Errorf("POST /api/jobs/ through %s: %+v, want 405", base, a)
		}
	}
	if after := d.Requests(); len(after) != before {
		t.Errorf("a refused POST reached the dashboard: %q", after[before:])
	}
	if code := stop(); code != base.ExitInterrupted {
		t.Errorf("stopped: exit %d, want %d", code, base.ExitInterrupted)
	}
	if out := stderr.String(); strings.Contains(out, token) || !strings.Contains(out, tokenFile) {
		t.Errorf("stderr %q: want the file named and no token", out)
	}
}

// TestDashboardProxyFailures: no --token-file is a usage error (2); a
// missing or empty token file exits 1 naming it, before listening; a
// dashboard that cannot be reached is a 502 naming it.
func TestDashboardProxyFailures(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"dashboard-proxy"}, &out, &errOut); code != base.ExitUsage || !strings.Contains(errOut.String(), "token-file") {
		t.Errorf("no --token-file: exit %d, stderr %q; want 2 naming the flag", code, errOut.String())
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(dir, "missing"), empty} {
		errOut.Reset()
		code := run(context.Background(), []string{"dashboard-proxy", "--listen", "127.0.0.1:0", "--token-file", f}, &out, &errOut)
		if code != base.ExitFailure || !strings.Contains(errOut.String(), f) || strings.Contains(errOut.String(), "listening") {
			t.Errorf("token file %s: exit %d, stderr %q; want 1 naming it, before listening", f, code, errOut.String())
		}
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	down := dashboard.New()
	url := down.URL
	down.Close()
	proxy, stderr, _ := startProbeProxy(t, "--upstream", url, "--token-file", tokenFile)
	a := send(t, "GET", proxy+"/api/v0/workers?"+smokedash.PausedWorkersQuery)
	if a.status != http.StatusBadGateway || !strings.Contains(a.body, "dashboard at "+url) {
		t.Errorf("dashboard down: %+v, want a 502 naming it", a)
	}
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		if strings.Contains(sc.Text(), token) {
			t.Errorf("stderr line holds the token: %q", sc.Text())
		}
	}
}
