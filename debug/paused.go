package debug

import (
	"context"
	"fmt"
	"sort"

	"github.com/imagectl/imagectl/debug/dashboard"
)

// StateAPI is the part of Ray's State API a session reads (package
// debug/dashboard's Client, through the dashboard's port-forward).
type StateAPI interface {
	PausedWorkers(ctx context.Context) ([]dashboard.Worker, error)
	RunningTasks(ctx context.Context, workerID string) ([]dashboard.Task, error)
}

// podFinder names the Pod that owns an IP in the session's Ray cluster.
type podFinder func(ctx context.Context, ip string) (name, nodeType string)

// pausedTracker keeps which workers are paused, to report each pause and
// each resume once.
type pausedTracker struct {
	api    StateAPI
	pods   podFinder
	paused map[string]*PausedTask // by worker ID
}

func newPausedTracker(api StateAPI, pods podFinder) *pausedTracker {
	return &pausedTracker{api: api, pods: pods, paused: map[string]*PausedTask{}}
}

// pausedNow are the tasks reported paused and not resumed, in worker-ID
// order.
func (t *pausedTracker) pausedNow() []*PausedTask {
	ids := make([]string, 0, len(t.paused))
	for id := range t.paused {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]*PausedTask, 0, len(ids))
	for _, id := range ids {
		out = append(out, t.paused[id])
	}
	return out
}

// poll asks the State API once and returns what changed: new pauses, then
// resumes (in worker-ID order, so a report is deterministic).
func (t *pausedTracker) poll(ctx context.Context) (paused, resumed []*PausedTask, err error) {
	ws, err := t.api.PausedWorkers(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing paused workers: %w", err)
	}
	now := map[string]bool{}
	sort.Slice(ws, func(i, j int) bool { return ws[i].WorkerID < ws[j].WorkerID })
	for _, w := range ws {
		if w.NumPausedThreads < 1 || !w.IsAlive || w.DebuggerPort == 0 {
			// Ray sets debugger_port before it raises num_paused_threads,
			// and a worker without a port cannot be attached to yet.
			continue
		}
		now[w.WorkerID] = true
		if old, ok := t.paused[w.WorkerID]; ok && old.Port == w.DebuggerPort {
			continue
		}
		p := &PausedTask{WorkerID: w.WorkerID, IP: w.IP, Port: w.DebuggerPort, PID: w.PID, Driver: w.WorkerType == "DRIVER"}
		if !p.Driver {
			tasks, err := t.api.RunningTasks(ctx, w.WorkerID)
			if err != nil {
				return nil, nil, fmt.Errorf("the task of paused worker %s: %w", w.WorkerID, err)
			}
			if len(tasks) > 0 {
				p.TaskID, p.Name, p.JobID = tasks[0].TaskID, tasks[0].Name, tasks[0].JobID
			}
		}
		if t.pods != nil {
			p.Pod, p.NodeType = t.pods(ctx, w.IP)
		}
		t.paused[w.WorkerID] = p
		paused = append(paused, p)
	}
	ids := make([]string, 0, len(t.paused))
	for id := range t.paused {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if !now[id] {
			resumed = append(resumed, t.paused[id])
			delete(t.paused, id)
		}
	}
	return paused, resumed, nil
}
