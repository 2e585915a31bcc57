package debug

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Kind names what an Event reports.
type Kind string

// The kinds of Event, in the order a session meets them.
const (
	// KindWarning: something that may keep the debugger from working
	// (inject's warnings), or a choice the user should know of.
	KindWarning Kind = "warning"
	// KindApplied: a document was applied (Object, Created).
	KindApplied Kind = "applied"
	// KindWaiting: progress while waiting: for the head Pod, for
	// code-server in it, for a password Secret being deleted (Message;
	// Pod, Reason and Problem when a Pod is the cause).
	KindWaiting Kind = "waiting"
	// KindReady: the head Pod is ready, the port-forwards listen and
	// code-server answers through its own (Pod, CodeServerURL,
	// DashboardURL, Secret); with --local, which has no code-server, the
	// dashboard proxy listens (Pod, DashboardURL, LocalRoot, Hint).
	KindReady Kind = "ready"
	// KindSubmitted: the entrypoint was submitted (JobID).
	KindSubmitted Kind = "submitted"
	// KindPaused: a task is paused under the debugger (Task).
	KindPaused Kind = "paused"
	// KindResumed: a paused task goes on or its worker is gone (Task).
	KindResumed Kind = "resumed"
	// KindLog: a line of the job's logs (--logs).
	KindLog Kind = "log"
	// KindFinished: the job ended (JobStatus, Message).
	KindFinished Kind = "finished"
	// KindCleanup: what was deleted or left behind on the way out.
	KindCleanup Kind = "cleanup"
)

// Event is one step of a session. JSON field names are stable: tools and
// tests read them.
type Event struct {
	Time time.Time `json:"time"`
	Kind Kind      `json:"event"`
	// Message is the line a person reads.
	Message string `json:"message"`

	Namespace string `json:"namespace,omitempty"`
	Object    string `json:"object,omitempty"` // Kind/name
	Created   bool   `json:"created,omitempty"`
	Pod       string `json:"pod,omitempty"`
	// Reason is the Kubernetes reason of a waiting Pod or container
	// (Unschedulable, ImagePullBackOff, CrashLoopBackOff, ...).
	Reason string `json:"reason,omitempty"`
	// Problem is set when what keeps the session waiting needs the user.
	Problem string `json:"problem,omitempty"`

	CodeServerURL string `json:"codeServerURL,omitempty"`
	DashboardURL  string `json:"dashboardURL,omitempty"`
	// Secret names where the code-server password is: namespace/name, key.
	Secret   string `json:"secret,omitempty"`
	Password string `json:"password,omitempty"` // only with ShowPassword

	JobID     string `json:"jobID,omitempty"`
	JobStatus string `json:"jobStatus,omitempty"`

	Task *PausedTask `json:"task,omitempty"`
	// LocalRoot is --local's local directory of the job's files (ready).
	LocalRoot string `json:"localRoot,omitempty"`
	// Launch is --local's launch.json attach configuration of a paused
	// task (LaunchConfig).
	Launch map[string]any `json:"launch,omitempty"`
	// Hint says what to do next (--local: how to attach).
	Hint string `json:"hint,omitempty"`
	// Deleted and Left list objects (Kind/name) on the way out.
	Deleted []string `json:"deleted,omitempty"`
	Left    []string `json:"left,omitempty"`
}

// PausedTask is a task paused under the debugger, as the State API shows
// it.
type PausedTask struct {
	WorkerID string `json:"workerID"`
	// Driver reports a paused driver (Ray lists it among the workers).
	Driver   bool   `json:"driver,omitempty"`
	TaskID   string `json:"taskID,omitempty"`
	Name     string `json:"name,omitempty"`
	JobID    string `json:"jobID,omitempty"`
	IP       string `json:"ip"`
	Port     int    `json:"port"`
	Pod      string `json:"pod,omitempty"`
	NodeType string `json:"nodeType,omitempty"` // head or worker, from the Pod's ray.io/node-type
	PID      int    `json:"pid,omitempty"`
	// Local is --local's tunnel to IP:Port, 127.0.0.1:port.
	Local string `json:"local,omitempty"`
}

func (t *PausedTask) String() string {
	what := "task " + t.Name
	switch {
	case t.Driver:
		what = "the driver"
	case t.Name == "":
		what = "worker " + t.WorkerID
	}
	where := t.IP
	if t.Pod != "" {
		where = "Pod " + t.Pod
		if t.NodeType != "" {
			where += " (" + t.NodeType + ")"
		}
	}
	return fmt.Sprintf("%s on %s, debugpy at %s:%d", what, where, t.IP, t.Port)
}

// Reporter receives a session's events, in order, from one goroutine at a
// time.
type Reporter interface {
	Report(Event)
}

// ReporterFunc adapts a function to Reporter.
type ReporterFunc func(Event)

// Report calls f(e).
func (f ReporterFunc) Report(e Event) { f(e) }

// JSONReporter writes each event as one JSON object per line.
func JSONReporter(w io.Writer) Reporter {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	return ReporterFunc(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(e)
	})
}

// TextReporter writes each event as lines for a person: the message, then
// what the event adds (URLs, the password's place, a problem).
func TextReporter(w io.Writer) Reporter {
	var mu sync.Mutex
	return ReporterFunc(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		var b strings.Builder
		b.WriteString(e.Message)
		b.WriteByte('\n')
		if e.Problem != "" && !strings.Contains(e.Message, e.Problem) {
			fmt.Fprintf(&b, "  %s\n", indent(e.Problem))
		}
		switch e.Kind {
		case KindReady:
			if e.CodeServerURL != "" {
				fmt.Fprintf(&b, "  code-server: %s\n", e.CodeServerURL)
			}
			if e.Password != "" {
				fmt.Fprintf(&b, "  password:    %s\n", e.Password)
			} else if e.Secret != "" {
				fmt.Fprintf(&b, "  password:    in Secret %s (--show-password prints it)\n", e.Secret)
			}
			fmt.Fprintf(&b, "  dashboard:   %s\n", e.DashboardURL)
		}
		if e.Hint != "" {
			fmt.Fprintf(&b, "  %s\n", indent(e.Hint))
		}
		switch e.Kind {
		case KindCleanup:
			for _, d := range e.Deleted {
				fmt.Fprintf(&b, "  deleted %s\n", d)
			}
			for _, l := range e.Left {
				fmt.Fprintf(&b, "  left    %s\n", l)
			}
		}
		io.WriteString(w, b.String())
	})
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }
