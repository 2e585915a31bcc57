package kube

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imagectl/imagectl/debug"
	"github.com/imagectl/imagectl/smoke/kind"
)

// TestDebugOnNode runs imagectl debug as a user types it, on the node: a
// RayJob in InteractiveMode whose Ray container is the stand-in, the
// working_dir uploaded through the Jobs API and unpacked by the stand-in
// where Ray puts it, the entrypoint submitted by debug (no plugin, no Ray
// CLI). When debug reports the task paused on the head Pod, docs/smoke.md's
// attach runs from the sidecar and stops in the task with its source
// opened; then the job ends and debug exits with its outcome: 0 for the
// breakpoint (the task returns), 8 for the post-mortem stop (the task's
// exception fails the job). The events are checked in order.
//
// The entrypoint is the stand-in's driver.py, which asks the head for one
// task (tests/kube/standin/cluster.go): with no resources it runs on the
// head Pod; in the worker case the RayJob's worker group has a custom
// resource (rayStartParams.resources, quoted as KubeRay's docs write it),
// the driver asks for it, and the task runs on the worker Pod, which
// joined the head through its Service's name (the node's CoreDNS and
// kube-proxy) and unpacked the job's package at the path the head has: the
// paused event names the worker Pod, the sidecar's attach crosses the Pod
// network to it, and the source opens by its path (the head holds the same
// file at the same path, as a Ray head does for its driver).
func TestDebugOnNode(t *testing.T) {
	c := needCluster(t)
	n := needNode(t)
	dir := t.TempDir()
	ns := c.namespace(t, nil)
	kc := c.kubeconfigIn(t, dir, ns)
	staticImagectl(t, dir)

	wd := standinWorkingDir(t, dir)

	cases := []struct {
		name, job, fn string
		postMortem    bool
		onWorker      bool // the task pinned to the worker group's custom resource
		code          int
		status        string
		log           string
	}{
		{name: "breakpoint", job: "dbg-f", fn: "f", code: 0, status: "SUCCEEDED", log: "RESULT 49"},
		{name: "post-mortem", job: "dbg-g", fn: "g", postMortem: true, code: 8, status: "FAILED", log: "TASK ERROR ZeroDivisionError"},
		{name: "worker", job: "dbg-w", fn: "f", onWorker: true, code: 0, status: "SUCCEEDED", log: "RESULT 49"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := kind.Params{Name: tc.job, RayVersion: "2.46.0", Python: "3.12"}
			plain, err := kind.RenderPlain(p)
			if err != nil {
				t.Fatal(err)
			}
			plain = replaceAll(t, plain, p.RayImage(), n.rayImage, 2)
			if !tc.postMortem {
				plain = replaceAll(t, plain, "      RAY_DEBUG_POST_MORTEM: \"1\"\n", "", 1)
			}
			entrypoint := []string{"python3", "driver.py", "sample_code", tc.fn, "7"}
			if tc.onWorker {
				// KubeRay pastes rayStartParams.resources into
				// `ray start --resources=…` as written: the value carries
				// its own quotes for the shell (KubeRay's docs).
				plain = replaceAll(t, plain, "        num-cpus: \"1\"\n", "        num-cpus: \"1\"\n        resources: '\"{\\\"worker_slot\\\": 1}\"'\n", 1)
				entrypoint = append(entrypoint, "worker_slot=1")
			}
			job := tc.name + ".yaml"
			writeFile(t, filepath.Join(dir, job), plain)

			start := time.Now()
			var firstPause time.Duration
			var head string
			attached := false
			r := imagectlDebug(t, dir, func(e debug.Event) bool {
				switch e.Kind {
				case debug.KindReady:
					head = e.Pod
				case debug.KindPaused:
					if firstPause == 0 {
						firstPause = time.Since(start)
						t.Logf("%s: first paused event %s after imagectl debug started: %v", tc.name, firstPause.Round(time.Second), e.Task)
					}
					wantPod, wantType := head, "head"
					if tc.onWorker {
						wantPod, wantType = c.podWithIP(t, ns, "ray.io/node-type=worker", e.Task), "worker"
					}
					if e.Task == nil || e.Task.Name != tc.fn || e.Task.Pod != wantPod || e.Task.NodeType != wantType {
						t.Errorf("paused event %+v: want task %s on the %s Pod %s", e.Task, tc.fn, wantType, wantPod)
						return true
					}
					attached = c.attachFromSidecar(t, dir, kc, head, tc.fn, tc.postMortem)
					if !attached {
						return true
					}
				}
				return false
			}, debugArgsAsDocumented(t, map[string]string{"-f": job, "--working-dir": wd},
				[]string{"--kubeconfig", kc, "--image", n.sidecarImage, "--ready-timeout", "4m", "--cleanup", "--logs"},
				entrypoint)...)
			if r.code != tc.code {
				c.dumpPods(t, ns)
				t.Fatalf("imagectl debug exited %d, want %d\nstderr: %s", r.code, tc.code, r.stderr)
			}
			if !attached {
				t.Fatal("the task was never attached to")
			}
			// The events, in order (waiting and log lines repeat).
			want := []string{"warning", "applied", "waiting", "ready", "submitted", "paused", "resumed", "finished", "cleanup"}
			if got := withoutKinds(r.kinds(), "log", "waiting", "warning"); strings.Join(got, " ") != strings.Join(withoutKinds(want, "waiting", "warning"), " ") {
				t.Errorf("events %v, want (waiting, warnings and logs aside) %v", r.kinds(), withoutKinds(want, "waiting", "warning"))
			}
			fin := r.find(debug.KindFinished)
			if fin == nil || fin.JobStatus != tc.status {
				t.Fatalf("finished event %+v: want job status %s", fin, tc.status)
			}
			var logs []string
			for _, e := range r.events {
				if e.Kind == debug.KindLog {
					logs = append(logs, e.Message)
				}
			}
			if !strings.Contains(strings.Join(logs, "\n"), tc.log) {
				t.Errorf("--logs printed %q, want a line with %q", logs, tc.log)
			}
			if sub := r.find(debug.KindSubmitted); sub == nil || !strings.HasPrefix(sub.JobID, p.Name+"-") {
				t.Errorf("submitted event %+v: want the RayJob's name as the job's prefix", sub)
			} else if got := c.must(t, nil, "get", "rayjob", p.Name, "-n", ns, "--ignore-not-found", "-o", "jsonpath={.spec.jobId}"); got != "" && got != sub.JobID {
				t.Errorf("RayJob spec.jobId %q, want the submitted %q", got, sub.JobID)
			}
		})
	}
}

// standinWorkingDir makes dir/working_dir with the stand-in's task module
// and driver (tests/kube/standin), the working_dir a debug session uploads.
func standinWorkingDir(t *testing.T, dir string) string {
	t.Helper()
	wd := filepath.Join(dir, "working_dir")
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sample_code.py", "driver.py"} {
		writeFile(t, filepath.Join(wd, f), readFile(t, filepath.Join(repoRoot(t), "tests", "kube", "standin", f)))
	}
	return wd
}

// podWithIP is the name of the Pod in ns matching selector whose IP is the
// paused task's ("" when none is).
func (c *cluster) podWithIP(t *testing.T, ns, selector string, task *debug.PausedTask) string {
	t.Helper()
	if task == nil {
		return ""
	}
	out := c.must(t, nil, "get", "pods", "-n", ns, "-l", selector, "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.podIP}{"\n"}{end}`)
	for _, l := range strings.Split(out, "\n") {
		if name, ip, ok := strings.Cut(strings.TrimSpace(l), " "); ok && ip == task.IP {
			return name
		}
	}
	t.Errorf("no Pod (%s) in %s has the paused task's IP %s:\n%s", selector, ns, task.IP, out)
	return ""
}

func withoutKinds(ks []string, drop ...string) []string {
	var out []string
	for _, k := range ks {
		skip := false
		for _, d := range drop {
			skip = skip || k == d
		}
		if !skip && (len(out) == 0 || out[len(out)-1] != k) {
			out = append(out, k)
		}
	}
	return out
}

// attachFromSidecar runs docs/smoke.md's attach from the sidecar of the
// head Pod and reports whether it stopped in fn with its source opened.
func (c *cluster) attachFromSidecar(t *testing.T, dir, kc, head, fn string, postMortem bool) bool {
	t.Helper()
	env := []string{"KUBECONFIG=" + kc, "HEAD=" + head}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, stderr, err := run(ctx, dir, env, nil, "kubectl", "cp", "bin/imagectl-probe", head+":/tmp/imagectl-probe", "-c", sidecarName); err != nil {
		t.Errorf("kubectl cp: %v\n%s", err, stderr)
		return false
	}
	args := []string{"exec", head, "-c", sidecarName, "--", "/tmp/imagectl-probe", "attach", "--dashboard", "http://127.0.0.1:8265", "--expect-function", fn, "--output", "json"}
	if postMortem {
		args = append(args, "--post-mortem")
	}
	out, stderr, err := run(ctx, dir, env, nil, "kubectl", args...)
	if err != nil {
		t.Errorf("smoke attach: %v\n%s\n%s", err, out, stderr)
		return false
	}
	var rep struct {
		OK     bool `json:"ok"`
		Attach struct {
			Frame struct {
				Name string `json:"name"`
				Path string `json:"path"`
			} `json:"frame"`
			Source struct {
				Opened string `json:"opened"`
			} `json:"source"`
		} `json:"attach"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Errorf("smoke attach's report is not JSON: %v\n%s", err, out)
		return false
	}
	t.Logf("attached: stopped in %s at %s, source %s", rep.Attach.Frame.Name, rep.Attach.Frame.Path, rep.Attach.Source.Opened)
	if !rep.OK || !strings.Contains(rep.Attach.Frame.Path, "/runtime_resources/working_dir_files/_ray_pkg_") || rep.Attach.Source.Opened != "path" {
		t.Errorf("smoke attach: ok=%v frame %s source %q: want the uploaded working_dir's sample_code.py opened by path\n%s", rep.OK, rep.Attach.Frame.Path, rep.Attach.Source.Opened, out)
		return false
	}
	return true
}

// TestDebugJobHeadGoneOnNode: a session that follows a job ends when the
// job's head Pod is deleted under a paused task: it does not wait for
// KubeRay's new head as a session without a job does. It ends with the
// RayJob's end if KubeRay reports one by then (exit 8), or with an error
// naming the head Pod and the job (exit 1); never at --ready-timeout.
func TestDebugJobHeadGoneOnNode(t *testing.T) {
	c := needCluster(t)
	n := needNode(t)
	dir := t.TempDir()
	ns := c.namespace(t, nil)
	kc := c.kubeconfigIn(t, dir, ns)
	wd := standinWorkingDir(t, dir)
	p := kind.Params{Name: "dbg-hg", RayVersion: "2.46.0", Python: "3.12"}
	plain, err := kind.RenderPlain(p)
	if err != nil {
		t.Fatal(err)
	}
	plain = replaceAll(t, plain, p.RayImage(), n.rayImage, 2)
	writeFile(t, filepath.Join(dir, "job.yaml"), plain)

	head := ""
	var deletedAt time.Time
	r := imagectlDebug(t, dir, func(e debug.Event) bool {
		switch e.Kind {
		case debug.KindReady:
			if head != "" {
				t.Errorf("a second ready event (%s) in a session that follows a job", e.Message)
				return true
			}
			head = e.Pod
		case debug.KindPaused:
			if deletedAt.IsZero() {
				c.must(t, nil, "delete", "pod", "-n", ns, head, "--wait=false")
				deletedAt = time.Now()
			}
		}
		return false
	}, "-f", "job.yaml", "--kubeconfig", kc, "--image", n.sidecarImage, "--working-dir", wd, "--ready-timeout", "4m",
		"--", "python3", "driver.py", "sample_code", "f", "7")
	if deletedAt.IsZero() {
		c.dumpPods(t, ns)
		t.Fatalf("no task paused, so no head Pod was deleted: exit %d, events %v\n%s", r.code, r.kinds(), r.stderr)
	}
	ended := time.Since(deletedAt).Round(time.Second)
	fin := r.find(debug.KindFinished)
	switch {
	case r.code == 8 && fin != nil && fin.JobStatus != "SUCCEEDED":
		t.Logf("KubeRay reported the job %s before the session looked: %s", fin.JobStatus, fin.Message)
	case r.code == 1 && strings.Contains(r.stderr, "head Pod "+head+" of RayCluster ") && strings.Contains(r.stderr, " ran on it ("):
	default:
		t.Fatalf("exit %d, finished %+v, %s after the head Pod was deleted; want exit 1 naming head Pod %s and the job, or 8 with the job's end\n%s", r.code, fin, ended, head, r.stderr)
	}
	if ended > 2*time.Minute {
		t.Errorf("the session ended %s after its head Pod was deleted", ended)
	}
}
