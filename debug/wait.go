package debug

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
)

// waitInterval is how often the wait looks at the cluster.
const waitInterval = time.Second

// crashLogLines is how many of a crashed container's last log lines a
// problem shows.
const crashLogLines = 20

// errTimeout marks the end of the wait at --ready-timeout.
var errTimeout = errors.New("timed out")

// waitHead waits until the head Pod of the session's RayCluster is ready,
// reporting each change. It stops at the timeout (--ready-timeout, from
// now: s.readyBy) naming what it waited for and the last problem seen, and
// at a RayJob that failed before its cluster was up.
func (s *session) waitHead(ctx context.Context) (*corev1.Pod, error) {
	s.readyBy = time.Now().Add(s.o.Timeout)
	var what, problem string
	var problemAt time.Time
	for {
		head, w, p, err := s.lookHead(ctx)
		if err != nil {
			if ctx.Err() != nil {
				// Ctrl-C during a request: say what was being waited for,
				// not which request the interrupt cut.
				return nil, fmt.Errorf("interrupted while waiting for %s: %w", firstNonEmpty(w, what, "the head Pod"), context.Cause(ctx))
			}
			return nil, err
		}
		if head != nil {
			return head, nil
		}
		// The problem the timeout names is the last one seen in this
		// wait: a container in a crash loop runs between its restarts,
		// and a look then finds none.
		if w != what {
			problem = ""
		}
		what = w
		if p != "" {
			problem, problemAt = p, time.Now()
		}
		if time.Now().After(s.readyBy) {
			msg := fmt.Sprintf("%s after %s waiting for %s", errTimeout, s.o.Timeout, what)
			if problem != "" {
				msg += ": " + problem
				if p == "" {
					msg += fmt.Sprintf(" (last seen %s ago)", time.Since(problemAt).Round(time.Second))
				}
			}
			return nil, errors.New(msg)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("interrupted while waiting for %s: %w", what, context.Cause(ctx))
		case <-time.After(waitInterval):
		}
	}
}

// lookHead looks once: the ready head Pod, or what the wait is waiting
// for and the problem that keeps it (if the user must act).
func (s *session) lookHead(ctx context.Context) (head *corev1.Pod, what, problem string, err error) {
	if s.cluster == "" {
		what, problem, err = s.findCluster(ctx)
		if err != nil || s.cluster == "" {
			return nil, what, problem, err
		}
	}
	what = fmt.Sprintf("the head Pod of RayCluster %s", s.cluster)
	rc, err := s.c.Dynamic.Resource(RayClusters).Namespace(s.c.Namespace).Get(ctx, s.cluster, metav1.GetOptions{})
	if err != nil {
		return nil, what, "", fmt.Errorf("get RayCluster %s: %w", s.cluster, err)
	}
	if line, p := clusterState(rc); line != "" {
		s.progress(ctx, "RayCluster/"+s.cluster, "", line, p, "")
		problem = p
	}
	pods, err := s.c.Core.ListPods(ctx, s.c.Namespace, "ray.io/cluster="+s.cluster)
	if err != nil {
		return nil, what, "", fmt.Errorf("list the Pods of RayCluster %s: %w", s.cluster, err)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	for i := range pods.Items {
		p := &pods.Items[i]
		st := DescribePod(p, s.podEvents(ctx, p))
		if st.CrashedContainer != "" {
			st.Problem += s.lastLines(ctx, p, st.CrashedContainer)
		}
		s.progress(ctx, "Pod/"+p.Name, p.Name, st.Line, st.Problem, st.Reason)
		if p.Labels["ray.io/node-type"] != "head" {
			continue
		}
		if st.Ready {
			return p, what, "", nil
		}
		if st.Problem != "" {
			problem = st.Problem
		}
	}
	return nil, what, problem, nil
}

// findCluster finds the RayCluster of a RayJob or RayService, once KubeRay
// has made it.
func (s *session) findCluster(ctx context.Context) (what, problem string, err error) {
	kind, name := s.target.GetKind(), s.target.GetName()
	what = fmt.Sprintf("the KubeRay operator to create the RayCluster of %s %s", kind, name)
	switch kind {
	case "RayCluster":
		s.cluster = name
		return what, "", nil
	case "RayJob":
		rj, err := s.c.Dynamic.Resource(RayJobs).Namespace(s.c.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return what, "", fmt.Errorf("get RayJob %s: %w", name, err)
		}
		dep, _, _ := unstructured.NestedString(rj.Object, "status", "jobDeploymentStatus")
		msg, _, _ := unstructured.NestedString(rj.Object, "status", "message")
		if dep == "Failed" {
			return what, "", fmt.Errorf("RayJob %s failed before its cluster was up: %s", name, msg)
		}
		s.cluster, _, _ = unstructured.NestedString(rj.Object, "status", "rayClusterName")
		if s.cluster == "" {
			line := "waiting for the KubeRay operator to create its RayCluster"
			if dep != "" {
				line += " (jobDeploymentStatus " + dep + ")"
			}
			s.progress(ctx, "RayJob/"+name, "", line, "", dep)
		}
	case "RayService":
		rs, err := s.c.Dynamic.Resource(RayServices).Namespace(s.c.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return what, "", fmt.Errorf("get RayService %s: %w", name, err)
		}
		for _, f := range [][]string{{"status", "pendingServiceStatus", "rayClusterName"}, {"status", "activeServiceStatus", "rayClusterName"}} {
			if n, _, _ := unstructured.NestedString(rs.Object, f...); n != "" {
				s.cluster = n
			}
		}
		if s.cluster == "" {
			s.progress(ctx, "RayService/"+name, "", "waiting for the KubeRay operator to create its RayCluster", "", "")
		}
	}
	return what, "", nil
}

// clusterState is a line about the RayCluster's state and conditions, and
// a problem when a condition says the operator cannot go on (a head Pod
// it may not create: PodSecurity, quota).
func clusterState(rc *unstructured.Unstructured) (line, problem string) {
	state, _, _ := unstructured.NestedString(rc.Object, "status", "state")
	reason, _, _ := unstructured.NestedString(rc.Object, "status", "reason")
	conds, _, _ := unstructured.NestedSlice(rc.Object, "status", "conditions")
	var parts []string
	if state != "" {
		parts = append(parts, "state "+state)
	}
	for _, c := range conds {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		status, _ := m["status"].(string)
		msg, _ := m["message"].(string)
		r, _ := m["reason"].(string)
		if typ == "ReplicaFailure" && status == "True" {
			problem = fmt.Sprintf("the KubeRay operator cannot create the Pods of RayCluster %s (%s): %s", rc.GetName(), r, oneLine(msg))
		}
	}
	if reason != "" && problem == "" {
		problem = fmt.Sprintf("RayCluster %s: %s", rc.GetName(), oneLine(reason))
	}
	if len(parts) == 0 {
		parts = append(parts, "created, no state yet")
	}
	return "RayCluster " + rc.GetName() + ": " + strings.Join(parts, ", "), problem
}

// progress reports a line about an object when it differs from the last
// one reported for it.
func (s *session) progress(_ context.Context, key, pod, line, problem, reason string) {
	if line == "" || s.podLines[key] == line+problem {
		return
	}
	s.podLines[key] = line + problem
	msg := fmt.Sprintf("%s: %s", key, line)
	s.report(Event{Kind: KindWaiting, Object: key, Pod: pod, Reason: reason, Problem: problem, Message: msg})
}

// podEvents are the events about p, oldest first.
func (s *session) podEvents(ctx context.Context, p *corev1.Pod) []corev1.Event {
	sel := fields.Set{"involvedObject.name": p.Name, "involvedObject.kind": "Pod"}.AsSelector().String()
	l, err := s.c.Core.ListEvents(ctx, s.c.Namespace, sel)
	if err != nil {
		return nil
	}
	evs := l.Items[:0]
	for _, e := range l.Items {
		if e.InvolvedObject.UID == "" || e.InvolvedObject.UID == p.UID {
			evs = append(evs, e)
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return eventTime(evs[i]).Before(eventTime(evs[j])) })
	return evs
}

func eventTime(e corev1.Event) time.Time {
	for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.FirstTimestamp.Time, e.CreationTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// lastLines are the last log lines of a container that exited (its
// previous run when it was restarted), as a suffix of a problem.
func (s *session) lastLines(ctx context.Context, p *corev1.Pod, container string) string {
	tail := int64(crashLogLines)
	for _, previous := range []bool{true, false} {
		rc, err := s.c.Core.PodLogs(ctx, s.c.Namespace, p.Name, &corev1.PodLogOptions{Container: container, Previous: previous, TailLines: &tail})
		if err != nil {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(rc, 64<<10))
		rc.Close()
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		return fmt.Sprintf("\nits last log lines:\n%s", strings.TrimRight(string(b), "\n"))
	}
	return "\n(no log lines could be read)"
}

// codeServerProbeTimeout bounds one look at code-server's /healthz.
const codeServerProbeTimeout = 5 * time.Second

// codeServerMinWait is the least time code-server gets to answer after the
// head Pod is Ready, even when the head wait used up --ready-timeout (a
// variable for the tests).
var codeServerMinWait = 30 * time.Second

// waitCodeServer waits, until s.readyBy (at least codeServerMinWait), for
// code-server to answer its /healthz (which needs no login) through the
// forward cs, and returns the forward that answered. A Pod is Ready once
// its containers run and pass their readiness probes: the sidecar has none
// (so that it never holds back the Ray head; docs/inject.md), and
// code-server may still be starting. A connection refused in the Pod ends
// client-go's whole port-forward (its handleConnection closes the stream
// connection on the error), so a forward that ended is brought back on the
// same local port; a head Pod that is gone ends the wait.
func (s *session) waitCodeServer(ctx context.Context, cs *Forward) (*Forward, error) {
	pod, port, local := cs.Pod, cs.PodPort, cs.LocalPort
	deadline := s.readyBy
	if min := time.Now().Add(codeServerMinWait); deadline.Before(min) {
		deadline = min
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	started := time.Now()
	var last error
	for {
		// An error of a request the deadline cut says less than the one
		// before it: the last error kept is one of a request let finish.
		if cs == nil {
			f, err := s.c.PortForward(dctx, pod, port, local)
			if err != nil {
				if dctx.Err() == nil {
					last = err
				}
				if gone := s.headGone(ctx, pod); gone != nil {
					gone.Why += ", while the session waited for code-server in it"
					return nil, gone
				}
			}
			cs = f
		}
		if cs != nil {
			err := probeCodeServer(dctx, client, cs.Addr())
			if err == nil {
				return cs, nil
			}
			if dctx.Err() == nil {
				last = err
			}
		}
		fail := func(err error) (*Forward, error) {
			if cs != nil {
				cs.Close()
			}
			return nil, err
		}
		if ctx.Err() != nil {
			return fail(fmt.Errorf("interrupted while waiting for code-server in Pod %s: %w", pod, context.Cause(ctx)))
		}
		if dctx.Err() != nil || time.Now().After(deadline) {
			return fail(fmt.Errorf("%s: code-server in the head Pod %s did not answer on port %d in the %s after the Pod was Ready (%v); its log: kubectl logs -n %s %s -c %s", errTimeout, pod, port, time.Since(started).Round(time.Second), last, s.c.Namespace, pod, s.o.SidecarName))
		}
		s.progress(ctx, "Pod/"+pod, pod, fmt.Sprintf("ready; waiting for code-server to answer on port %d", port), "", "")
		select {
		case <-dctx.Done():
			continue
		case <-time.After(waitInterval):
		}
		if cs != nil {
			select {
			case <-cs.Done():
				cs = nil
			default:
			}
		}
	}
}

// probeCodeServer GETs code-server's /healthz at addr (host:port).
func probeCodeServer(ctx context.Context, client *http.Client, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, codeServerProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /healthz: %s", resp.Status)
	}
	return nil
}
