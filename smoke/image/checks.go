package image

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/smoke/probe"
)

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// elfMachines maps an OCI architecture to its ELF e_machine and the name
// platform.machine() prints.
var elfMachines = map[string]struct {
	machine int
	uname   string
}{
	"amd64": {62, "x86_64"},
	"arm64": {183, "aarch64"},
}

var elfNames = map[int]string{3: "x86 (32-bit)", 40: "ARM (32-bit)", 62: "x86-64", 183: "AArch64", 243: "RISC-V", 21: "PowerPC64", 22: "s390"}

func elfName(m int) string {
	if n, ok := elfNames[m]; ok {
		return n
	}
	return "machine " + strconv.Itoa(m)
}

// pythonFacts is what scripts/check.py prints.
type pythonFacts struct {
	Executable string   `json:"executable"`
	Realpath   string   `json:"realpath"`
	Version    string   `json:"version"`
	Machine    string   `json:"machine"`
	PathEnv    string   `json:"path_env"`
	SiteExists bool     `json:"site_exists"`
	Imports    []module `json:"imports"`
	Compiled   []struct {
		Path    string `json:"path"`
		Machine int    `json:"machine"`
		Dist    string `json:"dist"`
		Shared  bool   `json:"shared"`
		Error   string `json:"error"`
	} `json:"compiled"`
	Dists []struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"dists"`
}

type module struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	File        string `json:"file"`
	Error       string `json:"error"`
	DistVersion string `json:"dist_version"`
	DistError   string `json:"dist_error"`
}

const resultMark = "IMAGECTL-SMOKE-RESULT "

// python is the interpreter name looked up on the image's PATH: the image
// definition puts the shipped runtime's bin/ (python3) first.
const python = "python3"

func (r *platformRun) step(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.o.stepTimeout)
}

// checkPython runs check.py with the image's python3 and environment.
func (r *platformRun) checkPython(ctx context.Context) (Status, string) {
	var problems []string
	for _, l := range r.labels {
		problems = append(problems, "labels: "+l)
	}
	if r.lock == nil {
		return Fail, strings.Join(append(problems, "no usable "+imagespec.LabelLock+" label: nothing to compare the interpreter with"), "; ")
	}
	site := imagespec.PythonSitePackages(r.lock.Python)
	sctx, cancel := r.step(ctx)
	defer cancel()
	res, err := r.c.Exec(sctx, Process{Args: []string{python, MountPoint + "/check.py", site}, Env: r.env, UID: r.uid, GID: r.gid})
	if err != nil {
		if errors.Is(err, ErrExecStart) {
			return Fail, fmt.Sprintf("%s does not start with the image's environment (PATH=%s): %v", python, envValue(r.env, "PATH"), err)
		}
		return Fail, fmt.Sprintf("running %s: %v", python, err)
	}
	facts, perr := parseResult[pythonFacts](res.Stdout)
	if res.ExitCode != 0 || perr != nil {
		return Fail, fmt.Sprintf("%s %s/check.py exited %d with the image's environment (PATH=%s): %s", python, MountPoint, res.ExitCode, envValue(r.env, "PATH"), tail(string(res.Stderr)+string(res.Stdout), 6))
	}
	r.python = facts
	want := elfMachines[r.p.Arch()]
	if want.uname != "" && facts.Machine != want.uname {
		problems = append(problems, fmt.Sprintf("the interpreter runs as %s, want %s", facts.Machine, want.uname))
	}
	if mm := majorMinor(facts.Version); mm != r.lock.Python {
		problems = append(problems, fmt.Sprintf("%s on PATH is Python %s (%s), the lock says %s", python, facts.Version, facts.Realpath, r.lock.Python))
	}
	if facts.Executable != imagespec.InterpreterPath {
		problems = append(problems, fmt.Sprintf("%s on the image's PATH (%s) is %s, not the image's interpreter %s", python, facts.PathEnv, facts.Executable, imagespec.InterpreterPath))
	}
	if r.lock.PythonRuntime != nil && !strings.HasPrefix(facts.Realpath, imagespec.PythonDir+"/") {
		problems = append(problems, fmt.Sprintf("%s on the image's PATH is %s, not the shipped runtime under %s", python, facts.Realpath, imagespec.PythonDir))
	}
	imported, ps := r.importProblems(facts, site)
	problems = append(problems, ps...)
	if !facts.SiteExists {
		problems = append(problems, "no "+site)
	}
	shared, p := r.compiledProblem(facts, site)
	if p != "" {
		problems = append(problems, p)
	}
	if len(problems) > 0 {
		return Fail, strings.Join(problems, "; ")
	}
	return Pass, fmt.Sprintf("%s on the image's PATH is %s -> %s (Python %s, %s); %s import from %s at the locked versions; %d distributions, %d ELF files all %s, %d shared objects load",
		python, facts.Executable, facts.Realpath, facts.Version, facts.Machine, strings.Join(imported, " and "), site, len(facts.Dists), len(facts.Compiled), elfName(want.machine), shared)
}

// importProblems checks that ray and debugpy import from site at the
// locked versions; it returns "name version" of each import and the
// problems.
func (r *platformRun) importProblems(facts *pythonFacts, site string) (imported, problems []string) {
	wantVersion := map[string]string{"ray": r.lock.Ray, "debugpy": r.lock.Debugpy}
	for _, m := range facts.Imports {
		switch {
		case m.Error != "":
			problems = append(problems, fmt.Sprintf("import %s: %s", m.Name, m.Error))
			continue
		case m.Version != wantVersion[m.Name]:
			problems = append(problems, fmt.Sprintf("%s.__version__ is %q, the lock says %s", m.Name, m.Version, wantVersion[m.Name]))
		case m.DistVersion != wantVersion[m.Name]:
			problems = append(problems, fmt.Sprintf("%s distribution metadata says %q (%s), the lock says %s", m.Name, m.DistVersion, m.DistError, wantVersion[m.Name]))
		}
		if !strings.HasPrefix(m.File, site+"/") {
			problems = append(problems, fmt.Sprintf("%s is imported from %s, not from %s", m.Name, m.File, site))
		}
		imported = append(imported, m.Name+" "+m.Version)
	}
	return imported, problems
}

// compiledProblem checks that every ELF file in site is of the platform's
// machine and every shared object loads; it returns how many shared
// objects loaded and the problem ("" when none).
func (r *platformRun) compiledProblem(facts *pythonFacts, site string) (shared int, problem string) {
	want := elfMachines[r.p.Arch()]
	var bad []string
	for _, f := range facts.Compiled {
		who := strings.TrimPrefix(f.Path, site+"/")
		if f.Dist != "" {
			who += " (" + f.Dist + ")"
		}
		switch {
		case want.machine != 0 && f.Machine != want.machine:
			bad = append(bad, fmt.Sprintf("%s is %s code, want %s", who, elfName(f.Machine), elfName(want.machine)))
		case f.Error != "":
			bad = append(bad, fmt.Sprintf("%s does not load: %s", who, f.Error))
		case f.Shared:
			shared++
		}
	}
	if len(bad) == 0 {
		return shared, ""
	}
	more := ""
	if len(bad) > 5 {
		more = fmt.Sprintf(" (and %d more)", len(bad)-5)
		bad = bad[:5]
	}
	return shared, fmt.Sprintf("compiled modules on %s: %s%s", r.p.Platform, strings.Join(bad, "; "), more)
}

func majorMinor(v string) string {
	p := strings.SplitN(v, ".", 3)
	if len(p) < 2 {
		return v
	}
	return p[0] + "." + p[1]
}

// parseResult decodes the last "IMAGECTL-SMOKE-RESULT <json>" line.
func parseResult[T any](out []byte) (*T, error) {
	var last string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), resultMark) {
			last = strings.TrimPrefix(sc.Text(), resultMark)
		}
	}
	if last == "" {
		return nil, errors.New("no result line")
	}
	var v T
	if err := json.Unmarshal([]byte(last), &v); err != nil {
		return nil, fmt.Errorf("result line: %w", err)
	}
	return &v, nil
}

// breakpointLine is the line of breakpoint() in scripts/breakpoint.py.
func breakpointLine() (int, error) {
	b, err := scripts.ReadFile("scripts/breakpoint.py")
	if err != nil {
		return 0, err
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "breakpoint()  # imagectl-smoke") {
			return i + 1, nil
		}
	}
	return 0, errors.New("scripts/breakpoint.py has no breakpoint() line")
}

// checkDebugger runs breakpoint.py and attaches to its debugpy listener
// with the DAP client of imagectl smoke attach.
func (r *platformRun) checkDebugger(ctx context.Context) (Status, string) {
	line, err := breakpointLine()
	if err != nil {
		return Fail, err.Error()
	}
	pctx, cancel := context.WithTimeout(ctx, r.o.bootTimeout+2*r.o.stepTimeout)
	defer cancel()
	port := r.o.debugPort
	proc, err := r.c.Spawn(pctx, Process{Args: []string{python, MountPoint + "/breakpoint.py", strconv.Itoa(port)}, Env: r.env, UID: r.uid, GID: r.gid})
	if err != nil {
		return Fail, fmt.Sprintf("starting %s breakpoint.py: %v", python, err)
	}
	defer proc.Kill()
	if msg := r.awaitListener(ctx, proc); msg != "" {
		return Fail, msg
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	res, err := probe.Attach(pctx, addr,
		probe.WithDialer(func(ctx context.Context, _, _ string) (net.Conn, error) { return r.c.Dial(ctx, port) }),
		probe.WithExpect(probe.Expect{Function: "smoke_target", File: "breakpoint.py"}),
		probe.WithAction(probe.ActionContinue),
		// The script is not in a Ray tree shared with a sidecar: smoke
		// attach checks the source in the cluster.
		probe.WithSourceCheck(false),
		probe.WithStepTimeout(r.o.stepTimeout), probe.WithStopTimeout(r.o.stepTimeout))
	if err != nil {
		return Fail, fmt.Sprintf("attaching to debugpy at %s in the container: %v", addr, err)
	}
	// debugpy suspends at the next line event of the calling frame, so the
	// stop is reported at the statement after breakpoint() (debugpy 1.6 and
	// 1.8 alike); the breakpoint() line itself is accepted too.
	var problems []string
	where := "the line after breakpoint()"
	switch f := res.Frame; f.Line {
	case line + 1:
	case line:
		where = "the breakpoint() line"
	default:
		problems = append(problems, fmt.Sprintf("stopped in %s at %s:%d, want line %d (the statement after breakpoint() on line %d)", f.Name, f.Path, f.Line, line+1, line))
	}
	out, msg := r.awaitExit(ctx, proc)
	if msg != "" {
		return Fail, msg
	}
	want := resultMark + "49"
	if out.ExitCode != 0 || !strings.Contains(string(out.Stdout), want) {
		problems = append(problems, fmt.Sprintf("after continue the script exited %d without printing %q: %s", out.ExitCode, want, tail(string(out.Stderr)+string(out.Stdout), 6)))
	}
	if len(problems) > 0 {
		return Fail, strings.Join(problems, "; ")
	}
	return Pass, fmt.Sprintf("debugpy listened on %s in the container; attached in %dms, stopped (%s) in %s at %s:%d (%s), continued; the script printed %s and exited 0",
		addr, res.AttachMillis, res.StopReason, res.Frame.Name, res.Frame.Path, res.Frame.Line, where, want)
}

// checkPostMortem runs breakpoint.py in post-mortem mode (Ray's calls for
// RAY_DEBUG_POST_MORTEM=1) and attaches as smoke attach --post-mortem: the
// stop must be on the exception, in smoke_fail, with exceptionInfo.
func (r *platformRun) checkPostMortem(ctx context.Context) (Status, string) {
	pctx, cancel := context.WithTimeout(ctx, r.o.bootTimeout+2*r.o.stepTimeout)
	defer cancel()
	port := r.o.debugPort
	proc, err := r.c.Spawn(pctx, Process{Args: []string{python, MountPoint + "/breakpoint.py", strconv.Itoa(port), "post-mortem"}, Env: r.env, UID: r.uid, GID: r.gid})
	if err != nil {
		return Fail, fmt.Sprintf("starting %s breakpoint.py post-mortem: %v", python, err)
	}
	defer proc.Kill()
	if msg := r.awaitListener(ctx, proc); msg != "" {
		return Fail, msg
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	res, err := probe.Attach(pctx, addr,
		probe.WithDialer(func(ctx context.Context, _, _ string) (net.Conn, error) { return r.c.Dial(ctx, port) }),
		probe.WithExpect(probe.Expect{Function: "smoke_fail", File: "breakpoint.py"}),
		probe.WithAction(probe.ActionContinue), probe.WithPostMortem(true), probe.WithSourceCheck(false),
		probe.WithStepTimeout(r.o.stepTimeout), probe.WithStopTimeout(r.o.stepTimeout))
	if err != nil {
		return Fail, fmt.Sprintf("post-mortem attach to debugpy at %s in the container: %v", addr, err)
	}
	var problems []string
	if top := res.Frames[0]; top.Name != "smoke_fail" {
		problems = append(problems, fmt.Sprintf("the top frame is %s at %s:%d, want smoke_fail, where the exception was raised", top.Name, top.Path, top.Line))
	}
	out, msg := r.awaitExit(ctx, proc)
	if msg != "" {
		return Fail, msg
	}
	want := "IMAGECTL-SMOKE-TASK-ERROR ValueError"
	if out.ExitCode != 0 || !strings.Contains(string(out.Stdout), want) {
		problems = append(problems, fmt.Sprintf("after continue the script exited %d without printing %q: %s", out.ExitCode, want, tail(string(out.Stderr)+string(out.Stdout), 6)))
	}
	if len(problems) > 0 {
		return Fail, strings.Join(problems, "; ")
	}
	return Pass, fmt.Sprintf("attached in %dms to a task frozen on its exception: stopped (%s) in %s at %s:%d, exception %s (%s), continued; the script printed %s and exited 0",
		res.AttachMillis, res.StopReason, res.Frame.Name, res.Frame.Path, res.Frame.Line, res.Exception.ID, res.Exception.Description, want)
}

// awaitListener waits for breakpoint.py's debugpy listener (no bare TCP
// probe: it can disturb debugpy); it returns why it did not listen, or "".
func (r *platformRun) awaitListener(ctx context.Context, proc Proc) string {
	timer := time.NewTimer(r.o.bootTimeout)
	defer timer.Stop()
	for listening := false; !listening; {
		select {
		case l, ok := <-proc.Lines():
			if !ok {
				const what = "debugpy never listened"
				res, err := proc.Wait()
				if err != nil {
					return fmt.Sprintf("%s: %v", what, err)
				}
				return fmt.Sprintf("%s: the script exited %d: %s", what, res.ExitCode, tail(string(res.Stderr)+string(res.Stdout), 6))
			}
			listening = strings.HasPrefix(l, "IMAGECTL-SMOKE-LISTENING ")
		case <-timer.C:
			return fmt.Sprintf("debugpy did not listen within %s", r.o.bootTimeout)
		case <-ctx.Done():
			return ctx.Err().Error()
		}
	}
	return ""
}

// awaitExit waits (within the step timeout, else kills it) for the
// continued script to exit; it returns its result, or why not.
func (r *platformRun) awaitExit(ctx context.Context, proc Proc) (*Result, string) {
	wctx, wcancel := context.WithTimeout(ctx, r.o.stepTimeout)
	defer wcancel()
	done := make(chan struct{})
	var out *Result
	var werr error
	go func() { out, werr = proc.Wait(); close(done) }()
	select {
	case <-done:
	case <-wctx.Done():
		proc.Kill()
		<-done
		return nil, fmt.Sprintf("attached and continued, but the script did not exit within %s", r.o.stepTimeout)
	}
	if werr != nil {
		return nil, fmt.Sprintf("waiting for the script: %v", werr)
	}
	return out, ""
}

// checkCodeServer waits for the entrypoint's code-server to answer
// /healthz on its port, lists its extensions as its service user, and
// reads its user settings.
func (r *platformRun) checkCodeServer(ctx context.Context, entry []string) (Status, string) {
	var problems []string
	port := imagespec.CodeServerPort
	hc := &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return r.c.Dial(ctx, port) },
			DisableKeepAlives: true,
		},
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	health, err := pollHealth(ctx, hc, url, r.o.bootTimeout)
	if errors.Is(err, ErrStopped) {
		return Fail, fmt.Sprintf("the entrypoint %q exited before code-server answered %s; its output: %s", entry, url, tail(r.c.Logs(ctx), 8))
	}
	if err != nil {
		return Fail, fmt.Sprintf("code-server did not answer %s within %s after the entrypoint %q started: %v; entrypoint output: %s", url, r.o.bootTimeout, entry, err, tail(r.c.Logs(ctx), 8))
	}

	// --list-extensions as the service runs code-server.
	uid, gid := r.uid, r.gid
	who := "the image's user"
	if passwd, err := r.c.ReadFile(ctx, "/etc/passwd", 4<<20); err == nil {
		if u, g, err := lookupID(func(string) ([]byte, error) { return passwd, nil }, "/etc/passwd", imagespec.CodeServerUser, true); err == nil {
			uid, gid, who = u, g, "user "+imagespec.CodeServerUser
		}
	}
	sctx, cancel := r.step(ctx)
	defer cancel()
	args := []string{imagespec.CodeServerBin, "--extensions-dir", imagespec.ExtensionsDir, "--user-data-dir", imagespec.UserDataDir, "--list-extensions", "--show-versions"}
	res, err := r.c.Exec(sctx, Process{Args: args, Env: r.env, UID: uid, GID: gid})
	var listed []string
	switch {
	case err != nil:
		problems = append(problems, fmt.Sprintf("%s: %v", strings.Join(args, " "), err))
	case res.ExitCode != 0:
		problems = append(problems, fmt.Sprintf("%s exited %d: %s", strings.Join(args, " "), res.ExitCode, tail(string(res.Stderr), 4)))
	default:
		listed = extensionLines(string(res.Stdout))
		if r.lock == nil {
			problems = append(problems, "no usable "+imagespec.LabelLock+" label: nothing to compare the extensions with")
		} else {
			var want []string
			for _, e := range r.lock.Extensions {
				want = append(want, strings.ToLower(e.ID)+"@"+e.Version)
			}
			sort.Strings(want)
			if strings.Join(listed, ",") != strings.Join(want, ",") {
				problems = append(problems, fmt.Sprintf("code-server --list-extensions --show-versions (as %s) lists [%s], the lock says [%s]", who, strings.Join(listed, ", "), strings.Join(want, ", ")))
			}
		}
	}

	sp, err := r.settingsProblems(ctx)
	problems = append(problems, sp...)
	if err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return Fail, strings.Join(problems, "; ")
	}
	return Pass, fmt.Sprintf("the entrypoint %q started code-server, which answered %s (%s); --list-extensions --show-versions as %s equals the lock (%s); %s has %s and %s",
		entry, url, health, who, strings.Join(listed, ", "), imagespec.SettingsPath, imagespec.SettingClusterDashboards, imagespec.SettingInterpreterPath)
}

func pollHealth(ctx context.Context, hc *http.Client, url string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			var h struct {
				Status string `json:"status"`
			}
			switch {
			case resp.StatusCode != http.StatusOK:
				last = fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
			case json.Unmarshal(b, &h) != nil || h.Status == "":
				last = fmt.Errorf("HTTP 200 but not code-server's health JSON: %.200s", b)
			default:
				return "status " + h.Status, nil
			}
		} else {
			last = err
			if errors.Is(err, ErrStopped) {
				return "", err
			}
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = ctx.Err()
			}
			return "", last
		case <-time.After(time.Second):
		}
	}
}

var extLineRe = regexp.MustCompile(`^[A-Za-z0-9][\w-]*\.[\w.-]+@[\w.+-]+$`)

// extensionLines keeps the "publisher.name@version" lines, lowercasing ids.
func extensionLines(out string) []string {
	var got []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if !extLineRe.MatchString(l) {
			continue
		}
		id, v, _ := strings.Cut(l, "@")
		got = append(got, strings.ToLower(id)+"@"+v)
	}
	sort.Strings(got)
	return got
}

// settingsProblems checks code-server's user settings: the debugger's
// cluster dashboards and an interpreter path naming the shipped
// interpreter, which must run.
func (r *platformRun) settingsProblems(ctx context.Context) ([]string, error) {
	raw, err := r.c.ReadFile(ctx, imagespec.SettingsPath, 4<<20)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", imagespec.SettingsPath, err)
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object: %w", imagespec.SettingsPath, err)
	}
	var problems []string
	for _, p := range imagespec.DebuggerSettingsProblems(s[imagespec.SettingClusterDashboards]) {
		problems = append(problems, imagespec.SettingsPath+": "+p)
	}
	var interp string
	if v, ok := s[imagespec.SettingInterpreterPath]; !ok {
		problems = append(problems, fmt.Sprintf("%s has no %s", imagespec.SettingsPath, imagespec.SettingInterpreterPath))
	} else if err := json.Unmarshal(v, &interp); err != nil || interp == "" {
		problems = append(problems, fmt.Sprintf("%s: %s is %s, want a path", imagespec.SettingsPath, imagespec.SettingInterpreterPath, v))
	} else {
		sctx, cancel := r.step(ctx)
		defer cancel()
		res, err := r.c.Exec(sctx, Process{Args: []string{interp, "-c", "import os, sys; print('" + resultMark + "' + '\"' + os.path.realpath(sys.executable) + '\"')"}, Env: r.env, UID: r.uid, GID: r.gid})
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s %q does not run: %v", imagespec.SettingInterpreterPath, interp, err))
		case res.ExitCode != 0:
			problems = append(problems, fmt.Sprintf("%s %q exited %d: %s", imagespec.SettingInterpreterPath, interp, res.ExitCode, tail(string(res.Stderr), 3)))
		default:
			real, perr := parseResult[string](res.Stdout)
			switch {
			case perr != nil:
				problems = append(problems, fmt.Sprintf("%s %q: %v", imagespec.SettingInterpreterPath, interp, perr))
			case r.python == nil:
				problems = append(problems, fmt.Sprintf("%s %q runs (%s), but the python check failed, so it cannot be compared with the shipped interpreter", imagespec.SettingInterpreterPath, interp, *real))
			case *real != r.python.Realpath:
				problems = append(problems, fmt.Sprintf("%s %q is %s, the image's python3 is %s", imagespec.SettingInterpreterPath, interp, *real, r.python.Realpath))
			}
		}
	}
	return problems, nil
}
