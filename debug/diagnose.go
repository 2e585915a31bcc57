package debug

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodState is what one Pod is doing, as a person should read it.
type PodState struct {
	Pod   string
	Phase corev1.PodPhase
	Ready bool
	// Reason is the Kubernetes reason behind the state: Unschedulable,
	// ErrImagePull, ImagePullBackOff, CrashLoopBackOff, ContainerCreating,
	// PodInitializing, Pulling, ...; "" when running and ready.
	Reason string
	// Line is one line saying what the Pod is doing.
	Line string
	// Problem is set when the Pod cannot go on without the user: what is
	// wrong and what to look at.
	Problem string
	// CrashedContainer is the container whose last log lines explain a
	// CrashLoopBackOff or a failed container ("" otherwise): the caller
	// fetches them and appends them to Problem.
	CrashedContainer string
}

// DescribePod explains p from its status and events (those whose
// involvedObject is p; older first).
func DescribePod(p *corev1.Pod, events []corev1.Event) PodState {
	st := PodState{Pod: p.Name, Phase: p.Status.Phase}
	node := p.Spec.NodeName
	if p.DeletionTimestamp != nil {
		st.Reason, st.Line = "Terminating", "terminating"
		return st
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			st.Reason = c.Reason
			msg := c.Message
			if msg == "" {
				msg = lastEventMessage(events, "FailedScheduling")
			}
			if c.Reason == corev1.PodReasonUnschedulable {
				st.Line = "cannot be scheduled: " + msg
				st.Problem = fmt.Sprintf("Pod %s cannot be scheduled: %s\nthe Pod requests %s", p.Name, msg, requestsLine(p))
				return st
			}
			st.Line = "not scheduled yet"
			return st
		}
	}
	if node == "" {
		st.Reason, st.Line = "Pending", "waiting for the scheduler"
		return st
	}
	// Init containers first: a Pod does not start its containers before
	// they finish.
	statuses := []struct {
		init bool
		cs   []corev1.ContainerStatus
	}{{true, p.Status.InitContainerStatuses}, {false, p.Status.ContainerStatuses}}
	var waiting []string
	for _, group := range statuses {
		for _, cs := range group.cs {
			image := cs.Image
			if image == "" {
				image = specImage(p, cs.Name)
			}
			kind := "container"
			if group.init {
				kind = "init container"
			}
			switch {
			case cs.State.Waiting != nil:
				w := cs.State.Waiting
				switch w.Reason {
				case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
					st.Reason = w.Reason
					st.Line = fmt.Sprintf("%s %s: %s: image %s", kind, cs.Name, w.Reason, image)
					st.Problem = fmt.Sprintf("%s %s of Pod %s cannot pull image %s on node %s (%s): %s",
						kind, cs.Name, p.Name, image, node, w.Reason, oneLine(firstNonEmpty(w.Message, lastEventMessage(events, "Failed"))))
					return st
				case "CrashLoopBackOff":
					st.Reason = w.Reason
					exit := ""
					if t := cs.LastTerminationState.Terminated; t != nil {
						exit = fmt.Sprintf(", last exit code %d (%s)", t.ExitCode, t.Reason)
					}
					st.Line = fmt.Sprintf("%s %s keeps exiting (restarted %d times%s)", kind, cs.Name, cs.RestartCount, exit)
					st.Problem = fmt.Sprintf("%s %s of Pod %s keeps exiting (restarted %d times%s)", kind, cs.Name, p.Name, cs.RestartCount, exit)
					st.CrashedContainer = cs.Name
					return st
				case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
					st.Reason = w.Reason
					st.Line = fmt.Sprintf("%s %s: %s", kind, cs.Name, w.Reason)
					st.Problem = fmt.Sprintf("%s %s of Pod %s cannot start (%s): %s", kind, cs.Name, p.Name, w.Reason, oneLine(w.Message))
					return st
				}
				reason := firstNonEmpty(w.Reason, "Waiting")
				if reason == "ContainerCreating" || reason == "PodInitializing" {
					if m := lastEventMessage(events, "Pulling"); m != "" && !pulled(events, m) {
						reason = "Pulling"
						waiting = append(waiting, fmt.Sprintf("%s (%s)", cs.Name, strings.TrimSuffix(m, ".")))
						st.Reason = reason
						continue
					}
				}
				if st.Reason == "" {
					st.Reason = reason
				}
				waiting = append(waiting, fmt.Sprintf("%s %s", cs.Name, reason))
			case cs.State.Terminated != nil && group.init && cs.State.Terminated.ExitCode == 0:
				// done
			case cs.State.Terminated != nil:
				t := cs.State.Terminated
				if p.Spec.RestartPolicy == corev1.RestartPolicyAlways && !group.init {
					waiting = append(waiting, fmt.Sprintf("%s exited (%d), restarting", cs.Name, t.ExitCode))
					continue
				}
				if t.ExitCode != 0 {
					st.Reason = firstNonEmpty(t.Reason, "Error")
					st.Line = fmt.Sprintf("%s %s exited with code %d (%s)", kind, cs.Name, t.ExitCode, st.Reason)
					st.Problem = fmt.Sprintf("%s %s of Pod %s exited with code %d (%s)", kind, cs.Name, p.Name, t.ExitCode, st.Reason)
					st.CrashedContainer = cs.Name
					return st
				}
			case cs.State.Running != nil && !cs.Ready && !group.init:
				waiting = append(waiting, cs.Name+" running, not ready")
			case cs.State.Running != nil && group.init:
				waiting = append(waiting, kind+" "+cs.Name+" running")
				if st.Reason == "" {
					st.Reason = "Initializing"
				}
			}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			st.Ready = true
		}
	}
	switch {
	case st.Ready:
		st.Reason, st.Line = "", "ready on node "+node
	case len(waiting) > 0:
		st.Line = fmt.Sprintf("%s on node %s: %s", p.Status.Phase, node, strings.Join(waiting, ", "))
		if st.Reason == "" {
			st.Reason = string(p.Status.Phase)
		}
	default:
		st.Line = fmt.Sprintf("%s on node %s", p.Status.Phase, node)
		if st.Reason == "" {
			st.Reason = string(p.Status.Phase)
		}
	}
	if p.Status.Phase == corev1.PodFailed {
		st.Problem = fmt.Sprintf("Pod %s failed: %s %s", p.Name, p.Status.Reason, oneLine(p.Status.Message))
	}
	return st
}

// requestsLine sums the Pod's container requests, per container, for the
// resources the scheduler counts.
func requestsLine(p *corev1.Pod) string {
	var parts []string
	for _, c := range p.Spec.Containers {
		var rs []string
		names := make([]string, 0, len(c.Resources.Requests))
		for n := range c.Resources.Requests {
			names = append(names, string(n))
		}
		sort.Strings(names)
		for _, n := range names {
			q := c.Resources.Requests[corev1.ResourceName(n)]
			rs = append(rs, n+"="+q.String())
		}
		if len(rs) == 0 {
			rs = []string{"nothing"}
		}
		parts = append(parts, fmt.Sprintf("%s: %s", c.Name, strings.Join(rs, " ")))
	}
	total := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		for n, q := range c.Resources.Requests {
			t := total[n]
			t.Add(q)
			total[n] = t
		}
	}
	var ts []string
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := total[n]; ok {
			ts = append(ts, string(n)+"="+q.String())
		}
	}
	return fmt.Sprintf("%s in all (%s)", strings.Join(ts, " "), strings.Join(parts, "; "))
}

func specImage(p *corev1.Pod, name string) string {
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			if c.Name == name {
				return c.Image
			}
		}
	}
	return ""
}

func lastEventMessage(events []corev1.Event, reason string) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Reason == reason {
			return events[i].Message
		}
	}
	return ""
}

// pulled reports whether a Pulled event follows the Pulling event whose
// message is pulling (the image is there now).
func pulled(events []corev1.Event, pulling string) bool {
	i := slices.IndexFunc(events, func(e corev1.Event) bool { return e.Reason == "Pulling" && e.Message == pulling })
	image := quoted(pulling)
	for _, e := range events[i+1:] {
		if e.Reason == "Pulled" && (image == "" || strings.Contains(e.Message, image)) {
			return true
		}
	}
	return false
}

func quoted(s string) string {
	_, rest, ok := strings.Cut(s, `"`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
