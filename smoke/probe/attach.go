package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	godap "github.com/google/go-dap"

	"github.com/imagectl/imagectl/debug/dap"
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
	// ErrSourceNotOpened is a paused frame whose source the sidecar cannot
	// open, or where a breakpoint set on the sidecar's copy is not verified.
	ErrSourceNotOpened = errors.New("paused source does not open")
	// ErrNotPostMortem is a post-mortem attach whose stop is not on an
	// exception, or whose exception debugpy does not describe.
	ErrNotPostMortem = errors.New("not stopped on the exception")
)

// Frame is one stack frame as debugpy reported it. SourceReference is
// debugpy's handle for a source it serves itself (DAP "source" request).
type Frame struct {
	Name            string `json:"name"`
	Path            string `json:"path,omitempty"`
	SourceReference int    `json:"sourceReference,omitempty"`
	Line            int    `json:"line"`
}

// SourceCheck is what the client side (the sidecar) could do with the
// matched frame's source, the way VS Code opens it: a frame with a
// sourceReference is fetched with a DAP "source" request, any other must
// name a file that exists here. Then a breakpoint is set on that source at
// the frame's line, its answer recorded, and cleared again.
type SourceCheck struct {
	Path            string `json:"path,omitempty"`
	SourceReference int    `json:"sourceReference,omitempty"`
	// Opened is "path" (the file exists here), "sourceReference" (debugpy
	// served its text) or "" (it did not open: Problem says why).
	Opened             string `json:"opened"`
	Problem            string `json:"problem,omitempty"`
	BreakpointLine     int    `json:"breakpointLine,omitempty"`
	BreakpointVerified bool   `json:"breakpointVerified"`
	BreakpointMessage  string `json:"breakpointMessage,omitempty"`
}

// ExceptionInfo is debugpy's answer to exceptionInfo at a post-mortem stop.
type ExceptionInfo struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	BreakMode   string `json:"breakMode,omitempty"`
}

// AttachResult is what one attach saw.
type AttachResult struct {
	Address string `json:"address"`
	// AttachArguments are the arguments of the DAP attach request, the
	// configuration the debugger extension starts.
	AttachArguments map[string]any `json:"attachArguments,omitempty"`
	AttachTime      time.Duration  `json:"-"`
	AttachMillis    int64          `json:"attachMs"`
	StopReason      string         `json:"stopReason"`
	ThreadID        int            `json:"threadId"`
	Frame           *Frame         `json:"frame,omitempty"` // the frame that matched the expectation
	Frames          []Frame        `json:"frames"`
	Source          *SourceCheck   `json:"source,omitempty"`
	Exception       *ExceptionInfo `json:"exception,omitempty"`
	// Stepped is the top frame after a step over the paused line
	// (WithStep).
	Stepped       *Frame   `json:"stepped,omitempty"`
	SkippedEvents []string `json:"skippedEvents,omitempty"`
	Action        Action   `json:"action"`
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
	// localRoot is the cluster's localRoot setting the attach arguments
	// are built from (dap.ExtensionAttachArguments).
	localRoot string
	// sourceRoot is where the client side's files are read: "/" unless
	// the sidecar's file system is reached through another directory.
	sourceRoot string
	// postMortem expects a stop on an uncaught exception.
	postMortem bool
	// noSourceCheck skips checkSource.
	noSourceCheck bool
	// stepOver steps over the paused line (DAP next) before the action.
	stepOver bool
	// hold keeps the attached session this long before the action.
	hold time.Duration
	// dial, when set, replaces net.Dialer (e.g. to reach a port inside a
	// container's network namespace).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// attach dials addr and runs the DAP attach sequence VS Code runs for the
// extension: initialize, attach with dap.ExtensionAttachArguments,
// setExceptionBreakpoints with debugpy's default filter ("uncaught") and
// configurationDone on "initialized", the attach response, the stopped
// event, stackTrace; then it opens the matched frame's source and sets a
// breakpoint there (checkSource), reads exceptionInfo for a post-mortem
// stop, and continues/disconnects so the task resumes.
func attach(ctx context.Context, addr string, cfg attachConfig) (res *AttachResult, err error) {
	host, port, _ := net.SplitHostPort(addr)
	res = &AttachResult{Address: addr, Action: cfg.action, AttachArguments: dap.ExtensionAttachArguments(host, atoiOr0(port), cfg.localRoot)}
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
	if err := s.handshake(res.AttachArguments); err != nil {
		return res, err
	}
	res.AttachTime = time.Since(start)
	res.AttachMillis = res.AttachTime.Milliseconds()

	if err := s.stopped(res); err != nil {
		return res, err
	}
	// The checks below record their failure and still let the task resume.
	var checkErr error
	if res.Frame != nil && !cfg.noSourceCheck {
		if checkErr = s.checkSource(res); checkErr != nil && !errors.Is(checkErr, ErrSourceNotOpened) {
			return res, checkErr
		}
	}
	if cfg.postMortem {
		if err := s.exceptionInfo(res); err != nil {
			if !errors.Is(err, ErrNotPostMortem) {
				return res, err
			}
			checkErr = errors.Join(checkErr, err)
		}
	}

	if cfg.hold > 0 {
		select {
		case <-time.After(cfg.hold):
		case <-ctx.Done():
			return res, context.Cause(ctx)
		}
	}
	if cfg.stepOver {
		if err := s.next(res); err != nil {
			return res, err
		}
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
	return res, checkErr
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

// handshake runs initialize, attach with args, setExceptionBreakpoints and
// configurationDone on "initialized", and waits for the attach response.
func (s *dapSession) handshake(attachArgs map[string]any) error {
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

	args, err := json.Marshal(attachArgs)
	if err != nil {
		return fmt.Errorf("encoding the attach arguments: %w", err)
	}
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
	// VS Code sends the exception filters the adapter marks default before
	// configurationDone: for debugpy (1.6.3 to 1.8.21) that is "uncaught",
	// which a post-mortem stop (pydevd's stop_on_unhandled_exception) needs.
	if err := s.step("setExceptionBreakpoints", func(ctx context.Context) error {
		_, err := c.Do(ctx, &godap.SetExceptionBreakpointsRequest{Request: req("setExceptionBreakpoints"),
			Arguments: godap.SetExceptionBreakpointsArguments{Filters: []string{"uncaught"}}})
		return err
	}); err != nil {
		return err
	}
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
			fr.Path, fr.SourceReference = f.Source.Path, f.Source.SourceReference
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

// next steps over the line the thread stopped at (DAP next), waits for the
// stop and records the top frame then.
func (s *dapSession) next(res *AttachResult) error {
	c := s.c
	if err := s.step("next", func(ctx context.Context) error {
		_, err := c.Do(ctx, &godap.NextRequest{Request: req("next"), Arguments: godap.NextArguments{ThreadId: res.ThreadID}})
		return err
	}); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(s.ctx, s.cfg.stopTimeout)
	_, err := c.WaitEvent(sctx, "stopped")
	cancel()
	if err != nil {
		return fmt.Errorf("%w: no stop within %s after stepping over line %d: %w", ErrNoStop, s.cfg.stopTimeout, res.Frames[0].Line, err)
	}
	return s.step("stackTrace", func(ctx context.Context) error {
		r, err := c.Do(ctx, &godap.StackTraceRequest{Request: req("stackTrace"), Arguments: godap.StackTraceArguments{ThreadId: res.ThreadID, Levels: 1}})
		if err != nil {
			return err
		}
		fs := r.(*godap.StackTraceResponse).Body.StackFrames
		if len(fs) == 0 {
			return errors.New("no frame after the step")
		}
		f := Frame{Name: fs[0].Name, Line: fs[0].Line}
		if fs[0].Source != nil {
			f.Path, f.SourceReference = fs[0].Source.Path, fs[0].Source.SourceReference
		}
		res.Stepped = &f
		return nil
	})
}

// checkSource opens the matched frame's source as VS Code would from the
// client side, then sets a breakpoint on it at the frame's line, records
// whether debugpy verified it, and clears it again.
func (s *dapSession) checkSource(res *AttachResult) error {
	f := res.Frame
	sc := &SourceCheck{Path: f.Path, SourceReference: f.SourceReference}
	res.Source = sc
	src := godap.Source{Path: f.Path, SourceReference: f.SourceReference}
	if f.SourceReference > 0 {
		err := s.step("source", func(ctx context.Context) error {
			r, err := s.c.Do(ctx, &godap.SourceRequest{Request: req("source"), Arguments: godap.SourceArguments{Source: &src, SourceReference: f.SourceReference}})
			if err != nil {
				return err
			}
			if r.(*godap.SourceResponse).Body.Content == "" {
				return errors.New("debugpy returned no text")
			}
			return nil
		})
		if err != nil {
			sc.Problem = fmt.Sprintf("source request for sourceReference %d: %v", f.SourceReference, err)
		} else {
			sc.Opened = "sourceReference"
		}
	} else {
		sc.Problem = s.readable(f.Path)
		if sc.Problem == "" {
			sc.Opened = "path"
		}
	}
	if sc.Opened == "" {
		return fmt.Errorf("%w: frame %s at %s:%d: %s", ErrSourceNotOpened, f.Name, f.Path, f.Line, sc.Problem)
	}

	sc.BreakpointLine = f.Line
	var bp godap.Breakpoint
	if err := s.step("setBreakpoints", func(ctx context.Context) error {
		r, err := s.c.Do(ctx, &godap.SetBreakpointsRequest{Request: req("setBreakpoints"),
			Arguments: godap.SetBreakpointsArguments{Source: src, Breakpoints: []godap.SourceBreakpoint{{Line: f.Line}}}})
		if err != nil {
			return err
		}
		bps := r.(*godap.SetBreakpointsResponse).Body.Breakpoints
		if len(bps) != 1 {
			return fmt.Errorf("setBreakpoints answered %d breakpoints for 1", len(bps))
		}
		bp = bps[0]
		return nil
	}); err != nil {
		return err
	}
	sc.BreakpointVerified, sc.BreakpointMessage = bp.Verified, bp.Message
	if err := s.step("clearing the breakpoint", func(ctx context.Context) error {
		_, err := s.c.Do(ctx, &clearBreakpointsRequest{Request: req("setBreakpoints"), Arguments: clearBreakpointsArguments{Source: src, Breakpoints: []godap.SourceBreakpoint{}}})
		return err
	}); err != nil {
		return err
	}
	if !bp.Verified {
		return fmt.Errorf("%w: a breakpoint at %s:%d is not verified: %q", ErrSourceNotOpened, f.Path, f.Line, bp.Message)
	}
	return nil
}

// readable says why path does not open here as a regular file, or "".
func (s *dapSession) readable(p string) string {
	if p == "" {
		return "the frame names no file and no sourceReference"
	}
	if !filepath.IsAbs(p) {
		return fmt.Sprintf("%q is not an absolute path", p)
	}
	root := s.cfg.sourceRoot
	if root == "" {
		root = "/"
	}
	fh, err := os.Open(filepath.Join(root, p))
	if err != nil {
		return fmt.Sprintf("no such file here: %v", err)
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Sprintf("%s is not a regular file", p)
	}
	if _, err := fh.Read(make([]byte, 1)); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Sprintf("reading %s: %v", p, err)
	}
	return ""
}

// clearBreakpointsRequest is setBreakpoints with an explicit empty list
// (go-dap omits an empty "breakpoints").
type clearBreakpointsRequest struct {
	godap.Request
	Arguments clearBreakpointsArguments `json:"arguments"`
}

type clearBreakpointsArguments struct {
	Source      godap.Source             `json:"source"`
	Breakpoints []godap.SourceBreakpoint `json:"breakpoints"`
}

// exceptionInfo checks a post-mortem stop: the reason is "exception" and
// debugpy describes the exception.
func (s *dapSession) exceptionInfo(res *AttachResult) error {
	if res.StopReason != "exception" {
		return fmt.Errorf("%w: stopped with reason %q, want \"exception\" (is RAY_DEBUG_POST_MORTEM=1 set and did the task raise?)", ErrNotPostMortem, res.StopReason)
	}
	var body godap.ExceptionInfoResponseBody
	if err := s.step("exceptionInfo", func(ctx context.Context) error {
		r, err := s.c.Do(ctx, &godap.ExceptionInfoRequest{Request: req("exceptionInfo"), Arguments: godap.ExceptionInfoArguments{ThreadId: res.ThreadID}})
		if err != nil {
			return err
		}
		body = r.(*godap.ExceptionInfoResponse).Body
		return nil
	}); err != nil {
		var re *dap.ResponseError
		if errors.As(err, &re) {
			return fmt.Errorf("%w: %w", ErrNotPostMortem, err)
		}
		return err
	}
	res.Exception = &ExceptionInfo{ID: body.ExceptionId, Description: body.Description, BreakMode: string(body.BreakMode)}
	if body.ExceptionId == "" {
		return fmt.Errorf("%w: exceptionInfo names no exception", ErrNotPostMortem)
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
