//go:build faithful

package image

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/inject"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/internal/testutil/kubetest"
)

// The faithful stand-in base boots linuxserver's real startup under runc:
// s6-overlay v3's /init (its preinit, stage0, s6-linux-init, s6-rc) and
// linuxserver's own s6-rc services (init-adduser, init-code-server,
// svc-code-server, docker-mods as the stage-2 hook), with code-server from
// npm at /app/code-server. docs/faithful-base.md says what the base holds
// and why nothing in this repository builds it: the tests here run only
// with -tags faithful and a base at IMAGECTL_FAITHFUL_BASE (default
// $IMAGECTL_TEST_CACHE/base/faithful-amd64.tar); without one they skip, or
// fail under IMAGECTL_REQUIRE_TOOLS=1.
//
//	go test -tags faithful -run TestFaithful -v ./smoke/image/

// lsioEnv is the image configuration's Env of linuxserver/code-server: the
// ENV of docker-baseimage-ubuntu (noble) with HOME from docker-code-server,
// on Docker's default PATH.
var lsioEnv = []string{
	"PATH=/lsiopy/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/config",
	"LANGUAGE=en_US.UTF-8",
	"LANG=en_US.UTF-8",
	"TERM=xterm",
	"S6_CMD_WAIT_FOR_SERVICES_MAXTIME=0",
	"S6_VERBOSITY=1",
	"S6_STAGE2_HOOK=/docker-mods",
	"VIRTUAL_ENV=/lsiopy",
}

const faithfulPassword = "imagectl-faithful"

func faithfulBase(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts runc containers: skipped under -short")
	}
	need(t, os.Geteuid() == 0, "runc tests need root")
	base := os.Getenv("IMAGECTL_FAITHFUL_BASE")
	if base == "" {
		base = filepath.Join(testutil.CacheDir(), "base", "faithful-amd64.tar")
	}
	_, err := os.Stat(base)
	need(t, err == nil, "no faithful base "+base+" (docs/faithful-base.md: nothing in the repository builds it)")
	return base
}

// faithfulCase is one way to start the base.
type faithfulCase struct {
	user string   // the image's User ("" is root)
	env  []string // added to lsioEnv (a later entry wins)
	// adjust changes the runtime configuration; dirs are fresh host
	// directories, root-owned and mode 0777 like Kubernetes emptyDirs.
	adjust func(s *specs.Spec, dirs func(string) string)
	// files are added to the base, each owned by 911:911 (linuxserver's
	// abc) and mode 0644, as imagectl's build COPYs its files into /config.
	files map[string]string
}

// bootFaithful creates and starts a container of the base; the container
// is removed at the end of the test.
func bootFaithful(t *testing.T, base string, fc faithfulCase) *runcContainer {
	t.Helper()
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &fileLayer{path: base})
	if err != nil {
		t.Fatal(err)
	}
	if len(fc.files) > 0 {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, name := range slices.Sorted(maps.Keys(fc.files)) {
			body := fc.files[name]
			if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(name, "/"), Mode: 0o644, Size: int64(len(body)), Uid: 911, Gid: 911, Typeflag: tar.TypeReg}); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b.Bytes())), nil })
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			t.Fatal(err)
		}
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = []string{"/init"}
	cf.Config.Env = mergeEnv(lsioEnv, fc.env)
	cf.Config.User = fc.user
	cf.Config.ExposedPorts = map[string]struct{}{"8443/tcp": {}}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	tr := newTestRunc(t)
	emptyDirs := t.TempDir()
	dirs := func(name string) string {
		p := filepath.Join(emptyDirs, name)
		if err := os.Mkdir(p, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var opts []RuncOption
	if fc.adjust != nil {
		opts = append(opts, WithSpecAdjust(func(s *specs.Spec) { fc.adjust(s, dirs) }))
	}
	r := NewRunc(append([]RuncOption{WithRuncRoot(tr.root), WithRuncWorkDir(tr.work)}, opts...)...)
	ctx := context.Background()
	start := time.Now()
	c, err := r.Create(ctx, &Platform{Platform: "linux/amd64", Digest: d, Image: img, Config: cf}, Spec{ID: randomID("amd64"), Ports: []int{8443}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	rc := c.(*runcContainer)
	t.Cleanup(func() {
		t.Logf("entrypoint output:\n%s", rc.Logs(ctx))
		if err := rc.Remove(ctx); err != nil {
			t.Errorf("Remove: %v", err)
		}
		tr.assertClean(t)
	})
	t.Logf("unpacked and created in %s", time.Since(start).Round(time.Second))
	if err := rc.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return rc
}

func mergeEnv(base, add []string) []string {
	out := append([]string{}, base...)
	for _, e := range add {
		k, _, _ := strings.Cut(e, "=")
		replaced := false
		for i, o := range out {
			if strings.HasPrefix(o, k+"=") {
				out[i], replaced = e, true
			}
		}
		if !replaced {
			out = append(out, e)
		}
	}
	return out
}

// waitLog waits until the entrypoint's output matches re, the container
// stops, or the timeout passes; it reports whether re matched.
func waitLog(c *runcContainer, re *regexp.Regexp, timeout time.Duration) bool {
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if re.MatchString(c.Logs(ctx)) {
			return true
		}
		if _, err := c.initPID(ctx); err != nil {
			time.Sleep(500 * time.Millisecond) // let the last lines drain
			return re.MatchString(c.Logs(ctx))
		}
		time.Sleep(250 * time.Millisecond)
	}
	return false
}

// waitLogin waits for code-server to answer /healthz on 8443 inside the
// container, then logs in: a wrong password must be refused, PASSWORD must
// get a session cookie.
func waitLogin(t *testing.T, c *runcContainer, timeout time.Duration) {
	t.Helper()
	client := &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return c.Dial(ctx, 8443)
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	start := time.Now()
	var last string
	for {
		resp, err := client.Get("http://127.0.0.1:8443/healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if _, err := c.initPID(context.Background()); err != nil {
			t.Fatalf("container stopped before code-server answered: %v", err)
		}
		if time.Since(start) > timeout {
			t.Fatalf("code-server did not answer /healthz on 8443 in %s: %s", timeout, last)
		}
		time.Sleep(time.Second)
	}
	t.Logf("code-server answered /healthz %s after start", time.Since(start).Round(time.Second))
	get := func(path string) (*http.Response, string) {
		resp, err := client.Get("http://127.0.0.1:8443" + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp, string(b)
	}
	if resp, _ := get("/"); resp.StatusCode != http.StatusFound || !strings.HasSuffix(resp.Header.Get("Location"), "login") {
		t.Errorf("GET /: %s Location %q, want 302 to the login page", resp.Status, resp.Header.Get("Location"))
	}
	if resp, body := get("/login"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "<title>code-server login</title>") || !strings.Contains(body, `name="password"`) {
		t.Errorf("GET /login: %s, want 200 and the login form; body starts %q", resp.Status, tail(body, 3))
	}
	login := func(pw string) *http.Response {
		resp, err := client.PostForm("http://127.0.0.1:8443/login", url.Values{"password": {pw}})
		if err != nil {
			t.Fatalf("POST /login: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	hasSession := func(r *http.Response) bool {
		for _, ck := range r.Cookies() {
			if ck.Name == "code-server-session" && ck.Value != "" {
				return true
			}
		}
		return false
	}
	if r := login("not-" + faithfulPassword); hasSession(r) {
		t.Errorf("a wrong password got a session cookie (%s)", r.Status)
	}
	if r := login(faithfulPassword); !hasSession(r) {
		t.Errorf("PASSWORD got no session cookie: %s %v", r.Status, r.Header)
	}
}

// execOut runs a command in the container as root and returns its stdout.
func execOut(t *testing.T, c *runcContainer, args ...string) string {
	t.Helper()
	res, err := c.Exec(context.Background(), Process{Args: args, Env: lsioEnv[:1]})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec %v: %v (exit %d): %s%s", args, err, res.ExitCode, res.Stdout, res.Stderr)
	}
	return strings.TrimSpace(string(res.Stdout))
}

// codeServerIDs is the "uid gid" code-server's node processes run as.
func codeServerIDs(t *testing.T, c *runcContainer) string {
	t.Helper()
	return strings.TrimSpace(execOut(t, c, "sh", "-c", "ps -C node -o uid=,gid= | sort -u | tr -s ' '"))
}

// wantLines checks that every line appears in the output, in this order.
func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	at := 0
	for _, l := range lines {
		i := strings.Index(out[at:], l)
		if i < 0 {
			t.Errorf("entrypoint output lacks %q (after byte %d)", l, at)
			continue
		}
		at += i + len(l)
	}
}

// Root, as linuxserver documents it: PUID/PGID/PASSWORD, Docker's default
// capabilities. S6_VERBOSITY=2 (linuxserver sets 1) makes s6-rc name each
// service it starts, in dependency order.
func TestFaithfulRoot(t *testing.T) {
	base := faithfulBase(t)
	c := bootFaithful(t, base, faithfulCase{env: []string{"PUID=1000", "PGID=1000", "TZ=Etc/UTC", "PASSWORD=" + faithfulPassword, "S6_VERBOSITY=2"}})
	waitLogin(t, c, 3*time.Minute)
	if !waitLog(c, regexp.MustCompile(`\[ls\.io-init\] done\.`), time.Minute) {
		t.Errorf("no [ls.io-init] done. (user2 bundle's ci-service-check)")
	}
	out := c.Logs(context.Background())
	// s6-overlay's own base bundle (no order with linuxserver's services).
	wantLines(t, out, "s6-rc: info: service s6rc-oneshot-runner: starting", "s6-rc: info: service fix-attrs successfully started")
	wantLines(t, out, "s6-rc: info: service legacy-cont-init successfully started")
	// linuxserver's services, in the order of their dependencies.d.
	wantLines(t, out,
		"s6-rc: info: service init-migrations: starting",
		"[migrations] started",
		"s6-rc: info: service init-adduser: starting",
		"User UID:    1000",
		"User GID:    1000",
		"s6-rc: info: service init-adduser successfully started",
		"s6-rc: info: service init-code-server: starting",
		"Change in ownership or new install detected",
		"s6-rc: info: service init-code-server successfully started",
		"[custom-init] No custom files found, skipping...",
		"s6-rc: info: service svc-code-server: starting",
		"HTTP server listening on http://[::]:8443/",
		"Using password from $PASSWORD",
		"s6-rc: info: service legacy-services successfully started",
		"[ls.io-init] done.")
	for _, bad := range []string{"Permission denied", "fatal", "Operation not permitted"} {
		if strings.Contains(out, bad) {
			t.Errorf("entrypoint output has %q", bad)
		}
	}
	// s6-svscan is PID 1 (s6-linux-init exec'd into it), svc-code-server is
	// supervised and ready (s6-notifyoncheck's nc -z), code-server runs as
	// abc, whom init-adduser moved to PUID/PGID.
	if got := execOut(t, c, "cat", "/proc/1/comm"); got != "s6-svscan" {
		t.Errorf("PID 1 is %q, want s6-svscan", got)
	}
	if got := execOut(t, c, "/command/s6-svstat", "-o", "up,ready", "/run/service/svc-code-server"); got != "true true" {
		t.Errorf("s6-svstat svc-code-server: %q, want up and ready", got)
	}
	if got := execOut(t, c, "id", "abc"); got != "uid=1000(abc) gid=1000(abc) groups=1000(abc),100(users)" {
		t.Errorf("id abc: %q", got)
	}
	if got := codeServerIDs(t, c); got != "1000 1000" {
		t.Errorf("code-server (node) runs as uid gid %q, want 1000 1000", got)
	}
	if got := execOut(t, c, "stat", "-c", "%u:%g %a", "/config", "/config/.ssh"); got != "1000:1000 755\n1000:1000 700" {
		t.Errorf("/config and /config/.ssh: %q", got)
	}
}

// nonRoot is linuxserver's non-root mode as docker-code-server documents
// it (--user with /run and /config belonging to that user), with
// no_new_privs (allowPrivilegeEscalation: false), no capabilities and
// /tmp on tmpfs.
func nonRoot(uid, gid string) func(*specs.Spec, func(string) string) {
	return func(s *specs.Spec, _ func(string) string) {
		s.Process.NoNewPrivileges = true
		s.Process.Capabilities = &specs.LinuxCapabilities{}
		s.Mounts = append(s.Mounts,
			specs.Mount{Destination: "/run", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "uid=" + uid, "gid=" + gid}},
			specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
			specs.Mount{Destination: "/config", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "uid=" + uid, "gid=" + gid}})
	}
}

func TestFaithfulNonRoot(t *testing.T) {
	base := faithfulBase(t)
	c := bootFaithful(t, base, faithfulCase{user: "1000:1000", env: []string{"PASSWORD=" + faithfulPassword}, adjust: nonRoot("1000", "1000")})
	waitLogin(t, c, 3*time.Minute)
	waitLog(c, regexp.MustCompile(`\[ls\.io-init\] done\.`), time.Minute)
	out := c.Logs(context.Background())
	wantLines(t, out,
		"s6-overlay-suexec: warning: unable to gain root privileges (is the suid bit set?)",
		"You are running this container as a non-root user",
		"[migrations] started",
		"User UID:    1000",
		"User GID:    1000",
		"[custom-init] No custom files found, skipping...",
		"HTTP server listening on http://[::]:8443/",
		"[ls.io-init] done.")
	if strings.Contains(out, "Change in ownership") {
		t.Errorf("init-code-server took the root branch (chown) in non-root mode")
	}
	if got := execOut(t, c, "cat", "/proc/1/comm"); got != "s6-svscan" {
		t.Errorf("PID 1 is %q, want s6-svscan", got)
	}
	if got := execOut(t, c, "cat", "/run/s6/container_environment/LSIO_NON_ROOT_USER"); got != "1" {
		t.Errorf("LSIO_NON_ROOT_USER = %q, want 1 (docker-mods: /run not owned by root)", got)
	}
}

// Non-root with a root-owned /run and no_new_privs: s6-overlay-suexec
// cannot become root, so preinit cannot make /run/s6 and /init exits.
func TestFaithfulNonRootRootOwnedRun(t *testing.T) {
	base := faithfulBase(t)
	c := bootFaithful(t, base, faithfulCase{user: "1000:1000", adjust: func(s *specs.Spec, _ func(string) string) {
		s.Process.NoNewPrivileges = true
		s.Process.Capabilities = &specs.LinuxCapabilities{}
	}})
	if !waitLog(c, regexp.MustCompile(`s6-overlay-suexec: fatal: child failed with exit code 111`), time.Minute) {
		t.Errorf("no fatal exit from s6-overlay-suexec")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.initPID(context.Background()); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container still runs 30 s after preinit failed")
		}
		time.Sleep(250 * time.Millisecond)
	}
	wantLines(t, c.Logs(context.Background()),
		"s6-overlay-suexec: warning: unable to gain root privileges (is the suid bit set?)",
		"s6-mkdir: warning: unable to mkdir /run/s6: Permission denied",
		"s6-overlay-suexec: fatal: child failed with exit code 111")
}

// restricted is OpenShift's restricted-v2 as a Pod gets it: an arbitrary
// UID with GID 0 and no passwd entry, every capability dropped,
// no_new_privs, a read-only root, and emptyDirs (root-owned, mode 0777) at
// /run, /tmp and /config.
func restricted(s *specs.Spec, dirs func(string) string) {
	s.Process.NoNewPrivileges = true
	s.Process.Capabilities = &specs.LinuxCapabilities{}
	s.Root.Readonly = true
	for _, d := range []string{"/run", "/tmp", "/config"} {
		s.Mounts = append(s.Mounts, specs.Mount{Destination: d, Type: "bind", Source: dirs(strings.TrimPrefix(d, "/")), Options: []string{"rbind", "rw"}})
	}
}

// linuxserver's non-root detection is `stat /run -c %u` != 0: an emptyDir
// belongs to root, so the scripts take the root branches and
// svc-code-server's s6-setuidgid abc fails over and over.
func TestFaithfulRestrictedEmptyDirs(t *testing.T) {
	base := faithfulBase(t)
	c := bootFaithful(t, base, faithfulCase{user: "1000770000:0", env: []string{"PASSWORD=" + faithfulPassword}, adjust: restricted})
	re := regexp.MustCompile(`(?s)s6-applyuidgid: fatal: unable to set supplementary group list: Operation not permitted.*s6-applyuidgid: fatal: unable to set supplementary group list`)
	if !waitLog(c, re, 2*time.Minute) {
		t.Errorf("svc-code-server did not fail at s6-setuidgid as expected")
	}
	out := c.Logs(context.Background())
	wantLines(t, out,
		"You are running this container read-only:",
		"[migrations] started",
		"User UID:    911", // init-adduser's root branch: id -u abc
		"chown: changing ownership of '/config': Operation not permitted",
		"[custom-init] No custom files found, skipping...",
		"s6-applyuidgid: fatal: unable to set supplementary group list: Operation not permitted")
	if strings.Contains(out, "HTTP server listening") {
		t.Errorf("code-server started although s6-setuidgid cannot work here")
	}
}

// The same with LSIO_NON_ROOT_USER=1 in the Pod's env: the scripts take
// their non-root branches and code-server answers.
func TestFaithfulRestrictedNonRootEnv(t *testing.T) {
	base := faithfulBase(t)
	c := bootFaithful(t, base, faithfulCase{user: "1000770000:0", env: []string{"PASSWORD=" + faithfulPassword, "LSIO_NON_ROOT_USER=1"}, adjust: restricted})
	waitLogin(t, c, 3*time.Minute)
	waitLog(c, regexp.MustCompile(`\[ls\.io-init\] done\.`), time.Minute)
	out := c.Logs(context.Background())
	wantLines(t, out,
		"s6-overlay-suexec: warning: unable to gain root privileges (is the suid bit set?)",
		"You are running this container read-only and as a non-root user",
		"[migrations] started",
		"User UID:    0", // stat /run -c %u: the emptyDir's owner
		"HTTP server listening on http://[::]:8443/",
		"[ls.io-init] done.")
	if got := codeServerIDs(t, c); got != "1000770000 0" {
		t.Errorf("code-server (node) runs as uid gid %q, want 1000770000 0", got)
	}
}

// rootMode is the sidecar as inject writes it in root mode: root,
// no_new_privs (allowPrivilegeEscalation: false), and only caps (the
// container's bounding, effective and permitted sets, as containerd sets
// them for capabilities drop [ALL] plus add).
func rootMode(caps []string) func(*specs.Spec, func(string) string) {
	return func(s *specs.Spec, _ func(string) string) {
		s.Process.NoNewPrivileges = true
		var set []string
		for _, c := range caps {
			set = append(set, "CAP_"+c)
		}
		s.Process.Capabilities = &specs.LinuxCapabilities{Bounding: set, Effective: set, Permitted: set}
	}
}

// capabilityRow is one line of docs/inject.md's capability table: what
// fails when the sidecar lacks that capability.
type capabilityRow struct{ cap, step, fails string }

// startupFailure matches the lines that say a startup step was refused.
var startupFailure = regexp.MustCompile(`(?m)^.*(Operation not permitted|Permission denied|EACCES|EPERM|fatal:).*$`)

// serviceState matches s6-rc's lines for a service it starts and one it
// has started (S6_VERBOSITY=2).
var serviceState = regexp.MustCompile(`s6-rc: info: service (\S+)(: starting| successfully started)`)

// programPrefix is a "name: " at the start of an error line (mkdir:,
// s6-applyuidgid:, fatal:).
var programPrefix = regexp.MustCompile(`^[A-Za-z0-9_.-]+: `)

// firstFailure is the first line of out startupFailure matches, without
// the program names before the message (the services' output is merged
// into one stream, and a "mkdir: " may land apart from the rest of its
// line), and the step: of the s6-rc services still starting then, the
// last to start among linuxserver's own (init-*, svc-*) when any is ("" when
// none is). s6-rc starts services in parallel: s6-overlay's own
// legacy-cont-init may start after init-adduser and still run when
// init-adduser's chown fails.
func firstFailure(out string) (step, line string) {
	loc := startupFailure.FindStringIndex(out)
	if loc == nil {
		return "", ""
	}
	line = strings.TrimSpace(out[loc[0]:loc[1]])
	for programPrefix.MatchString(line) {
		line = programPrefix.ReplaceAllString(line, "")
	}
	var running []string // in the order they started
	for _, m := range serviceState.FindAllStringSubmatch(out[:loc[0]], -1) {
		running = slices.DeleteFunc(running, func(n string) bool { return n == m[1] })
		if m[2] == ": starting" {
			running = append(running, m[1])
		}
	}
	own := slices.DeleteFunc(slices.Clone(running), func(n string) bool {
		return !strings.HasPrefix(n, "init-") && !strings.HasPrefix(n, "svc-")
	})
	if len(own) > 0 {
		running = own
	}
	if len(running) == 0 {
		return "", line
	}
	return running[len(running)-1], line
}

// healthz reports whether code-server answers /healthz in c within timeout.
func healthz(c *runcContainer, timeout time.Duration) bool {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return c.Dial(ctx, 8443)
	}}}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(time.Second) {
		if resp, err := client.Get("http://127.0.0.1:8443/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		if _, err := c.initPID(context.Background()); err != nil {
			return false
		}
	}
	return false
}

// stopsWithin sends SIGTERM to the container's PID 1 (as the kubelet
// stops a container) and reports whether it ends within d, and the
// entrypoint's output from the signal on.
func stopsWithin(t *testing.T, c *runcContainer, d time.Duration) (bool, string) {
	t.Helper()
	before := len(c.Logs(context.Background()))
	if out, err := c.r.command(context.Background(), "kill", c.id, "TERM").CombinedOutput(); err != nil {
		t.Fatalf("runc kill TERM: %v: %s", err, out)
	}
	stopped := false
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if _, err := c.initPID(context.Background()); err != nil {
			stopped = true
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // the last lines
	out := c.Logs(context.Background())
	return stopped, out[min(before, len(out)):]
}

// stopGrace is how long a stopped sidecar may take: s6-overlay's own
// S6_SERVICES_GRACETIME (3 s) and S6_KILL_GRACETIME (3 s) with room, well
// inside the kubelet's 30 s terminationGracePeriodSeconds.
const stopGrace = 20 * time.Second

// TestFaithfulCapabilities measures the capabilities linuxserver's root
// startup needs (issue 34, item 2): with exactly imagespec's
// StartupCapabilities and no_new_privs, as inject writes the sidecar, the
// startup completes, code-server logs in, and the container stops on
// SIGTERM; without any one of them, a named step fails. The table it
// measures is docs/inject.md's (IMAGECTL_UPDATE_DOCS=1 writes it there).
func TestFaithfulCapabilities(t *testing.T) {
	base := faithfulBase(t)
	env := []string{"PUID=1000", "PGID=1000", "TZ=Etc/UTC", "PASSWORD=" + faithfulPassword, "S6_VERBOSITY=2"}
	t.Run("all", func(t *testing.T) {
		c := bootFaithful(t, base, faithfulCase{env: env, adjust: rootMode(imagespec.StartupCapabilities)})
		waitLogin(t, c, 3*time.Minute)
		if !waitLog(c, regexp.MustCompile(`\[ls\.io-init\] done\.`), time.Minute) {
			t.Errorf("no [ls.io-init] done.")
		}
		out := c.Logs(context.Background())
		if step, line := firstFailure(out); line != "" {
			t.Errorf("with every capability of StartupCapabilities, %s: %s", step, line)
		}
		if got := codeServerIDs(t, c); got != "1000 1000" {
			t.Errorf("code-server (node) runs as uid gid %q, want 1000 1000", got)
		}
		if ok, tail := stopsWithin(t, c, stopGrace); !ok {
			t.Errorf("the container did not stop within %s of SIGTERM:\n%s", stopGrace, tail)
		}
	})
	var rows []capabilityRow
	for _, drop := range imagespec.StartupCapabilities {
		caps := slices.DeleteFunc(slices.Clone(imagespec.StartupCapabilities), func(c string) bool { return c == drop })
		t.Run("without_"+drop, func(t *testing.T) {
			c := bootFaithful(t, base, faithfulCase{env: env, adjust: rootMode(caps)})
			up := healthz(c, 90*time.Second)
			waitLog(c, regexp.MustCompile(`\[ls\.io-init\] done\.`), 15*time.Second)
			step, line := firstFailure(c.Logs(context.Background()))
			switch {
			case line != "":
				if step == "" {
					step = "s6-overlay's /init"
				}
				rows = append(rows, capabilityRow{drop, step, line})
			case !up:
				rows = append(rows, capabilityRow{drop, "svc-code-server", "code-server never answers /healthz"})
			default:
				// The startup went through: is it the stop that needs it?
				if ok, tail := stopsWithin(t, c, stopGrace); !ok {
					step, line := firstFailure(tail)
					if line == "" {
						line = fmt.Sprintf("the container does not stop within %s of SIGTERM", stopGrace)
					}
					if step == "" {
						step = "stop (s6-overlay's stage 3)"
					}
					rows = append(rows, capabilityRow{drop, step, line})
					return
				}
				t.Errorf("without %s the startup completes, code-server answers and the container stops: StartupCapabilities need not hold it", drop)
			}
		})
	}
	if t.Failed() {
		return
	}
	var table strings.Builder
	table.WriteString("| capability dropped | step that fails | what it prints |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&table, "| `%s` | %s | `%s` |\n", r.cap, r.step, strings.ReplaceAll(r.fails, "`", "'"))
	}
	t.Logf("measured:\n%s", table.String())
	checkDocTable(t, filepath.Join("..", "..", "docs", "inject.md"), "capabilities", table.String())
}

// checkDocTable requires the text between the markers
// <!-- measured: NAME --> and <!-- end: NAME --> of doc to be want; with
// IMAGECTL_UPDATE_DOCS=1 it writes want there instead.
func checkDocTable(t *testing.T, doc, name, want string) {
	t.Helper()
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- measured: "+name+" -->\n", "<!-- end: "+name+" -->"
	i, j := strings.Index(string(raw), begin), strings.Index(string(raw), end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q markers", doc, begin, end)
	}
	got := string(raw[i+len(begin) : j])
	if got == want {
		return
	}
	if os.Getenv("IMAGECTL_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(doc, []byte(string(raw[:i+len(begin)])+want+string(raw[j:])), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote the measured %s table into %s", name, doc)
		return
	}
	t.Errorf("%s's %s table is not what was measured (IMAGECTL_UPDATE_DOCS=1 writes it):\n--- doc\n%s--- measured\n%s", doc, name, got, want)
}

// injectedPod is the head pod inject --restricted (or --arbitrary-uid,
// with opt) writes for a Ray container running as 1000:100, decoded as
// the API server would.
func injectedPod(t *testing.T, opt inject.Option) *corev1.PodSpec {
	t.Helper()
	const cluster = "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: c\nspec:\n  rayVersion: \"2.46.0\"\n  headGroupSpec:\n    rayStartParams: {}\n    template:\n      spec:\n" +
		"        securityContext:\n          runAsNonRoot: true\n          runAsUser: 1000\n          runAsGroup: 100\n          seccompProfile:\n            type: RuntimeDefault\n" +
		"        containers:\n        - name: ray-head\n          image: rayproject/ray:2.46.0\n          securityContext:\n            allowPrivilegeEscalation: false\n            capabilities:\n              drop: [ALL]\n"
	res, err := inject.Apply(context.Background(), "f.yaml", []byte(cluster), inject.WithImage("example.com/cs:1"), opt)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := kubetest.DecodeStrict(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	return &obj.(*rayv1.RayCluster).Spec.HeadGroupSpec.Template.Spec
}

// asKubelet sets s as the kubelet and containerd run ct of pod: its
// securityContext (user, group, no_new_privs, capabilities, read-only
// root), its env values and its mounts of the pod's emptyDirs (dirs,
// shared between the init container and the sidecar as a pod's are);
// user is the UID:GID when ct sets none (what the platform assigns).
func asKubelet(t *testing.T, ct corev1.Container, dirs map[string]string, user string) faithfulCase {
	t.Helper()
	sc := ct.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil {
		t.Fatalf("container %s: securityContext %+v", ct.Name, sc)
	}
	if sc.RunAsUser != nil {
		user = fmt.Sprintf("%d:%d", *sc.RunAsUser, *sc.RunAsGroup)
	}
	var env []string
	for _, e := range ct.Env {
		if e.ValueFrom == nil {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	return faithfulCase{user: user, env: env, adjust: func(s *specs.Spec, _ func(string) string) {
		s.Process.NoNewPrivileges = true
		caps := []string{}
		for _, c := range sc.Capabilities.Add {
			caps = append(caps, "CAP_"+string(c))
		}
		s.Process.Capabilities = &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps}
		s.Root.Readonly = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
		if len(ct.Command) > 0 {
			s.Process.Args = append(append([]string{}, ct.Command...), ct.Args...)
		}
		for _, m := range ct.VolumeMounts {
			d, ok := dirs[m.Name]
			if !ok {
				continue // /tmp/ray: the Ray container's, not booted here
			}
			// The kubelet bind-mounts a subPath that exists (here: made by
			// the init container).
			s.Mounts = append(s.Mounts, specs.Mount{Destination: m.MountPath, Type: "bind", Source: filepath.Join(d, m.SubPath), Options: []string{"rbind", "rw"}})
		}
	}}
}

// imageConfig stands for what imagectl's build puts into /config.
var imageConfig = map[string]string{"/config/extensions/marker.txt": "built in"}

// TestFaithfulInjectRestricted boots linuxserver's real startup as inject
// --restricted and --arbitrary-uid write the sidecar: the init container
// copies the image's /config into the emptyDir, then the sidecar starts
// in linuxserver's non-root mode with a read-only root, no capability and
// no_new_privs, and code-server logs in, running as the pod's user.
func TestFaithfulInjectRestricted(t *testing.T) {
	base := faithfulBase(t)
	for _, tt := range []struct {
		name     string
		opt      inject.Option
		assigned string // the UID:GID the platform assigns, when inject sets none
		want     string // code-server's uid gid
	}{
		{"restricted", inject.WithRestricted(), "", "1000 100"},
		{"arbitrary UID", inject.WithArbitraryUID(), "1000770000:0", "1000770000 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := injectedPod(t, tt.opt)
			// The pod's emptyDirs: root's, mode 0777, as the kubelet makes them.
			dirs := map[string]string{}
			root := t.TempDir()
			for _, v := range pod.Volumes {
				if v.EmptyDir != nil {
					dirs[v.Name] = filepath.Join(root, v.Name)
					if err := os.Mkdir(dirs[v.Name], 0o777); err != nil {
						t.Fatal(err)
					}
					if err := os.Chmod(dirs[v.Name], 0o777); err != nil {
						t.Fatal(err)
					}
				}
			}
			if len(pod.InitContainers) != 1 {
				t.Fatalf("init containers %+v", pod.InitContainers)
			}
			ic := pod.InitContainers[0]
			icCase := asKubelet(t, ic, dirs, tt.assigned)
			icCase.files = imageConfig
			init := bootFaithful(t, base, icCase)
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(250 * time.Millisecond) {
				if _, err := init.initPID(context.Background()); err != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the init container %s still runs after 2 minutes", ic.Name)
				}
			}
			if out := init.Logs(context.Background()); strings.TrimSpace(out) != "" {
				t.Errorf("the init container %s printed:\n%s", ic.Name, out)
			}
			sc := pod.Containers[len(pod.Containers)-1]
			var config string
			for _, m := range sc.VolumeMounts {
				if m.MountPath == "/config" {
					config = filepath.Join(dirs[m.Name], m.SubPath)
				}
			}
			if b, err := os.ReadFile(filepath.Join(config, "extensions", "marker.txt")); err != nil || string(b) != "built in" {
				t.Errorf("the /config emptyDir after the copy: extensions/marker.txt %q, %v; want the image's", b, err)
			}
			fc := asKubelet(t, sc, dirs, tt.assigned)
			fc.files = imageConfig
			fc.env = append(fc.env, "PASSWORD="+faithfulPassword)
			c := bootFaithful(t, base, fc)
			waitLogin(t, c, 3*time.Minute)
			if !waitLog(c, regexp.MustCompile(`\[ls\.io-init\] done\.`), time.Minute) {
				t.Errorf("no [ls.io-init] done.")
			}
			out := c.Logs(context.Background())
			wantLines(t, out,
				"You are running this container read-only and as a non-root user",
				"HTTP server listening on http://[::]:8443/",
				"[ls.io-init] done.")
			for _, bad := range []string{"Operation not permitted", "fatal", "EACCES"} {
				if strings.Contains(out, bad) {
					t.Errorf("entrypoint output has %q", bad)
				}
			}
			if got := codeServerIDs(t, c); got != tt.want {
				t.Errorf("code-server (node) runs as uid gid %q, want %s", got, tt.want)
			}
		})
	}
}
