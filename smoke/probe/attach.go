package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path"
	"strings"
	"syscall"
	"time"

	godap "github.com/google/go-dap"

	"github.com/imagectl/imagectl/smoke/dap"
)

// Action is what the probe does once it has seen the paused frame.
type Action string

const (
	// ActionContinue sends continue for the stopped thread, then disconnects.
	ActionContinue Action = "continue"
	// ActionDisconnect disconnects with terminateDebuggee=false; debugpy
	// resumes the debuggee.
	ActionDisconnect Action = "disconnect"
)

// ParseAction parses "continue" or "disconnect".
func ParseAction(s string) (Action, error) {
	switch a := Action(s); a {
	case ActionContinue, ActionDisconnect:
		return a, nil
	}
	return "", fmt.Errorf("action %q: expected continue or disconnect", s)
}

// Sentinel errors, matched with errors.Is; each wraps the detail.
var (
	ErrNoPausedWorker = errors.New("no paused worker")
	ErrPortRefused    = errors.New("port refused")
	ErrAnotherClient  = errors.New("another client is attached")
	ErrNoStop         = errors.New("no stopped event")
	ErrFrameNotFound  = errors.New("expected frame not found")
)

// Frame is one stack frame as debugpy reported it.
type Frame struct {
	Name string `json:"name"`
	Path string `json:"path,omitempty"`
	Line int    `json:"line"`
}

// AttachResult is what one attach saw.
type AttachResult struct {
	Address       string        `json:"address"`
	AttachTime    time.Duration `json:"-"`
	AttachMillis  int64         `json:"attach_ms"`
	StopReason    string        `json:"stop_reason"`
	ThreadID      int           `json:"thread_id"`
	Frame         *Frame        `json:"frame,omitempty"` // the frame that matched the expectation
	Frames        []Frame       `json:"frames"`
	SkippedEvents []string      `json:"skipped_events,omitempty"`
	Action        Action        `json:"action"`
}

// Expect names the frame the probe must find somewhere in the stopped
// thread's stack. Empty fields match anything; File matches a path by its
// base name or by a path suffix ("pkg/task.py").
type Expect struct {
	Function string `json:"function,omitempty"`
	File     string `json:"file,omitempty"`
}

func (e Expect) matches(f Frame) bool {
	if e.Function != "" && f.Name != e.Function {
		return false
	}
	if e.File != "" {
		p := strings.ReplaceAll(f.Path, "\\", "/")
		if path.Base(p) != e.File && !strings.HasSuffix(p, "/"+strings.TrimPrefix(e.File, "/")) {
			return false
		}
	}
	return true
}

func (e Expect) String() string {
	switch {
	case e.Function != "" && e.File != "":
		return fmt.Sprintf("function %q in %q", e.Function, e.File)
	case e.Function != "":
		return fmt.Sprintf("function %q", e.Function)
	case e.File != "":
		return fmt.Sprintf("file %q", e.File)
	}
	return "any frame"
}

type attachConfig struct {
	stepTimeout time.Duration
	stopTimeout time.Duration
	expect      Expect
	action      Action
	clientID    string
	// dial, when set, replaces net.Dialer (e.g. to reach a port inside a
	// container's network namespace).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// attach dials addr and runs the DAP attach sequence the VS Code extension
// runs: initialize, attach{justMyCode:false}, configurationDone on
// "initialized", the attach response, the stopped event, stackTrace, then
// continue/disconnect so the task resumes.
func attach(ctx context.Context, addr string, cfg attachConfig) (res *AttachResult, err error) {
	res = &AttachResult{Address: addr, Action: cfg.action}
	start := time.Now()

	c, err := dialDAP(ctx, addr, cfg)
	if err != nil {
		return res, err
	}
	defer func() {
		res.SkippedEvents = c.SkippedEvents()
		c.Close()
	}()
	// Whatever happens, leave without killing the debuggee so a paused task
	// is not left stuck behind a half-done session.
	disconnected := false
	defer func() {
		if disconnected {
			return
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		c.Do(dctx, &godap.DisconnectRequest{Request: req("disconnect"), Arguments: &godap.DisconnectArguments{TerminateDebuggee: false}})
	}()

	s := &dapSession{ctx: ctx, c: c, addr: addr, cfg: cfg}
	if err := s.handshake(); err != nil {
		return res, err
	}
	res.AttachTime = time.Since(start)
	res.AttachMillis = res.AttachTime.Milliseconds()

	if err := s.stopped(res); err != nil {
		return res, err
	}

	if cfg.action == ActionContinue {
		if err := s.step("continue", func(ctx context.Context) error {
			_, err := c.Do(ctx, &godap.ContinueRequest{Request: req("continue"), Arguments: godap.ContinueArguments{ThreadId: res.ThreadID}})
			return err
		}); err != nil {
			return res, err
		}
	}
	if err := s.step("disconnect", func(ctx context.Context) error {
		_, err := c.Do(ctx, &godap.DisconnectRequest{Request: req("disconnect"), Arguments: &godap.DisconnectArguments{TerminateDebuggee: false}})
		return err
	}); err != nil {
		return res, err
	}
	disconnected = true

	if res.Frame == nil {
		return res, fmt.Errorf("%w: no frame of thread %d matches %s; frames: %s", ErrFrameNotFound, res.ThreadID, cfg.expect, framesString(res.Frames))
	}
	return res, nil
}

// dialDAP connects to debugpy at addr within the step timeout.
func dialDAP(ctx context.Context, addr string, cfg attachConfig) (*dap.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, cfg.stepTimeout)
	defer cancel()
	var c *dap.Client
	var err error
	if cfg.dial != nil {
		var conn net.Conn
		if conn, err = cfg.dial(dctx, "tcp", addr); err == nil {
			c = dap.NewClient(conn)
		}
	} else {
		c, err = dap.Dial(dctx, addr)
	}
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w: %s: nothing listens there (the worker may have resumed or exited): %w", ErrPortRefused, addr, err)
		}
		return nil, fmt.Errorf("dialing debugpy at %s: %w", addr, err)
	}
	return c, nil
}

// dapSession is one attach's connection, for its steps.
type dapSession struct {
	ctx  context.Context
	c    *dap.Client
	addr string
	cfg  attachConfig
}

// step runs f within the step timeout; a closed connection is named as
// another client's.
func (s *dapSession) step(what string, f func(context.Context) error) error {
	sctx, cancel := context.WithTimeout(s.ctx, s.cfg.stepTimeout)
	defer cancel()
	if err := f(sctx); err != nil {
		return closedMeansOtherClient(s.addr, what, s.c, err)
	}
	return nil
}

// handshake runs initialize, attach, configurationDone on "initialized",
// and waits for the attach response.
func (s *dapSession) handshake() error {
	ctx, c, addr, cfg := s.ctx, s.c, s.addr, s.cfg
	if err := s.step("initialize", func(ctx context.Context) error {
		_, err := c.Do(ctx, &godap.InitializeRequest{Request: req("initialize"), Arguments: godap.InitializeRequestArguments{
			ClientID: cfg.clientID, ClientName: "imagectl smoke attach", AdapterID: "debugpy",
			LinesStartAt1: true, ColumnsStartAt1: true, PathFormat: "path",
		}})
		return err
	}); err != nil {
		return err
	}

	host, port, _ := net.SplitHostPort(addr)
	args, _ := json.Marshal(map[string]any{
		"justMyCode": false,
		"connect":    map[string]any{"host": host, "port": atoiOr0(port)},
	})
	call, err := c.Start(&godap.AttachRequest{Request: req("attach"), Arguments: args})
	if err != nil {
		return closedMeansOtherClient(addr, "attach", c, err)
	}
	// debugpy sends "initialized" and holds the attach response until
	// configurationDone; a refused attach answers at once instead.
	actx, acancel := context.WithTimeout(ctx, cfg.stepTimeout)
	defer acancel()
	attachErr := make(chan error, 1)
	go func() { _, err := call.Wait(actx); attachErr <- err }()
	ictx, icancel := context.WithCancel(actx)
	initErr := make(chan error, 1)
	go func() { _, err := c.WaitEvent(ictx, "initialized"); initErr <- err }()
	var attachDone bool
	select {
	case err := <-initErr:
		if err != nil {
			icancel()
			return closedMeansOtherClient(addr, "waiting for the initialized event", c, err)
		}
	case err := <-attachErr:
		attachDone = true
		if err != nil {
			icancel()
			return attachRefused(addr, c, err)
		}
		if err := <-initErr; err != nil {
			icancel()
			return closedMeansOtherClient(addr, "waiting for the initialized event", c, err)
		}
	}
	icancel()
	if err := s.step("configurationDone", func(ctx context.Context) error {
		_, err := c.Do(ctx, &godap.ConfigurationDoneRequest{Request: req("configurationDone")})
		return err
	}); err != nil {
		return err
	}
	if !attachDone {
		if err := <-attachErr; err != nil {
			return attachRefused(addr, c, err)
		}
	}
	return nil
}

// stopped waits for the stopped event and reads the stopped thread's
// frames into res, res.Frame the first that matches the expectation.
func (s *dapSession) stopped(res *AttachResult) error {
	c, addr, cfg := s.c, s.addr, s.cfg
	sctx, scancel := context.WithTimeout(s.ctx, cfg.stopTimeout)
	ev, err := c.WaitEvent(sctx, "stopped")
	scancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w after %s from %s: attached, but the debuggee did not stop (is it really paused at breakpoint()?)", ErrNoStop, cfg.stopTimeout, addr)
		}
		return closedMeansOtherClient(addr, "waiting for the stopped event", c, err)
	}
	stopped := ev.(*godap.StoppedEvent)
	res.StopReason, res.ThreadID = stopped.Body.Reason, stopped.Body.ThreadId

	var st *godap.StackTraceResponse
	if err := s.step("stackTrace", func(ctx context.Context) error {
		r, err := c.Do(ctx, &godap.StackTraceRequest{Request: req("stackTrace"), Arguments: godap.StackTraceArguments{ThreadId: res.ThreadID}})
		if err != nil {
			return err
		}
		st = r.(*godap.StackTraceResponse)
		return nil
	}); err != nil {
		return err
	}
	for _, f := range st.Body.StackFrames {
		fr := Frame{Name: f.Name, Line: f.Line}
		if f.Source != nil {
			fr.Path = f.Source.Path
		}
		res.Frames = append(res.Frames, fr)
		if res.Frame == nil && cfg.expect.matches(fr) {
			res.Frame = &res.Frames[len(res.Frames)-1]
		}
	}
	if res.Frame != nil {
		f := *res.Frame // res.Frames may have been reallocated after the match
		res.Frame = &f
	}
	return nil
}

func req(command string) godap.Request {
	return godap.Request{ProtocolMessage: godap.ProtocolMessage{Type: "request"}, Command: command}
}

func atoiOr0(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0
		}
		n = n*10 + int(r-'0')
	}
	return n
}

func framesString(fs []Frame) string {
	var parts []string
	for _, f := range fs {
		parts = append(parts, fmt.Sprintf("%s (%s:%d)", f.Name, f.Path, f.Line))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
