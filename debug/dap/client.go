package dap

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	godap "github.com/google/go-dap"
)

// maxQueuedEvents bounds the events kept for WaitEvent; a debuggee that
// floods output events cannot grow memory without limit.
const maxQueuedEvents = 4096

// ErrClosed is returned by calls on a client whose connection has ended.
var ErrClosed = errors.New("dap: connection closed")

// ResponseError is an unsuccessful DAP response.
type ResponseError struct {
	Command string
	Message string // the response's "message" (often a short code)
	Detail  string // body.error.format, when the adapter sent one
}

func (e *ResponseError) Error() string {
	msg := fmt.Sprintf("dap %s failed", e.Command)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Detail != "" && e.Detail != e.Message {
		msg += ": " + e.Detail
	}
	return msg
}

// Client is a DAP client over one connection. Its methods are safe for
// concurrent use.
type Client struct {
	conn net.Conn

	writeMu sync.Mutex
	w       *bufio.Writer

	mu      sync.Mutex
	seq     int
	pending map[int]chan godap.Message
	events  []godap.EventMessage
	eventCh chan struct{} // closed and replaced whenever events or done change
	skipped []string
	err     error // why the reader stopped; nil while running
	done    chan struct{}
}

// NewClient starts a client on conn. The caller must Close it.
func NewClient(conn net.Conn) *Client {
	c := &Client{
		conn:    conn,
		w:       bufio.NewWriter(conn),
		pending: map[int]chan godap.Message{},
		eventCh: make(chan struct{}),
		done:    make(chan struct{}),
	}
	go c.readLoop(bufio.NewReader(conn))
	return c
}

// Dial connects to a debug adapter at addr ("host:port") and starts a client.
func Dial(ctx context.Context, addr string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return NewClient(conn), nil
}

// Close closes the connection and waits for the reader to stop.
func (c *Client) Close() error {
	err := c.conn.Close()
	<-c.done
	return err
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err reports why the connection ended (io.EOF when the adapter closed it),
// or nil while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// SkippedEvents returns the names of the events that were not standard DAP
// events and were skipped, in arrival order.
func (c *Client) SkippedEvents() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.skipped...)
}

// Call is a request that was sent and whose response has not been read yet.
type Call struct {
	c       *Client
	command string
	seq     int
	ch      chan godap.Message
}

// Start sends req with the next sequence number and returns the pending call.
// Use it for requests whose response the adapter holds back (debugpy answers
// attach only after configurationDone).
func (c *Client) Start(req godap.RequestMessage) (*Call, error) {
	r := req.GetRequest()
	ch := make(chan godap.Message, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, fmt.Errorf("dap %s: %w: %w", r.Command, ErrClosed, err)
	}
	c.seq++
	r.Seq = c.seq
	r.Type = "request"
	c.pending[r.Seq] = ch
	c.mu.Unlock()

	c.writeMu.Lock()
	err := godap.WriteProtocolMessage(c.w, req)
	if err == nil {
		err = c.w.Flush()
	}
	c.writeMu.Unlock()
	if err != nil {
		c.mu.Lock()
		delete(c.pending, r.Seq)
		c.mu.Unlock()
		return nil, fmt.Errorf("dap %s: writing request: %w", r.Command, err)
	}
	return &Call{c: c, command: r.Command, seq: r.Seq, ch: ch}, nil
}

// Wait returns the response to the call, an *ResponseError when the adapter
// answered success=false, or an error when ctx ends or the connection closes
// first.
func (call *Call) Wait(ctx context.Context) (godap.ResponseMessage, error) {
	select {
	case m := <-call.ch:
		return toResponse(call.command, m)
	case <-ctx.Done():
		return nil, fmt.Errorf("dap %s: no response: %w", call.command, ctx.Err())
	case <-call.c.done:
		// The response may have arrived just before the connection ended.
		select {
		case m := <-call.ch:
			return toResponse(call.command, m)
		default:
		}
		return nil, fmt.Errorf("dap %s: %w before the response: %w", call.command, ErrClosed, call.c.Err())
	}
}

func toResponse(command string, m godap.Message) (godap.ResponseMessage, error) {
	if er, ok := m.(*godap.ErrorResponse); ok {
		re := &ResponseError{Command: command, Message: er.Message}
		if er.Body.Error != nil {
			re.Detail = er.Body.Error.Format
		}
		return nil, re
	}
	resp, ok := m.(godap.ResponseMessage)
	if !ok {
		return nil, fmt.Errorf("dap %s: got %T, expected a response", command, m)
	}
	if r := resp.GetResponse(); !r.Success {
		return nil, &ResponseError{Command: command, Message: r.Message}
	}
	return resp, nil
}

// Do sends req and waits for its response.
func (c *Client) Do(ctx context.Context, req godap.RequestMessage) (godap.ResponseMessage, error) {
	call, err := c.Start(req)
	if err != nil {
		return nil, err
	}
	return call.Wait(ctx)
}

// WaitEvent removes and returns the first queued event named name, waiting
// for one if none is queued. Other events stay queued.
func (c *Client) WaitEvent(ctx context.Context, name string) (godap.EventMessage, error) {
	for {
		c.mu.Lock()
		for i, e := range c.events {
			if e.GetEvent().Event == name {
				c.events = append(c.events[:i], c.events[i+1:]...)
				c.mu.Unlock()
				return e, nil
			}
		}
		ch, err := c.eventCh, c.err
		c.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("dap: waiting for event %q: %w: %w", name, ErrClosed, err)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("dap: waiting for event %q: %w", name, ctx.Err())
		}
	}
}

// header is the part of every message needed to route it.
type header struct {
	Seq        int    `json:"seq"`
	Type       string `json:"type"`
	Command    string `json:"command"`
	Event      string `json:"event"`
	RequestSeq int    `json:"request_seq"`
	Success    bool   `json:"success"`
	Message    string `json:"message"`
}

func (c *Client) readLoop(r *bufio.Reader) {
	var err error
	for {
		var raw []byte
		raw, err = godap.ReadBaseMessage(r)
		if err != nil {
			break
		}
		if err = c.dispatch(raw); err != nil {
			break
		}
	}
	if errors.Is(err, net.ErrClosed) {
		err = ErrClosed
	}
	if err == nil {
		err = io.EOF
	}
	c.mu.Lock()
	c.err = err
	close(c.eventCh)
	c.eventCh = make(chan struct{})
	c.mu.Unlock()
	close(c.done)
}

func (c *Client) dispatch(raw []byte) error {
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		return fmt.Errorf("dap: malformed message: %w", err)
	}
	switch h.Type {
	case "response":
		m, err := godap.DecodeProtocolMessage(raw)
		if err != nil {
			// A response to a command go-dap does not model: keep the
			// generic fields so the caller still gets its answer.
			var fe *godap.DecodeProtocolMessageFieldError
			if !errors.As(err, &fe) {
				return fmt.Errorf("dap: decoding %s response: %w", h.Command, err)
			}
			m = &godap.Response{ProtocolMessage: godap.ProtocolMessage{Seq: h.Seq, Type: h.Type},
				RequestSeq: h.RequestSeq, Success: h.Success, Command: h.Command, Message: h.Message}
		}
		c.mu.Lock()
		ch, ok := c.pending[h.RequestSeq]
		delete(c.pending, h.RequestSeq)
		c.mu.Unlock()
		if ok {
			ch <- m
		}
		return nil
	case "event":
		m, err := godap.DecodeProtocolMessage(raw)
		var fe *godap.DecodeProtocolMessageFieldError
		if errors.As(err, &fe) {
			c.mu.Lock()
			c.skipped = append(c.skipped, h.Event)
			c.mu.Unlock()
			return nil
		}
		if err != nil {
			return fmt.Errorf("dap: decoding %s event: %w", h.Event, err)
		}
		ev, ok := m.(godap.EventMessage)
		if !ok {
			return fmt.Errorf("dap: event %s decoded as %T", h.Event, m)
		}
		c.mu.Lock()
		if len(c.events) >= maxQueuedEvents {
			c.events = c.events[1:]
		}
		c.events = append(c.events, ev)
		close(c.eventCh)
		c.eventCh = make(chan struct{})
		c.mu.Unlock()
		return nil
	case "request":
		// Reverse requests (runInTerminal, startDebugging) are not used by
		// an attach; they are ignored.
		return nil
	default:
		return fmt.Errorf("dap: message of unknown type %q", h.Type)
	}
}
