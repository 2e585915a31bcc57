package debug

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/imagectl/imagectl/debug/dashboard"
)

// TestHeadGone: a head Pod that runs, or is being started again by the
// kubelet, is there; one not found, being deleted, or ended (evicted) is
// gone, and the error says which.
func TestHeadGone(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC))
	// The session followed the Pod of UID uid-1; a case without a UID is
	// a look that decides by the Pod's state alone.
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod // nil: not found
		want string      // "": not gone
	}{
		{name: "running", pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}},
		{name: "replaced by a Pod of the same name", pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-2"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
			want: "head Pod rc-head-abcde of RayCluster rc is gone (replaced by a new Pod of the same name)"},
		{name: "pending", pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}},
		{name: "not found", want: "head Pod rc-head-abcde of RayCluster rc is gone (not found)"},
		{name: "being deleted", pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
			want: "head Pod rc-head-abcde of RayCluster rc is gone (being deleted since 2026-11-30T01:02:03Z)"},
		{name: "evicted", pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}},
			want: "head Pod rc-head-abcde of RayCluster rc is gone (it ended: phase Failed, Evicted)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			s := &session{cluster: "rc"}
			if tc.pod != nil {
				tc.pod.Name, tc.pod.Namespace = "rc-head-abcde", "ns"
				objs = append(objs, tc.pod)
				if tc.pod.UID != "" {
					s.headUID = "uid-1"
				}
			}
			s.c = &Cluster{Namespace: "ns", Core: clientsetCore{kubefake.NewSimpleClientset(objs...)}}
			got := ""
			if gone := s.headGone(t.Context(), "rc-head-abcde"); gone != nil {
				got = gone.Error()
			}
			if got != tc.want {
				t.Errorf("headGone = %q, want %q", got, tc.want)
			}
		})
	}
}

// rayJob is RayJob rj in namespace ns with KubeRay's status fields.
func rayJob(jobID, jobStatus, message string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ray.io/v1", "kind": "RayJob",
		"metadata": map[string]any{"name": "rj", "namespace": "ns"},
		"spec":     map[string]any{"submissionMode": "InteractiveMode"},
		"status":   map[string]any{"jobId": jobID, "jobStatus": jobStatus, "message": message},
	}}
	return u
}

// TestJobAfterHeadGone: a session following a job whose head Pod is gone
// ends with the job's end when KubeRay reports it for the RayJob (a job
// that ended just before KubeRay deleted its cluster), and otherwise with
// an error naming the head and the job; never by following a new head.
func TestJobAfterHeadGone(t *testing.T) {
	gone := &headGoneError{Pod: "rc-head-abcde", Cluster: "rc", Why: "not found"}
	for _, tc := range []struct {
		name    string
		target  *unstructured.Unstructured
		jobID   string // the session's own submission
		want    Outcome
		wantErr string
	}{
		{name: "RayJob ended", target: rayJob("rj-1", "SUCCEEDED", "done"), jobID: "rj-1",
			want: Outcome{JobID: "rj-1", JobStatus: "SUCCEEDED", Message: "done"}},
		{name: "RayJob ended, KubeRay's submission", target: rayJob("rj-7", "FAILED", "boom"),
			want: Outcome{JobID: "rj-7", JobStatus: "FAILED", Message: "boom"}},
		{name: "RayJob running", target: rayJob("rj-1", "RUNNING", ""), jobID: "rj-1", want: Outcome{JobID: "rj-1"},
			wantErr: "head Pod rc-head-abcde of RayCluster rc is gone (not found), and job rj-1 ran on it"},
		{name: "RayJob reports another job", target: rayJob("rj-0", "SUCCEEDED", ""), jobID: "rj-1", want: Outcome{JobID: "rj-1"},
			wantErr: "and job rj-1 ran on it"},
		{name: "RayCluster with an entrypoint", jobID: "raysubmit_1", want: Outcome{JobID: "raysubmit_1"},
			wantErr: "and job raysubmit_1 ran on it (Ray runs a job's driver on the head node unless its entrypoint asks for resources): the session ends here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.target != nil {
				objs = append(objs, tc.target)
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{RayJobs: "RayJobList"}, objs...)
			var finished []Event
			s := &session{
				o:      Options{Entrypoint: "python job.py"},
				c:      &Cluster{Namespace: "ns", Dynamic: dyn},
				target: tc.target, cluster: "rc",
				r: ReporterFunc(func(e Event) {
					if e.Kind == KindFinished {
						finished = append(finished, e)
					}
				}),
			}
			got, err := s.jobAfterHeadGone(context.Background(), Outcome{JobID: tc.jobID}, gone)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				if !errors.Is(err, error(gone)) {
					t.Errorf("error %v does not wrap the head's loss", err)
				}
				if len(finished) != 0 {
					t.Errorf("finished events %+v, want none", finished)
				}
			case err != nil:
				t.Fatal(err)
			case len(finished) != 1 || finished[0].JobStatus != tc.want.JobStatus:
				t.Errorf("finished events %+v, want one of %s", finished, tc.want.JobStatus)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClusterStays: after its head Pod is gone, a session goes on while
// the RayCluster stays to make another; it ends, saying why, when the
// RayCluster was deleted or is being deleted, except for a RayService,
// whose upgrade deletes the old RayCluster once the new one serves.
func TestClusterStays(t *testing.T) {
	service := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": map[string]any{"name": "rs", "namespace": "ns"}}}
	deletingService := service.DeepCopy()
	now := metav1.NewTime(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC))
	deletingService.SetDeletionTimestamp(&now)
	deletingService.SetFinalizers([]string{"ray.io/hold"})
	for _, tc := range []struct {
		name    string
		cluster *unstructured.Unstructured
		target  *unstructured.Unstructured
		service *unstructured.Unstructured // the RayService as the API server has it
		wantErr string
	}{
		{name: "there", cluster: rayCluster("rc", "1")},
		{name: "deleted", wantErr: "head Pod rc-head-abcde of RayCluster rc is gone (not found), and RayCluster rc was deleted: there is nothing left to follow"},
		{name: "being deleted", cluster: rayCluster("rc", "1", "ray.io/hold"),
			wantErr: "and RayCluster rc is being deleted (since 2026-11-29T23:00:00Z): there is nothing left to follow"},
		{name: "RayService's old cluster deleted", target: service, service: service},
		{name: "RayService's old cluster being deleted", target: service, service: service, cluster: rayCluster("rc", "1", "ray.io/hold")},
		{name: "RayService deleted", target: service, cluster: rayCluster("rc", "1"),
			wantErr: "head Pod rc-head-abcde of RayCluster rc is gone (not found), and RayService rs was deleted: there is nothing left to follow"},
		{name: "RayService being deleted", target: service, service: deletingService, cluster: rayCluster("rc", "1"),
			wantErr: "and RayService rs is being deleted (since 2026-11-29T23:00:00Z): there is nothing left to follow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.cluster != nil {
				objs = append(objs, tc.cluster)
			}
			if tc.service != nil {
				objs = append(objs, tc.service)
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{RayClusters: "RayClusterList", RayServices: "RayServiceList"}, objs...)
			s := &session{c: &Cluster{Namespace: "ns", Dynamic: dyn}, target: tc.target, cluster: "rc"}
			err := s.clusterStays(context.Background(), &headGoneError{Pod: "rc-head-abcde", Cluster: "rc", Why: "not found"})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// onePause is a State API with one worker paused in task f.
type onePause struct{}

func (onePause) PausedWorkers(context.Context) ([]dashboard.Worker, error) {
	return []dashboard.Worker{{WorkerID: "w1", IsAlive: true, WorkerType: "WORKER", IP: "10.0.0.5", DebuggerPort: 5678, NumPausedThreads: 1}}, nil
}
func (onePause) RunningTasks(context.Context, string) ([]dashboard.Task, error) {
	return []dashboard.Task{{TaskID: "t1", Name: "f", State: "RUNNING", JobID: "02000000"}}, nil
}

// TestWatchSeesHeadGone: watch looks at the head Pod itself, not only at
// its port-forwards ending: a head Pod deleted while no forward ended
// ends the watch with the head's loss, which follow acts on, naming the
// task the session had reported paused.
func TestWatchSeesHeadGone(t *testing.T) {
	head := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rc-head-abcde", Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	cs := kubefake.NewSimpleClientset(head)
	s := &session{
		o: Options{Poll: 10 * time.Millisecond},
		c: &Cluster{Namespace: "ns", Core: clientsetCore{cs}},
		r: ReporterFunc(func(Event) {}), cluster: "rc", podLines: map[string]string{},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	go func() {
		time.Sleep(100 * time.Millisecond) // some polls with the head there
		cs.CoreV1().Pods("ns").Delete(context.Background(), head.Name, metav1.DeleteOptions{})
	}()
	_, err := s.watch(ctx, head.Name, onePause{}, nil, Outcome{})
	var gone *headGoneError
	if !errors.As(err, &gone) {
		t.Fatalf("watch ended with %v, want the head Pod's loss", err)
	}
	if want := "head Pod rc-head-abcde of RayCluster rc is gone (not found)"; gone.Error() != want {
		t.Errorf("error %q, want %q", gone, want)
	}
	if diff := cmp.Diff([]string{"task f on 10.0.0.5, debugpy at 10.0.0.5:5678"}, gone.Paused); diff != "" {
		t.Errorf("paused tasks named (-want +got):\n%s", diff)
	}
}

// TestReforwardToReplacedHead: a forward that ended is not brought back
// to a new Pod that took the head's name (KubeRay's deterministic head
// names): that is the head's loss, not the forward's return.
func TestReforwardToReplacedHead(t *testing.T) {
	newHead := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rc-head", Namespace: "ns", UID: "uid-2"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	s := &session{
		c: &Cluster{Namespace: "ns", Core: clientsetCore{kubefake.NewSimpleClientset(newHead)}},
		r: ReporterFunc(func(Event) {}), cluster: "rc", headUID: "uid-1",
	}
	nf, err := s.reforward(t.Context(), &Forward{Pod: "rc-head", PodPort: 8443, LocalPort: 40000}, errors.New("lost connection to pod"))
	var gone *headGoneError
	if nf != nil || !errors.As(err, &gone) {
		t.Fatalf("reforward = %v, %v; want the head's loss", nf, err)
	}
	if want := "head Pod rc-head of RayCluster rc is gone (replaced by a new Pod of the same name)"; gone.Error() != want {
		t.Errorf("error %q, want %q", gone, want)
	}
}
