package debug

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/imagectl/imagectl/debug/dap"
	"github.com/imagectl/imagectl/debug/dashproxy"
	"github.com/imagectl/imagectl/internal/safefile"
)

// DefaultLocalPort is the local port of --local's dashboard proxy: the
// dashboard's own, so the extension's cluster entry stays 127.0.0.1:8265.
const DefaultLocalPort = 8265

// LaunchPrefix starts the name of every launch.json configuration a
// session writes; the others are kept as they are.
const LaunchPrefix = "imagectl: "

// access is one permission --local needs, and what for.
type access struct {
	verb, resource, subresource, group, why string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
	}
	return fmt.Sprintf("%q on %s (%s)", a.verb, r, a.why)
}

// localAccess is what a --local session does through the API server.
var localAccess = []access{
	{verb: "create", resource: "pods", subresource: "portforward", why: "the dashboard's port-forward"},
	{verb: "create", resource: "pods", subresource: "exec", why: "the relay to a paused task's debugpy, which listens on its Pod's IP only"},
	{verb: "list", resource: "pods", why: "finding the Pod of a paused task's IP"},
	{verb: "get", resource: "pods", why: "following the head Pod (a lost one is replaced)"},
	{verb: "get", resource: "rayclusters", group: "ray.io", why: "the cluster's state"},
}

// checkAccess asks the API server (SelfSubjectAccessReview) for each
// permission of want in the session's namespace and names the missing
// ones. When the review itself cannot be made it says so as a warning:
// the session then meets the refusal where it happens.
func (s *session) checkAccess(ctx context.Context, want []access) error {
	var missing []string
	for _, a := range want {
		r := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
			Namespace: s.c.Namespace, Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource,
		}}}
		got, err := s.c.Core.ReviewAccess(ctx, r)
		if err != nil {
			s.report(Event{Kind: KindWarning, Message: fmt.Sprintf("warning: could not check the permissions debug --local needs (SelfSubjectAccessReview: %v); it needs %s", err, accessList(want))})
			return nil
		}
		if !got.Status.Allowed {
			missing = append(missing, a.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("debug --local: in namespace %s you may not %s: ask for a Role granting them (nothing was applied)", s.c.Namespace, strings.Join(missing, "; "))
	}
	return nil
}

func accessList(as []access) string {
	var out []string
	for _, a := range as {
		out = append(out, a.String())
	}
	return strings.Join(out, ", ")
}

// tunnels keeps one Tunnel per paused worker (by ip:port), opened when the
// session or the proxy first sees the pause, closed when it resumes. It is
// the proxy's dashproxy.Tunneler.
type tunnels struct {
	s    *session
	mu   sync.Mutex
	open map[string]*Tunnel
	// released are tunnels whose task no longer shows as paused, kept for
	// the connections still open through them (closeAll ends those).
	released []*Tunnel
	// errs carries what goes wrong in the tunnels' and the proxy's
	// goroutines to the session's, which reports it.
	errs chan string
}

func newTunnels(s *session) *tunnels {
	return &tunnels{s: s, open: map[string]*Tunnel{}, errs: make(chan string, 32)}
}

func (ts *tunnels) problem(msg string) {
	select {
	case ts.errs <- msg:
	default: // the session reports what it has; a flood says no more
	}
}

// Tunnel returns the local address of w's tunnel, opening it.
func (ts *tunnels) Tunnel(ctx context.Context, w dashproxy.Worker) (string, int, error) {
	t, err := ts.get(ctx, w.IP, w.DebuggerPort)
	if err != nil {
		return "", 0, err
	}
	return "127.0.0.1", t.LocalPort, nil
}

func (ts *tunnels) get(ctx context.Context, ip string, port int) (*Tunnel, error) {
	key := net.JoinHostPort(ip, strconv.Itoa(port))
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t, ok := ts.open[key]; ok {
		return t, nil
	}
	pod := ts.s.podByIP(ctx, ip)
	if pod == nil {
		return nil, fmt.Errorf("no running Pod of RayCluster %s in namespace %s has the paused worker's IP %s: its Pod is gone", ts.s.cluster, ts.s.c.Namespace, ip)
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, fmt.Errorf("the Pod %s has no container to relay from", pod.Name)
	}
	container := pod.Spec.Containers[0].Name // KubeRay's Ray container
	t, err := ts.s.c.OpenTunnel(ctx, pod.Name, container, ip, port, 0, func(err error) { ts.problem(err.Error()) })
	if err != nil {
		return nil, err
	}
	ts.open[key] = t
	return t, nil
}

// release stops the tunnel of a task that no longer shows as paused from
// taking connections, leaving the open ones be: Ray stops listing a task
// as paused as soon as a client attaches (num_paused_threads counts the
// threads waiting for one), and that client's session goes on.
func (ts *tunnels) release(ip string, port int) {
	key := net.JoinHostPort(ip, strconv.Itoa(port))
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t := ts.open[key]; t != nil {
		t.Release()
		ts.released = append(ts.released, t)
		delete(ts.open, key)
	}
}

func (ts *tunnels) closeAll() {
	ts.mu.Lock()
	all := ts.released
	for _, t := range ts.open {
		all = append(all, t)
	}
	ts.open, ts.released = map[string]*Tunnel{}, nil
	ts.mu.Unlock()
	for _, t := range all {
		t.Close()
	}
}

// RayAuthHeader is the header KubeRay's dashboard client sends Ray's token
// in (dashboard_httpclient.go at v1.5.1); Ray's authentication middleware
// reads Authorization, then this one, then its cookie.
const RayAuthHeader = "X-Ray-Authorization"

// startLocal serves the dashboard proxy for --local in front of the
// dashboard's port-forward. With token authentication (token not empty)
// every request to the dashboard carries it, the proxy's and the
// session's own (through a second, plain proxy on a free port: sessionURL).
// The returned stop closes them and every tunnel.
func (s *session) startLocal(dashboardAddr, token string) (proxyURL, sessionURL string, stop func(), err error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.o.LocalPort)))
	if err != nil {
		return "", "", nil, fmt.Errorf("--local-port %d: the dashboard proxy cannot listen on 127.0.0.1:%d (%w): pass another port, or 0 for a free one", s.o.LocalPort, s.o.LocalPort, err)
	}
	upstream := "http://" + dashboardAddr
	s.tunnels = newTunnels(s)
	opts := []dashproxy.Option{dashproxy.WithErrorFunc(func(w dashproxy.Worker, err error) {
		s.tunnels.problem(fmt.Sprintf("the paused worker %s at %s:%d cannot be reached from here: %v", w.WorkerID, w.IP, w.DebuggerPort, err))
	})}
	if token != "" {
		opts = append(opts, dashproxy.WithHeader(RayAuthHeader, "Bearer "+token))
	}
	p, err := dashproxy.New(upstream, s.tunnels, opts...)
	if err != nil {
		ln.Close()
		return "", "", nil, err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go srv.Serve(ln)
	sessionURL, stopSession, err := sessionProxy(upstream, token)
	if err != nil {
		srv.Close()
		return "", "", nil, err
	}
	return "http://" + ln.Addr().String(), sessionURL, func() {
		srv.Close()
		stopSession()
		s.tunnels.closeAll()
	}, nil
}

// sessionProxy is the dashboard URL the session's own requests (State API,
// Jobs API) go to: upstream itself without token authentication (token
// ""), else a proxy on 127.0.0.1 that adds Ray's header with the token to
// each request; stop ends it.
func sessionProxy(upstream, token string) (sessionURL string, stop func(), err error) {
	if token == "" {
		return upstream, func() {}, nil
	}
	u, err := url.Parse(upstream)
	if err != nil {
		return "", nil, err
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Header.Set(RayAuthHeader, "Bearer "+token)
	}}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("the session's dashboard proxy: %w", err)
	}
	ss := &http.Server{Handler: rp, ReadHeaderTimeout: 30 * time.Second}
	go ss.Serve(sl)
	return "http://" + sl.Addr().String(), func() { ss.Close() }, nil
}

// rayAuthToken is the token of Ray's token authentication when the head's
// Ray container runs with it (RAY_AUTH_MODE=token, as KubeRay's
// authOptions.mode token sets it from v1.5.1, or the user's own env), read
// from RAY_AUTH_TOKEN: its value, or the Secret key it refers to (KubeRay's
// Secret named after the cluster, key auth_token). "" without token
// authentication. The token is never reported.
func (s *session) rayAuthToken(ctx context.Context, head *corev1.Pod) (string, error) {
	if len(head.Spec.Containers) == 0 {
		return "", nil
	}
	env := head.Spec.Containers[0].Env
	mode := ""
	for _, e := range env {
		if e.Name == "RAY_AUTH_MODE" {
			mode = e.Value
		}
	}
	if !strings.EqualFold(mode, "token") {
		return "", nil
	}
	for _, e := range env {
		if e.Name != "RAY_AUTH_TOKEN" {
			continue
		}
		if e.ValueFrom == nil {
			if e.Value != "" {
				return e.Value, nil
			}
			break
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref == nil {
			break
		}
		sec, err := s.c.Core.GetSecret(ctx, s.c.Namespace, ref.Name)
		if err != nil {
			return "", fmt.Errorf("the Ray cluster uses token authentication (RAY_AUTH_MODE=token in Pod %s): reading its token from Secret %s in namespace %s (ask for \"get\" on secrets): %w", head.Name, ref.Name, s.c.Namespace, err)
		}
		tok := strings.TrimSpace(string(sec.Data[ref.Key]))
		if tok == "" {
			return "", fmt.Errorf("the Ray cluster uses token authentication (RAY_AUTH_MODE=token in Pod %s), and Secret %s in namespace %s has no key %q", head.Name, ref.Name, s.c.Namespace, ref.Key)
		}
		s.report(Event{Kind: KindWarning, Pod: head.Name, Message: fmt.Sprintf("the Ray cluster uses token authentication: the dashboard proxy sends the token of Secret %s (key %s) with every request; it is not printed or stored", ref.Name, ref.Key)})
		return tok, nil
	}
	return "", fmt.Errorf("the Ray cluster uses token authentication (RAY_AUTH_MODE=token in Pod %s) but its Ray container has no RAY_AUTH_TOKEN to read the token from", head.Name)
}

// localRoot is where the user's own copies of the job's files are: the
// --local-root, else the --working-dir, else the current directory,
// absolute.
func (s *session) localRoot() string {
	root := s.o.LocalRoot
	if root == "" {
		root = s.o.WorkingDir
	}
	if root == "" {
		root = "."
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	return root
}

// LaunchConfig is the launch.json attach configuration of a paused task
// for ms-python.debugpy: the Ray Distributed Debugger extension's own
// (dap.ExtensionAttachArguments: justMyCode off, the worker's cwd, the
// job's working_dir, mapped to localRoot) at the tunnel's address.
func LaunchConfig(p *PausedTask, localRoot string) map[string]any {
	host, port := p.IP, p.Port
	if p.Local != "" {
		h, ps, err := net.SplitHostPort(p.Local)
		if n, perr := strconv.Atoi(ps); err == nil && perr == nil {
			host, port = h, n
		}
	}
	c := dap.ExtensionAttachArguments(host, port, localRoot)
	c["type"] = "debugpy"
	c["name"] = LaunchPrefix + p.String()
	return c
}

// writeLaunch writes the launch.json at path: the user's configurations as
// they were, and one per paused task. It refuses a file it cannot read as
// JSON (VS Code allows comments; the session does not rewrite them), and
// replaces the file in one rename.
func writeLaunch(path string, paused []*PausedTask, localRoot string) error {
	doc := map[string]any{"version": "0.2.0"}
	var keep []any
	data, err := safefile.ReadFile(path, 4<<20)
	switch {
	case err == nil:
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return fmt.Errorf("--write-launch %s: not plain JSON (%v): the session does not rewrite a file with comments; give another path", path, err)
		}
		cs, _ := doc["configurations"].([]any)
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok && strings.HasPrefix(fmt.Sprint(m["name"]), LaunchPrefix) {
				continue
			}
			keep = append(keep, c)
		}
	case errors.Is(err, os.ErrNotExist):
	default:
		return fmt.Errorf("--write-launch: %w", err)
	}
	sort.Slice(paused, func(i, j int) bool { return paused[i].WorkerID < paused[j].WorkerID })
	for _, p := range paused {
		keep = append(keep, LaunchConfig(p, localRoot))
	}
	if keep == nil {
		keep = []any{}
	}
	doc["configurations"] = keep
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("--write-launch: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".launch-*.json")
	if err != nil {
		return fmt.Errorf("--write-launch: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(out, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("--write-launch %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--write-launch %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--write-launch %s: %w", path, err)
	}
	return nil
}

// podByIP is the running Pod of the session's Ray cluster that has ip
// (its podIP or one of its podIPs), or nil. A Pod that has ended is
// skipped (its IP may be another Pod's now).
func (s *session) podByIP(ctx context.Context, ip string) *corev1.Pod {
	pods, err := s.c.Core.ListPods(ctx, s.c.Namespace, "ray.io/cluster="+s.cluster)
	if err != nil {
		return nil
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
			continue
		}
		has := p.Status.PodIP == ip
		for _, a := range p.Status.PodIPs {
			has = has || a.IP == ip
		}
		if has {
			return p
		}
	}
	return nil
}

// localPause opens the tunnel of a paused task and adds to its event the
// local address and the attach configuration, or the reason it cannot be
// reached from here.
func (s *session) localPause(ctx context.Context, p *PausedTask, e *Event) {
	t, err := s.tunnels.get(ctx, p.IP, p.Port)
	if err != nil {
		e.Problem = fmt.Sprintf("it cannot be reached from here: %v", err)
		return
	}
	p.Local = t.Addr()
	e.Launch = LaunchConfig(p, s.localRoot())
	e.Hint = fmt.Sprintf("debugpy attach to %s (pathMappings: the worker's cwd, the job's working_dir, to %s); files outside the working_dir (py_modules, site-packages, the driver's) do not map to local files: VS Code shows debugpy's copy, read-only", p.Local, s.localRoot())
}

// reportTunnelProblems reports what the tunnels and the proxy met since
// the last call.
func (s *session) reportTunnelProblems() {
	for {
		select {
		case msg := <-s.tunnels.errs:
			s.report(Event{Kind: KindWarning, Message: "warning: " + msg})
		default:
			return
		}
	}
}
