package kube

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// netClusterYAML is a RayCluster with a head and one worker, both the Ray
// stand-in (%[2]s), named %[1]s. rayStartParams is written out: KubeRay
// v1.3's CRD requires it.
const netClusterYAML = `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: %[1]s
spec:
  rayVersion: "2.46.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        terminationGracePeriodSeconds: 2
        containers:
        - name: ray-head
          image: %[2]s
          imagePullPolicy: IfNotPresent
          resources:
            requests: {cpu: 100m, memory: 256Mi}
            limits: {cpu: "1", memory: 1Gi}
  workerGroupSpecs:
  - groupName: small
    replicas: 1
    minReplicas: 1
    maxReplicas: 1
    rayStartParams: {}
    template:
      spec:
        terminationGracePeriodSeconds: 2
        containers:
        - name: ray-worker
          image: %[2]s
          imagePullPolicy: IfNotPresent
          resources:
            requests: {cpu: 100m, memory: 256Mi}
            limits: {cpu: "1", memory: 1Gi}
`

// TestWorkerJoinsThroughServicesOnNode runs a RayCluster with a worker
// group on the node, whose cluster DNS (CoreDNS) and Service routing
// (kube-proxy) with-kube.sh starts: the worker's init container
// wait-gcs-ready (KubeRay v1.3.0 and v1.5.0: a bash loop of
// `ray health-check --address <head Service's FQDN>:6379`, which the
// stand-in answers by dialling that address) ends with "GCS is ready.", the
// worker's Ray container starts (`ray start --address=<FQDN>:6379`, the
// stand-in's worker) and is Ready; from inside the worker Pod the head
// Service's name resolves to what the Service points at (the head Pod's IP
// for a headless Service, else its ClusterIP), a name of no Service does
// not resolve, and a ClusterIP Service of the test's own in front of the
// head's dashboard answers on its ClusterIP and by its name (kube-proxy's
// DNAT to the head Pod).
func TestWorkerJoinsThroughServicesOnNode(t *testing.T) {
	c := needCluster(t)
	n := needNode(t)
	ns := c.namespace(t, nil)
	const name = "net"
	manifest := []byte(fmt.Sprintf(netClusterYAML, name, n.rayImage))
	if err := c.apply(t, ns, manifest); err != nil {
		t.Fatal(err)
	}
	o := rayObjects(t, manifest)[0]
	head := c.readyPod(t, ns, c.headSelector(t, ns, o), 3*time.Minute)
	worker := c.readyPod(t, ns, "ray.io/node-type=worker,ray.io/cluster="+name, 3*time.Minute)
	t.Logf("head Pod %s (%s), worker Pod %s (%s): Ready", head.Name, head.Status.PodIP, worker.Name, worker.Status.PodIP)

	// The worker got past wait-gcs-ready, by the head Service's name.
	fqdn := envValue(t, worker.Spec, worker.Spec.Containers[0].Name, "FQ_RAY_IP")
	if want := ".svc.cluster.local"; !strings.HasSuffix(fqdn, "."+ns+want) {
		t.Fatalf("the worker's FQ_RAY_IP is %q, want the head Service's name in %s%s", fqdn, ns, want)
	}
	var waited bool
	for _, s := range worker.Status.InitContainerStatuses {
		if s.Name != "wait-gcs-ready" {
			continue
		}
		waited = true
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			t.Fatalf("init container wait-gcs-ready: %+v, want it ended with exit code 0", s.State)
		}
	}
	if !waited {
		t.Fatalf("the worker Pod has no init container wait-gcs-ready (init containers: %v): KubeRay %s adds it to every worker", names(worker.Spec.InitContainers), c.kuberay)
	}
	logs := c.must(t, nil, "logs", "-n", ns, worker.Name, "-c", "wait-gcs-ready")
	if !strings.Contains(logs, "GCS is ready.") {
		t.Fatalf("wait-gcs-ready's log has no \"GCS is ready.\":\n%s", logs)
	}
	ray := worker.Spec.Containers[0].Name
	c.waitFor(t, 30*time.Second, "the stand-in's `ray start` (worker) line in "+worker.Name+"'s log", func() (bool, error) {
		logs, err := c.kubectl(t, nil, "logs", "-n", ns, worker.Name, "-c", ray)
		return strings.Contains(logs, "IMAGECTL-STANDIN WORKER start ") && strings.Contains(logs, "--address="+fqdn+":6379"), err
	})

	// DNS, from inside the worker Pod.
	var svc corev1.Service
	svcName, _, _ := strings.Cut(fqdn, ".")
	if err := json.Unmarshal([]byte(c.must(t, nil, "get", "service", svcName, "-n", ns, "-o", "json")), &svc); err != nil {
		t.Fatal(err)
	}
	wantIP := svc.Spec.ClusterIP
	if wantIP == corev1.ClusterIPNone {
		wantIP = head.Status.PodIP
	}
	if got := c.resolve(t, ns, worker.Name, ray, fqdn); got != wantIP {
		t.Fatalf("%s resolves to %q in the worker Pod, want %s (Service %s, clusterIP %q; head Pod %s)", fqdn, got, wantIP, svcName, svc.Spec.ClusterIP, head.Status.PodIP)
	}
	t.Logf("%s resolves to %s in the worker Pod (Service clusterIP %q)", fqdn, wantIP, svc.Spec.ClusterIP)
	if out, err := c.exec(t, ns, worker.Name, ray, "getent", "hosts", "no-such-service."+ns+".svc.cluster.local"); err == nil {
		t.Fatalf("a name of no Service resolves in the worker Pod: %s", out)
	}

	// A ClusterIP, from inside the worker Pod: a Service of the test's own
	// in front of the head's dashboard.
	dash := fmt.Sprintf(`{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "%s-dashboard"},
 "spec": {"type": "ClusterIP", "selector": {"ray.io/cluster": %q, "ray.io/node-type": "head"}, "ports": [{"name": "dashboard", "port": 80, "targetPort": %d}]}}`, name, name, o.Dashboard)
	if err := c.apply(t, ns, []byte(dash)); err != nil {
		t.Fatal(err)
	}
	clusterIP := strings.TrimSpace(c.must(t, nil, "get", "service", name+"-dashboard", "-n", ns, "-o", "jsonpath={.spec.clusterIP}"))
	if clusterIP == "" || clusterIP == corev1.ClusterIPNone {
		t.Fatalf("Service %s-dashboard has clusterIP %q", name, clusterIP)
	}
	dashName := name + "-dashboard." + ns + ".svc.cluster.local"
	if got := c.resolve(t, ns, worker.Name, ray, dashName); got != clusterIP {
		t.Fatalf("%s resolves to %q in the worker Pod, want its ClusterIP %s", dashName, got, clusterIP)
	}
	for _, host := range []string{clusterIP, dashName} {
		u := "http://" + host + ":80/api/gcs_healthz"
		var out string
		// kube-proxy writes the Service's rules once its EndpointSlice
		// names the head Pod.
		c.waitFor(t, 60*time.Second, "GET "+u+" from the worker Pod", func() (bool, error) {
			var err error
			out, err = c.exec(t, ns, worker.Name, ray, "wget", "-T", "5", "-q", "-O-", u)
			return err == nil, nil
		})
		if out != "success" {
			t.Fatalf("GET %s from the worker Pod: %q, want the head dashboard's \"success\"", u, out)
		}
		t.Logf("GET %s from the worker Pod: %q (the head's dashboard through the ClusterIP)", u, out)
	}
}

// exec runs args in container ct of Pod pod, returning its stdout.
func (c *cluster) exec(t *testing.T, ns, pod, ct string, args ...string) (string, error) {
	t.Helper()
	return c.kubectl(t, nil, append([]string{"exec", "-n", ns, pod, "-c", ct, "--"}, args...)...)
}

// resolve is the address name resolves to in container ct of Pod pod, as
// its libc resolver (the Pod's resolv.conf: the cluster DNS) answers
// `getent hosts`; "" when it does not resolve in 3 tries and 90 s. The
// cluster's DNS is eventually consistent and, on a loaded 2-core machine, a
// UDP query can go unanswered: glibc's parallel A and AAAA queries through
// kube-proxy's DNAT can lose one, and getent then waits out its resolver's
// timeouts (one try can take 40 s on its own). A
// lookup that finds nothing is asked again, every second, at least 3 times,
// and each miss is logged with what CoreDNS logged of the name, so that a
// miss says whether it was a timeout (no line), an error or NXDOMAIN. An
// answer, right or wrong, is returned at once.
func (c *cluster) resolve(t *testing.T, ns, pod, ct, name string) string {
	t.Helper()
	end := time.Now().Add(90 * time.Second)
	for try := 1; ; try++ {
		start := time.Now()
		out, err := c.exec(t, ns, pod, ct, "getent", "hosts", name)
		if f := strings.Fields(out); err == nil && len(f) > 0 {
			if try > 1 {
				t.Logf("getent hosts %s in %s: %s, at try %d", name, pod, f[0], try)
			}
			return f[0]
		}
		t.Logf("getent hosts %s in %s, try %d (%s, at %s): %v, %q%s", name, pod, try, time.Since(start).Round(time.Millisecond), start.UTC().Format("15:04:05.000"), err, out, c.dnsLog(name))
		if try >= 3 && time.Now().After(end) {
			return ""
		}
		time.Sleep(time.Second)
	}
}

// dnsLog is what the node's CoreDNS logged (its log plugin: one line per
// query, with its answer's code) of queries for name, alone or followed by
// a domain of the Pod's search list, the last 20; "" off the node.
func (c *cluster) dnsLog(name string) string {
	dir := os.Getenv("IMAGECTL_KUBE_LOGS")
	if dir == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, "coredns.log"))
	if err != nil {
		return "; CoreDNS's log: " + err.Error()
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, name) {
			lines = append(lines, l)
		}
	}
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return fmt.Sprintf("; CoreDNS logged, of %s (last %d lines):\n%s", name, len(lines), strings.Join(lines, "\n"))
}

// readyPod waits for the one Pod of ns matching selector to be Ready and
// returns it. It fails at once, with the reason, when a container of it
// cannot start (an image that cannot be pulled, a container that keeps
// exiting, an init container that failed), and with the Pods' events and
// logs on timeout.
func (c *cluster) readyPod(t *testing.T, ns, selector string, timeout time.Duration) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	end := time.Now().Add(timeout)
	for {
		pods := c.pods(t, ns, selector)
		if len(pods) > 1 {
			t.Fatalf("%d Pods match %s in %s, want 1", len(pods), selector, ns)
		}
		if len(pods) == 1 {
			pod = pods[0]
			for _, s := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
				if w := s.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" || w.Reason == "CrashLoopBackOff" || w.Reason == "CreateContainerError") {
					c.dumpPods(t, ns)
					t.Fatalf("Pod %s (%s): container %s is %s: %s", pod.Name, selector, s.Name, w.Reason, w.Message)
				}
			}
			for _, cond := range pod.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					return pod
				}
			}
		}
		if time.Now().After(end) {
			c.dumpPods(t, ns)
			for _, s := range pod.Status.InitContainerStatuses {
				out, _ := c.kubectl(t, nil, "logs", "-n", ns, pod.Name, "-c", s.Name, "--tail", "20")
				t.Logf("%s/%s (init) log:\n%s", pod.Name, s.Name, out)
			}
			t.Fatalf("no Ready Pod %s in %s after %s (last seen: %s, phase %q)", selector, ns, timeout, pod.Name, pod.Status.Phase)
		}
		time.Sleep(time.Second)
	}
}
