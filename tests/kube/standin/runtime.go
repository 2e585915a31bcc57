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
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/imagectl/imagectl/debug/dashboard/dashboardtest"
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

// ray answers `ray start …` (a head with --head, else a worker node) and
// `ray health-check`.
func ray(args []string) error {
	if len(args) == 0 {
		return errors.New("no command (the stand-in answers `ray start …` and `ray health-check`)")
	}
	switch args[0] {
	case "start":
	case "health-check":
		return healthCheck(args[1:])
	default:
		return fmt.Errorf("%s: the stand-in answers only `ray start` and `ray health-check`", args[0])
	}
	o, err := parseStart(args[1:])
	if err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	ip, err := podIP()
	if err != nil {
		return err
	}
	if !o.head {
		say("WORKER", strings.Join(args, " "))
		return runWorker(o, ip, stop)
	}
	al, err := net.Listen("tcp", ":"+o.agentPort)
	if err != nil {
		return fmt.Errorf("dashboard agent: %w", err)
	}
	go serveAgent(al)
	// The GCS port: the stand-in's own protocol (cluster.go), which also
	// accepts the bare connection `ray health-check` makes.
	gl, err := net.Listen("tcp", ":"+o.gcsPort)
	if err != nil {
		return fmt.Errorf("gcs: %w", err)
	}
	say("START", strings.Join(args, " "))

	dl, err := net.Listen("tcp", ":"+o.dashPort)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	d := dashboardtest.NewOn(dl)
	d.HandleFunc("GET /api/gcs_healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "success") })
	say("DASHBOARD", dl.Addr().String(), "AGENT", al.Addr().String(), "GCS", gl.Addr().String(), "NODE-IP", ip, "RESOURCES", formatResources(o.resources))

	h, err := startHead(d, o.root, ip, ip+":"+o.gcsPort, o.resources, os.Environ())
	if err != nil {
		return err
	}
	go func() {
		if err := (&http.Server{Handler: h.gcsHandler(), ReadHeaderTimeout: 30 * time.Second}).Serve(gl); err != nil {
			say("GCS-FAILED", err)
		}
	}()
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

// startOptions are the flags of `ray start` the stand-in acts on. Ray's
// flags are many; it accepts the others (KubeRay adds --block,
// --dashboard-host, --metrics-export-port, --memory, …).
type startOptions struct {
	head                               bool
	address                            string // --address of a worker node: the head's GCS HOST:PORT
	dashPort, agentPort, gcsPort, root string
	resources                          map[string]float64 // --resources, with --num-cpus as CPU
}

// parseStart reads `ray start`'s flags as KubeRay writes them (--name=value,
// after the shell that runs its command removed their quotes).
func parseStart(args []string) (startOptions, error) {
	o := startOptions{dashPort: "8265", agentPort: "52365", gcsPort: "6379", root: "/tmp/ray", resources: map[string]float64{}}
	cpus := float64(goruntime.NumCPU()) // Ray's default: the CPUs it detects
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "--head":
			o.head = true
		case "--address":
			o.address = v
		case "--dashboard-port":
			o.dashPort = v
		case "--dashboard-agent-listen-port":
			o.agentPort = v
		case "--port":
			o.gcsPort = v
		case "--temp-dir":
			o.root = v
		case "--num-cpus":
			n, err := strconv.ParseFloat(v, 64)
			if err != nil || n < 0 {
				return o, fmt.Errorf("--num-cpus=%s: want a non-negative number", v)
			}
			cpus = n
		case "--resources":
			r, err := parseResources(v)
			if err != nil {
				return o, err
			}
			for k, n := range r {
				o.resources[k] = n
			}
		}
	}
	o.resources["CPU"] = cpus
	if !o.head {
		if _, _, err := net.SplitHostPort(o.address); err != nil {
			return o, fmt.Errorf("--address=%s: a worker node needs the head's GCS address HOST:PORT (or --head)", o.address)
		}
	}
	return o, nil
}

// serveAgent serves the dashboard agent's health (KubeRay's probes).
func serveAgent(l net.Listener) {
	agent := http.NewServeMux()
	agent.HandleFunc("GET /api/local_raylet_healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "success") })
	if err := http.Serve(l, agent); err != nil {
		say("AGENT-FAILED", err)
	}
}

// runWorker is a worker node: it joins the head at --address (cluster.go),
// then serves the agent's health and runs the tasks the head hands it
// until the Pod stops.
func runWorker(o startOptions, ip string, stop <-chan os.Signal) error {
	python := os.Getenv(pythonEnv)
	if python == "" {
		python = "python3"
	}
	w := &workerNode{gcs: o.address, resources: o.resources}
	w.ip, w.nodeID, w.python, w.environ = ip, hexID(28), python, os.Environ()
	w.fetch = w.fetchFromHead
	rl, err := net.Listen("tcp", ip+":0")
	if err != nil {
		return fmt.Errorf("raylet: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	if err := w.register(ctx, rl.Addr().String(), 3*time.Minute); err != nil {
		return err
	}
	go func() {
		if err := (&http.Server{Handler: w.rayletHandler(), ReadHeaderTimeout: 30 * time.Second}).Serve(rl); err != nil {
			say("RAYLET-FAILED", err)
		}
	}()
	al, err := net.Listen("tcp", ":"+o.agentPort)
	if err != nil {
		return fmt.Errorf("dashboard agent: %w", err)
	}
	go serveAgent(al)
	say("JOINED", "NODE", w.nodeID, "NODE-IP", ip, "RAYLET", rl.Addr().String(), "AGENT", al.Addr().String(), "RESOURCES", formatResources(o.resources), "SESSION", w.session)
	<-ctx.Done() // --block: serve until the Pod stops
	return nil
}

// startupTasksEnv, set to 1 in the Ray container's environment, makes the
// head run sample_code.py's tasks at start (as TestReadmeDebugFlowOnNode
// expects) besides the jobs submitted to its dashboard.
const startupTasksEnv = "IMAGECTL_STANDIN_STARTUP_TASKS"

// head is a running head node: its session directory under the Ray root
// (--temp-dir, default /tmp/ray), what runs jobs and tasks there, and the
// scheduler that places the tasks drivers ask for on the cluster's nodes.
type head struct {
	nodeRuntime
	d     *dashboardtest.Server
	rows  *stateRows
	jobs  *jobRunner
	sched *scheduler
	root  string
}

// startHead creates the session directory as `ray start --head` does
// (<root>/session_<date>_<pid>, with the session_latest link), writes
// rayworker.py outside it, and serves the Jobs API's submissions on d.
// resources are the head node's own (tasks may run on it too).
func startHead(d *dashboardtest.Server, root, ip, gcsAddr string, resources map[string]float64, environ []string) (*head, error) {
	session, worker, err := newSession(root, fmt.Sprintf("session_%s_%06d", time.Now().UTC().Format("2006-01-02_15-04-05"), os.Getpid()))
	if err != nil {
		return nil, err
	}
	python := os.Getenv(pythonEnv)
	if python == "" {
		python = "python3"
	}
	h := &head{d: d, rows: newStateRows(d), root: root}
	h.session, h.worker, h.python, h.ip, h.nodeID, h.environ = session, worker, python, ip, hexID(28), environ
	h.fetch = func(_ context.Context, uri string) ([]byte, error) {
		b, ok := d.Package(uri)
		if !ok {
			return nil, errNoPackage(uri)
		}
		return b, nil
	}
	h.sched = newScheduler(&clusterNode{id: h.nodeID, ip: ip, resources: resources, used: map[string]float64{}}, taskWait)
	h.jobs = newJobRunner(d, h.rows, &h.nodeRuntime, gcsAddr)
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
// one: rayworker.py (smoke/probe/probetest) with the working_dir as cwd
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
		if err := h.runStartupTask(cmd, name, jobID); err != nil {
			return fmt.Errorf("task %s: %w", name, err)
		}
	}
	return nil
}

// runStartupTask runs one start-up task's worker and keeps its worker and
// task rows as Ray's State API shows them (stateRows).
func (h *head) runStartupTask(cmd *exec.Cmd, name, jobID string) error {
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
