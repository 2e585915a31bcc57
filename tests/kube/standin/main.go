// Command standin is the test fixture that lets a real kubelet run the Ray
// head Pod the KubeRay operator writes, without Ray: one static binary that
// acts by the name it is called as.
//
//   - ray: `ray start --head …` (the command KubeRay generates) serves the
//     project's fake Ray dashboard (debug/dashboard/dashboardtest) on :8265 with
//     GET /api/gcs_healthz, and the dashboard agent's
//     GET /api/local_raylet_healthz on :52365 (KubeRay's probes), creates
//     the session directory under --temp-dir (default /tmp/ray) and runs
//     the jobs submitted to the dashboard's Jobs API as Ray does (jobs.go:
//     the uploaded working_dir unpacked into
//     session_…/runtime_resources/working_dir_files/_ray_pkg_<hash>/, the
//     entrypoint run by /bin/sh there, its status and logs served). An
//     entrypoint such as `python3 "$STANDIN_RAYWORKER" sample_code f 7`
//     is itself a task in smoke/probe/probetest's rayworker.py with real
//     debugpy, listed in the State API as Ray lists a paused worker until a
//     debugger attaches; any other entrypoint is the job's driver (a DRIVER
//     worker row), which asks the head for tasks as driver.py does.
//     The GCS port (6379) serves the stand-in's own cluster protocol
//     (cluster.go): worker nodes register there, fetch a job's packages,
//     and a driver (RAY_ADDRESS) asks for a task with the resources it
//     needs; the head runs it on itself or on a worker node that has them,
//     and lists its worker and task rows (the IP and node ID of the node
//     that runs it) in its State API. A bare connection, which
//     `ray health-check --address` makes (a worker's init container, which
//     reaches the head by its Service's name through the node's CoreDNS and
//     kube-proxy), is accepted too.
//     With IMAGECTL_STANDIN_STARTUP_TASKS=1 the head also runs the tasks of
//     sample_code.py at start (written where Ray puts a job's working_dir):
//     a task f paused at breakpoint() and, when RAY_DEBUG_POST_MORTEM=1, a
//     task g frozen on its uncaught exception, each listening on the pod's
//     IP. It then blocks, as `ray start --block` does.
//   - ray: `ray start --address=HOST:PORT [--num-cpus=N]
//     [--resources=JSON] …` (a KubeRay worker Pod) joins the head at its GCS
//     address with its node ID, Pod IP and resources, creates its session
//     directory at the path the head names (Ray's worker nodes read the
//     session name and temp dir from the GCS), serves the agent's health,
//     and runs the tasks the head hands it: the job's packages downloaded
//     from the head and unpacked there, rayworker.py listening on the Pod's
//     IP, its lines passed back to the head and on to the driver.
//   - ray health-check --address HOST:PORT: whether HOST:PORT accepts a
//     connection.
//   - wget: the `wget [--tries N] -T S -q -O- URL` KubeRay's exec probes run.
//   - pause: the Pod sandbox's process (exits on SIGTERM/SIGINT, reaps
//     children).
//   - standin image …: writes the images tests/e2e/with-kube.sh imports
//     into containerd (see image.go).
//
// Every line of its own starts with IMAGECTL-STANDIN (the workers' output
// passes through as they print it), so a test reads the task's progress
// from `kubectl logs`.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	var err error
	switch name := filepath.Base(os.Args[0]); {
	case name == "pause":
		err = pause()
	case name == "wget":
		err = wget(os.Args[1:])
	case name == "ray":
		err = ray(os.Args[1:])
	case len(os.Args) > 1 && os.Args[1] == "image":
		err = image(os.Args[2:])
	default:
		err = fmt.Errorf("called as %q: want ray, wget or pause (a link to this binary), or `standin image …`", name)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(os.Args[0]), err)
		os.Exit(1)
	}
}
