package main

import (
	"bufio"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/imagectl/imagectl/internal/fakes/dashboard"
	"github.com/imagectl/imagectl/internal/fakes/rayworker"
)

// sampleCode is the job's working_dir module the tasks come from.
//
//go:embed sample_code.py
var sampleCode []byte

// Where the stand-in's process looks for the image's python3: the image
// config sets IMAGECTL_STANDIN_PYTHON (KubeRay v1.3's `bash -lc` resets PATH
// to /etc/profile's).
const pythonEnv = "IMAGECTL_STANDIN_PYTHON"

func say(words ...any) {
	fmt.Println(append([]any{"IMAGECTL-STANDIN"}, words...)...)
}

// pause is a Pod sandbox's PID 1.
func pause() error {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			return nil
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
	return nil
}

// wget fetches URL and prints its body, as the probes' `wget -q -O- URL`.
func wget(args []string) error {
	timeout := 10 * time.Second
	var url string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-T" || a == "--tries" || a == "-t" || a == "-O":
			if i+1 >= len(args) {
				return fmt.Errorf("%s needs a value", a)
			}
			i++
			if a == "-T" {
				s, err := strconv.Atoi(args[i])
				if err != nil {
					return fmt.Errorf("-T %q: want seconds", args[i])
				}
				timeout = time.Duration(s) * time.Second
			}
			if a == "-O" && args[i] != "-" {
				return fmt.Errorf("-O %q: only -O- (standard output) is supported", args[i])
			}
		case a == "-q" || a == "-O-":
		case strings.HasPrefix(a, "-"):
			return fmt.Errorf("unsupported option %s", a)
		default:
			url = a
		}
	}
	if url == "" {
		return errors.New("no URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("server returned error: %s", resp.Status)
	}
	_, err = io.Copy(os.Stdout, resp.Body)
	return err
}

// ray answers `ray start --head …`.
func ray(args []string) error {
	if len(args) == 0 {
		return errors.New("no command (the stand-in answers `ray start --head …`)")
	}
	switch args[0] {
	case "start":
	case "health-check":
		return healthCheck(args[1:])
	default:
		return fmt.Errorf("%s: the stand-in answers only `ray start` and `ray health-check`", args[0])
	}
	// Ray's own flags are many; the stand-in reads the ones it serves and
	// accepts the others (KubeRay adds --block, --dashboard-host,
	// --metrics-export-port, --num-cpus, --memory, …).
	head, dashPort, agentPort, gcsPort, root := false, "8265", "52365", "6379", "/tmp/ray"
	for _, a := range args[1:] {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "--head":
			head = true
		case "--dashboard-port":
			dashPort = v
		case "--dashboard-agent-listen-port":
			agentPort = v
		case "--port":
			gcsPort = v
		case "--temp-dir":
			root = v
		}
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	al, err := net.Listen("tcp", ":"+agentPort)
	if err != nil {
		return fmt.Errorf("dashboard agent: %w", err)
	}
	agent := http.NewServeMux()
	agent.HandleFunc("GET /api/local_raylet_healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "success") })
	go func() {
		if err := http.Serve(al, agent); err != nil {
			say("AGENT-FAILED", err)
		}
	}()
	if !head {
		// A worker: the agent's health only; the head's tasks stand for
		// the ones a worker would run.
		say("WORKER", strings.Join(args, " "), "AGENT", al.Addr().String())
		<-stop
		return nil
	}
	// The GCS port accepts connections (what health-check dials).
	gl, err := net.Listen("tcp", ":"+gcsPort)
	if err != nil {
		return fmt.Errorf("gcs: %w", err)
	}
	go func() {
		for {
			c, err := gl.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ip, err := podIP()
	if err != nil {
		return err
	}
	say("START", strings.Join(args, " "))

	dl, err := net.Listen("tcp", ":"+dashPort)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	d := dashboard.NewOn(dl)
	d.HandleFunc("GET /api/gcs_healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "success") })
	say("DASHBOARD", dl.Addr().String(), "AGENT", al.Addr().String(), "GCS", gl.Addr().String(), "NODE-IP", ip)

	h, err := startHead(d, root, ip, ip+":"+gcsPort, os.Environ())
	if err != nil {
		return err
	}
	say("SESSION", h.session)
	if os.Getenv(startupTasksEnv) != "1" {
		<-stop // --block: serve until the Pod stops
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- h.runTasks() }()
	select {
	case err := <-done:
		if err != nil {
			say("TASKS-FAILED", err)
		}
	case <-stop:
		return nil
	}
	<-stop // --block: serve until the Pod stops
	return nil
}

// startupTasksEnv, set to 1 in the Ray container's environment, makes the
// head run sample_code.py's tasks at start (as TestReadmeDebugFlowOnNode
// expects) besides the jobs submitted to its dashboard.
const startupTasksEnv = "IMAGECTL_STANDIN_STARTUP_TASKS"

// head is a running head node: its session directory under the Ray root
// (--temp-dir, default /tmp/ray) and what runs jobs and tasks there.
type head struct {
	d       *dashboard.Server
	rows    *stateRows
	jobs    *jobRunner
	session string
	worker  string // rayworker.py
	python  string
	ip      string
	nodeID  string
	environ []string
}

// startHead creates the session directory as `ray start --head` does
// (<root>/session_<date>_<pid>, with the session_latest link), writes
// rayworker.py outside it (as Ray's default_worker.py lives in the ray
// package), and serves the Jobs API's submissions on d.
func startHead(d *dashboard.Server, root, ip, gcsAddr string, environ []string) (*head, error) {
	session := filepath.Join(root, fmt.Sprintf("session_%s_%06d", time.Now().UTC().Format("2006-01-02_15-04-05"), os.Getpid()))
	if err := os.MkdirAll(filepath.Join(session, "runtime_resources"), 0o755); err != nil {
		return nil, err
	}
	latest := filepath.Join(root, "session_latest")
	os.Remove(latest)
	if err := os.Symlink(session, latest); err != nil {
		return nil, err
	}
	workerDir, err := os.MkdirTemp("", "imagectl-standin-worker")
	if err != nil {
		return nil, err
	}
	worker := filepath.Join(workerDir, "rayworker.py")
	if err := os.WriteFile(worker, rayworker.Script, 0o644); err != nil {
		return nil, err
	}
	python := os.Getenv(pythonEnv)
	if python == "" {
		python = "python3"
	}
	h := &head{d: d, rows: newStateRows(d), session: session, worker: worker, python: python, ip: ip, nodeID: hexID(28), environ: environ}
	h.jobs = newJobRunner(d, h.rows, session, worker, ip, h.nodeID, gcsAddr, environ)
	return h, nil
}

// healthCheck answers `ray health-check --address HOST:PORT`: whether the
// GCS port there accepts a connection.
func healthCheck(args []string) error {
	addr := ""
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--address="); ok {
			addr = v
		} else if a == "--address" && i+1 < len(args) {
			addr = args[i+1]
		}
	}
	if addr == "" {
		return errors.New("health-check: no --address")
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return fmt.Errorf("health-check: %w", err)
	}
	return c.Close()
}

// podIP is the first IPv4 address not on loopback: what Ray takes as the
// node's IP in a Pod.
func podIP() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String(), nil
		}
	}
	return "", errors.New("no IPv4 address besides loopback")
}

func hexID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// runTasks writes sample_code.py where Ray puts a job's working_dir and
// runs its tasks one after the other, each in a worker process as Ray runs
// one: rayworker.py (internal/fakes/rayworker) with the working_dir as cwd
// and on PYTHONPATH, listening on the node's IP.
func (h *head) runTasks() error {
	dir := filepath.Join(h.session, "runtime_resources", "working_dir_files", "_ray_pkg_"+hexID(8))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "sample_code.py"), sampleCode, 0o644); err != nil {
		return err
	}
	jobID := "02000000" // the start-up tasks; submitted jobs count from 03000000
	tasks := []string{"f"}
	if os.Getenv("RAY_DEBUG_POST_MORTEM") == "1" {
		tasks = append(tasks, "g")
	}
	// Ray puts the working_dir first on the worker's PYTHONPATH; the image's
	// own (its site-packages, where debugpy is) stays after it.
	pythonPath := dir
	if p := os.Getenv("PYTHONPATH"); p != "" {
		pythonPath += ":" + p
	}
	for _, name := range tasks {
		cmd := exec.Command(h.python, h.worker, "sample_code", name, "7")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonPath, "PYTHONDONTWRITEBYTECODE=1", "RAY_NODE_IP="+h.ip)
		if err := h.runTask(cmd, name, jobID); err != nil {
			return fmt.Errorf("task %s: %w", name, err)
		}
	}
	return nil
}

// runTask runs one task's worker and keeps its worker and task rows as
// Ray's State API shows them (stateRows).
func (h *head) runTask(cmd *exec.Cmd, name, jobID string) error {
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	t := h.rows.newTask(cmd.Process.Pid, h.ip, h.nodeID, jobID, name)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		fmt.Println(line)
		t.line(line)
	}
	err = cmd.Wait()
	t.exit(err != nil)
	if err != nil {
		return err
	}
	say("TASK-DONE", name, t.state())
	return nil
}
