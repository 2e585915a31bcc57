package debug

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/imagectl/imagectl/debug/dashboard"
	fake "github.com/imagectl/imagectl/debug/dashboard/dashboardtest"
)

// The tracker reads the fake dashboard through the client the probe uses,
// with the extension's own queries, and reports each pause and resume once.
func TestPausedTracker(t *testing.T) {
	d := fake.New()
	t.Cleanup(d.Close)
	api, err := dashboard.New(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string][2]string{"10.0.0.5": {"rc-head-abc", "head"}, "10.0.0.6": {"rc-worker-def", "worker"}}
	tr := newPausedTracker(api, func(_ context.Context, ip string) (string, string) { return pods[ip][0], pods[ip][1] })
	ctx := context.Background()

	step := func(name string, wantPaused, wantResumed []*PausedTask) {
		t.Helper()
		p, r, err := tr.poll(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(wantPaused, p); diff != "" {
			t.Errorf("%s: paused (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(wantResumed, r); diff != "" {
			t.Errorf("%s: resumed (-want +got):\n%s", name, diff)
		}
	}

	step("nothing paused", nil, nil)

	// A worker that listens but has not raised num_paused_threads yet, and
	// one paused: only the paused one is reported, with its task.
	d.SetWorkers(
		fake.Worker{WorkerID: "w1", IsAlive: true, WorkerType: "WORKER", IP: "10.0.0.5", PID: 11, DebuggerPort: 5001, NumPausedThreads: 1},
		fake.Worker{WorkerID: "w2", IsAlive: true, WorkerType: "WORKER", IP: "10.0.0.6", PID: 12, DebuggerPort: 5002},
	)
	d.SetTasks(
		fake.Task{TaskID: "t1", Name: "f", State: "RUNNING", JobID: "02000000", WorkerID: "w1"},
		fake.Task{TaskID: "t2", Name: "g", State: "RUNNING", JobID: "02000000", WorkerID: "w2"},
	)
	p1 := &PausedTask{WorkerID: "w1", TaskID: "t1", Name: "f", JobID: "02000000", IP: "10.0.0.5", Port: 5001, Pod: "rc-head-abc", NodeType: "head", PID: 11}
	step("one paused", []*PausedTask{p1}, nil)
	step("no change, no report", nil, nil)

	// The second pauses on the worker Pod: two at once.
	d.SetWorkers(
		fake.Worker{WorkerID: "w1", IsAlive: true, WorkerType: "WORKER", IP: "10.0.0.5", PID: 11, DebuggerPort: 5001, NumPausedThreads: 1},
		fake.Worker{WorkerID: "w2", IsAlive: true, WorkerType: "WORKER", IP: "10.0.0.6", PID: 12, DebuggerPort: 5002, NumPausedThreads: 1},
	)
	p2 := &PausedTask{WorkerID: "w2", TaskID: "t2", Name: "g", JobID: "02000000", IP: "10.0.0.6", Port: 5002, Pod: "rc-worker-def", NodeType: "worker", PID: 12}
	step("second paused", []*PausedTask{p2}, nil)

	// The first resumes (num_paused_threads back to 0), the second's
	// worker dies.
	d.SetWorkers(
		fake.Worker{WorkerID: "w1", IsAlive: true, WorkerType: "WORKER", IP: "10.0.0.5", PID: 11, DebuggerPort: 5001},
		fake.Worker{WorkerID: "w2", IsAlive: false, WorkerType: "WORKER", IP: "10.0.0.6", PID: 12, DebuggerPort: 5002, NumPausedThreads: 1},
	)
	step("both resumed", nil, []*PausedTask{p1, p2})
}

func TestPausedTaskString(t *testing.T) {
	tests := []struct {
		p    PausedTask
		want string
	}{
		{PausedTask{Name: "f", IP: "10.0.0.5", Port: 5001, Pod: "rc-head-abc", NodeType: "head"}, "task f on Pod rc-head-abc (head), debugpy at 10.0.0.5:5001"},
		{PausedTask{Driver: true, IP: "10.0.0.5", Port: 5001}, "the driver on 10.0.0.5, debugpy at 10.0.0.5:5001"},
		{PausedTask{WorkerID: "w9", IP: "10.0.0.7", Port: 7}, "worker w9 on 10.0.0.7, debugpy at 10.0.0.7:7"},
	}
	for _, tc := range tests {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// podOfIP names the Pod of the session's Ray cluster that owns a paused
// worker's IP, with KubeRay's ray.io/node-type: a task on a worker Pod is
// reported on that Pod as "worker". Pods of another Ray cluster and Pods
// that ended are not taken for it.
func TestPodOfIP(t *testing.T) {
	pod := func(name, cluster, nodeType, ip string, phase corev1.PodPhase, more ...string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns1", Labels: map[string]string{"ray.io/cluster": cluster, "ray.io/node-type": nodeType}},
			Status:     corev1.PodStatus{Phase: phase, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}},
		}
		for _, m := range more {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: m})
		}
		return p
	}
	core := kubefake.NewClientset(
		pod("rc-head-abc", "rc", "head", "10.0.0.5", corev1.PodRunning),
		pod("rc-workers-worker-def", "rc", "worker", "10.0.0.6", corev1.PodRunning, "fd00::6"),
		pod("rc-workers-worker-old", "rc", "worker", "10.0.0.7", corev1.PodFailed),
		pod("other-head-xyz", "other", "head", "10.0.0.7", corev1.PodRunning),
		pod("other-workers-worker-q", "other", "worker", "10.0.0.8", corev1.PodRunning),
	)
	s := &session{c: &Cluster{Core: clientsetCore{core}, Namespace: "ns1"}, cluster: "rc"}
	tests := []struct{ ip, pod, nodeType string }{
		{"10.0.0.5", "rc-head-abc", "head"},
		{"10.0.0.6", "rc-workers-worker-def", "worker"},
		{"fd00::6", "rc-workers-worker-def", "worker"},
		{"10.0.0.7", "", ""}, // its Pod of rc ended; the running one is another cluster's
		{"10.0.0.8", "", ""},
		{"10.0.0.9", "", ""},
	}
	for _, tc := range tests {
		if pod, nodeType := s.podOfIP(context.Background(), tc.ip); pod != tc.pod || nodeType != tc.nodeType {
			t.Errorf("podOfIP(%s) = %q, %q; want %q, %q", tc.ip, pod, nodeType, tc.pod, tc.nodeType)
		}
	}

	// Through the tracker, as Run wires it: a task paused on the worker.
	d := fake.New()
	t.Cleanup(d.Close)
	api, err := dashboard.New(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	d.SetWorkers(fake.Worker{WorkerID: "w1", IsAlive: true, WorkerType: "WORKER", IP: "10.0.0.6", PID: 40, DebuggerPort: 40123, NumPausedThreads: 1})
	d.SetTasks(fake.Task{TaskID: "t1", Name: "f", State: "RUNNING", JobID: "03000000", WorkerID: "w1"})
	paused, _, err := newPausedTracker(api, s.podOfIP).poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []*PausedTask{{WorkerID: "w1", TaskID: "t1", Name: "f", JobID: "03000000", IP: "10.0.0.6", Port: 40123, PID: 40, Pod: "rc-workers-worker-def", NodeType: "worker"}}
	if diff := cmp.Diff(want, paused); diff != "" {
		t.Errorf("paused (-want +got):\n%s", diff)
	}
	if got, wantS := paused[0].String(), "task f on Pod rc-workers-worker-def (worker), debugpy at 10.0.0.6:40123"; got != wantS {
		t.Errorf("String() = %q, want %q", got, wantS)
	}
}
