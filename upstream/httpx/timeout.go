package httpx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// DefaultIdleTimeout is how long a response body may send nothing before
// its read fails.
const DefaultIdleTimeout = 60 * time.Second

// WithIdleTimeout sets how long a response body may send no byte at all
// before reading it fails with an *IdleTimeoutError (default
// DefaultIdleTimeout; 0 turns it off). Unlike a whole-request timeout it
// never cuts a steady but slow transfer (30 B/s of a 10 MB file is fine);
// only a stalled one. The caller's context still bounds the whole call.
func WithIdleTimeout(d time.Duration) Option { return func(o *options) { o.idleTimeout = d } }

// IdleTimeoutError is a response body that sent nothing for Idle. It is a
// net.Error whose Timeout is true.
type IdleTimeoutError struct{ Idle time.Duration }

func (e *IdleTimeoutError) Error() string {
	return fmt.Sprintf("no data received for %s (idle timeout; raise it with --idle-timeout)", e.Idle)
}

// Timeout reports true: this is a timeout.
func (e *IdleTimeoutError) Timeout() bool { return true }

// Temporary reports true: a new request may fare better.
func (e *IdleTimeoutError) Temporary() bool { return true }

// HeaderTimeoutError is an attempt that got no response headers within
// its timeout (WithTimeout): connecting, TLS and the server's answer.
type HeaderTimeoutError struct{ After time.Duration }

func (e *HeaderTimeoutError) Error() string {
	return fmt.Sprintf("no response within %s", e.After)
}

// Timeout reports true: this is a timeout.
func (e *HeaderTimeoutError) Timeout() bool { return true }

// Temporary reports true: a retry may fare better.
func (e *HeaderTimeoutError) Temporary() bool { return true }

// timeoutTransport bounds one attempt in two phases: until the response
// headers (header), then between any two reads of the body that return
// data (idle). Both cancel the attempt's own context, with a cause that the
// errors then carry; the caller's context is never touched.
type timeoutTransport struct {
	rt           http.RoundTripper
	header, idle time.Duration
}

func (t timeoutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	var timer *time.Timer
	if t.header > 0 {
		timer = time.AfterFunc(t.header, func() { cancel(&HeaderTimeoutError{t.header}) })
	}
	resp, err := t.rt.RoundTrip(req.WithContext(ctx))
	fired := timer != nil && !timer.Stop()
	if err != nil || fired {
		if resp != nil {
			resp.Body.Close()
		}
		var he *HeaderTimeoutError
		if cause := context.Cause(ctx); req.Context().Err() == nil && errors.As(cause, &he) {
			err = cause
		}
		cancel(nil)
		if err == nil { // headers arrived just as the timer fired
			err = &HeaderTimeoutError{t.header}
		}
		return nil, err
	}
	b := &idleBody{rc: resp.Body, ctx: ctx, parent: req.Context(), cancel: cancel, idle: t.idle}
	if t.idle > 0 {
		b.timer = time.AfterFunc(t.idle, func() { cancel(&IdleTimeoutError{t.idle}) })
	}
	resp.Body = b
	return resp, nil
}

// idleBody fails a read once idle passed without data (the timer cancels
// the attempt's context, which aborts the read in progress), and releases
// the attempt's context on Close.
type idleBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	parent context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration
	timer  *time.Timer
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.timer != nil && b.ctx.Err() == nil {
		b.timer.Reset(b.idle)
	}
	if err != nil && err != io.EOF && b.parent.Err() == nil {
		var ie *IdleTimeoutError
		if cause := context.Cause(b.ctx); errors.As(cause, &ie) {
			err = cause
		}
	}
	return n, err
}

func (b *idleBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	err := b.rc.Close()
	b.cancel(nil)
	return err
}
