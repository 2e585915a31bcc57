package debug

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func headPod(mut func(p *corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "rc-head-x", Labels: map[string]string{"ray.io/node-type": "head"}},
		Spec: corev1.PodSpec{
			NodeName:      "node-1",
			RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{
				{Name: "ray-head", Image: "rayproject/ray:2.46.0", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("2Gi")}}},
				{Name: "code-server", Image: "example/code-server:1", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if mut != nil {
		mut(p)
	}
	return p
}

func waitingStatus(name, reason, msg string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

func ev(reason, msg string) corev1.Event { return corev1.Event{Reason: reason, Message: msg} }

func TestDescribePod(t *testing.T) {
	type want struct {
		Reason, Line, Crashed string
		Ready                 bool
		Problem               []string // substrings the problem holds; nil: no problem
	}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		events []corev1.Event
		want   want
	}{
		{
			name: "unschedulable names the resource and the requests",
			pod: headPod(func(p *corev1.Pod) {
				p.Spec.NodeName = ""
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
					Message: "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."}}
			}),
			want: want{
				Reason:  "Unschedulable",
				Line:    "cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
				Problem: []string{"Pod rc-head-x cannot be scheduled", "Insufficient cpu", "cpu=64500m memory=3Gi in all", "ray-head: cpu=64 memory=2Gi", "code-server: cpu=500m memory=1Gi"},
			},
		},
		{
			name: "image pull back-off names the image and the node",
			pod: headPod(func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{
					waitingStatus("ray-head", "ContainerCreating", ""),
					waitingStatus("code-server", "ImagePullBackOff", `Back-off pulling image "example/code-server:1"`),
				}
			}),
			want: want{
				Reason:  "ImagePullBackOff",
				Line:    "container code-server: ImagePullBackOff: image example/code-server:1",
				Problem: []string{"container code-server of Pod rc-head-x cannot pull image example/code-server:1 on node node-1 (ImagePullBackOff)", `Back-off pulling image "example/code-server:1"`},
			},
		},
		{
			name: "crash loop asks for the container's last lines",
			pod: headPod(func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				cs := waitingStatus("ray-head", "CrashLoopBackOff", "back-off 40s restarting failed container")
				cs.RestartCount = 3
				cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{cs, {Name: "code-server", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			}),
			want: want{
				Reason:  "CrashLoopBackOff",
				Line:    "container ray-head keeps exiting (restarted 3 times, last exit code 1 (Error))",
				Crashed: "ray-head",
				Problem: []string{"container ray-head of Pod rc-head-x keeps exiting"},
			},
		},
		{
			name: "an image being pulled is progress, with its name",
			pod: headPod(func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{waitingStatus("ray-head", "ContainerCreating", ""), waitingStatus("code-server", "ContainerCreating", "")}
			}),
			events: []corev1.Event{ev("Scheduled", "Successfully assigned"), ev("Pulling", `Pulling image "example/code-server:1"`)},
			want: want{
				Reason: "Pulling",
				Line:   `Pending on node node-1: ray-head (Pulling image "example/code-server:1"), code-server (Pulling image "example/code-server:1")`,
			},
		},
		{
			name: "a pulled image is no longer pulling",
			pod: headPod(func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{waitingStatus("ray-head", "ContainerCreating", "")}
			}),
			events: []corev1.Event{ev("Pulling", `Pulling image "rayproject/ray:2.46.0"`), ev("Pulled", `Successfully pulled image "rayproject/ray:2.46.0" in 3s`)},
			want:   want{Reason: "ContainerCreating", Line: "Pending on node node-1: ray-head ContainerCreating"},
		},
		{
			name: "an init container running (a worker waiting for the GCS)",
			pod: headPod(func(p *corev1.Pod) {
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "wait-gcs-ready", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{waitingStatus("ray-worker", "PodInitializing", "")}
			}),
			want: want{Reason: "Initializing", Line: "Pending on node node-1: init container wait-gcs-ready running, ray-worker PodInitializing"},
		},
		{
			name: "a missing Secret stops the container",
			pod: headPod(func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{waitingStatus("code-server", "CreateContainerConfigError", `secret "code-server-password" not found`)}
			}),
			want: want{Reason: "CreateContainerConfigError", Line: "container code-server: CreateContainerConfigError",
				Problem: []string{`secret "code-server-password" not found`}},
		},
		{
			name: "ready",
			pod: headPod(func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{
					{Name: "ray-head", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
					{Name: "code-server", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				}
			}),
			want: want{Ready: true, Line: "ready on node node-1"},
		},
		{
			name: "running, the sidecar not ready yet",
			pod: headPod(func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				p.Status.ContainerStatuses = []corev1.ContainerStatus{
					{Name: "ray-head", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
					{Name: "code-server", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				}
			}),
			want: want{Reason: "Running", Line: "Running on node node-1: code-server running, not ready"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := DescribePod(tc.pod, tc.events)
			got := want{Reason: st.Reason, Line: st.Line, Crashed: st.CrashedContainer, Ready: st.Ready}
			w := tc.want
			probs := w.Problem
			w.Problem = nil
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("DescribePod (-want +got):\n%s", diff)
			}
			if probs == nil && st.Problem != "" {
				t.Errorf("problem %q, want none", st.Problem)
			}
			for _, p := range probs {
				if !strings.Contains(st.Problem, p) {
					t.Errorf("problem %q does not say %q", st.Problem, p)
				}
			}
		})
	}
}

func TestDebugpyInRuntimeEnv(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]any
		has, adds bool
		want      map[string]any
	}{
		{name: "empty", env: map[string]any{}, adds: true, want: map[string]any{"pip": []any{"debugpy>=1.8.0"}}},
		{name: "pip list", env: map[string]any{"pip": []any{"numpy"}}, adds: true, want: map[string]any{"pip": []any{"numpy", "debugpy>=1.8.0"}}},
		{name: "pip map", env: map[string]any{"pip": map[string]any{"packages": []any{"numpy"}, "pip_check": false}}, adds: true,
			want: map[string]any{"pip": map[string]any{"packages": []any{"numpy", "debugpy>=1.8.0"}, "pip_check": false}}},
		{name: "named already", env: map[string]any{"pip": []any{"debugpy==1.8.14"}}, has: true},
		{name: "uv is the user's", env: map[string]any{"uv": []any{"numpy"}}, want: map[string]any{"uv": []any{"numpy"}}},
		{name: "a requirements file path", env: map[string]any{"pip": "requirements.txt"}, want: map[string]any{"pip": "requirements.txt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := hasDebugpy(tc.env); got != tc.has {
				t.Fatalf("hasDebugpy = %v, want %v", got, tc.has)
			}
			if tc.has {
				return
			}
			if got := addDebugpy(tc.env); got != tc.adds {
				t.Fatalf("addDebugpy = %v, want %v", got, tc.adds)
			}
			if diff := cmp.Diff(tc.want, tc.env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
	for v, ok := range map[string]bool{"1.8.0": true, "1.8.14": true, "1.6.3": false, "": false, "2.0.0rc1": true} {
		if got := debugpyOK(v); got != ok {
			t.Errorf("debugpyOK(%q) = %v, want %v", v, got, ok)
		}
	}
}
