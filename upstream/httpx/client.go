package httpx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/internal/waitnotice"
)

type options struct {
	timeout       time.Duration
	idleTimeout   time.Duration
	retries       int
	minWait       time.Duration
	maxWait       time.Duration
	maxRetryAfter time.Duration
	logger        *slog.Logger
	transport     http.RoundTripper
	userAgent     string
}

// Option configures New.
type Option func(*options)

// WithTimeout sets how long one attempt may take to get its response
// headers (default 60s): connecting, TLS and the server's answer. Reading the
// body is bounded by the idle timeout instead (WithIdleTimeout), so a large
// file on a slow link is not cut.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithRetries sets how many times a failed attempt is retried (default 5).
func WithRetries(n int) Option { return func(o *options) { o.retries = n } }

// WithBackoff sets the minimum and maximum wait between attempts when the
// server gives no Retry-After (default 500ms and 10s).
func WithBackoff(min, max time.Duration) Option {
	return func(o *options) { o.minWait, o.maxWait = min, max }
}

// WithMaxRetryAfter caps how long a Retry-After may make a client wait
// (default 2m); a longer Retry-After waits only that long before retrying.
func WithMaxRetryAfter(d time.Duration) Option { return func(o *options) { o.maxRetryAfter = d } }

// WithLogger logs retries at debug level.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithTransport sets the underlying transport (tests count requests with it).
func WithTransport(rt http.RoundTripper) Option { return func(o *options) { o.transport = rt } }

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option { return func(o *options) { o.userAgent = ua } }

// UserAgent is the default User-Agent.
var UserAgent = "imagectl"

// New returns an *http.Client that retries as described in the package doc.
// Callers still pass a context to every request; the context bounds the whole
// call including retries.
func New(opts ...Option) *http.Client {
	o := options{
		timeout: 60 * time.Second, idleTimeout: DefaultIdleTimeout, retries: 5,
		minWait: 500 * time.Millisecond, maxWait: 10 * time.Second,
		maxRetryAfter: 2 * time.Minute,
		userAgent:     UserAgent,
	}
	for _, opt := range opts {
		opt(&o)
	}
	rc := retryablehttp.NewClient()
	rc.RetryMax = o.retries
	rc.RetryWaitMin, rc.RetryWaitMax = o.minWait, o.maxWait
	rc.Logger = nil
	if o.logger != nil {
		rc.Logger = o.logger
	}
	base := o.transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	// No http.Client.Timeout: it would cut a slow but steady body. The
	// attempt is bounded by timeoutTransport (headers, then idle gaps) and
	// the whole call by the caller's context.
	rc.HTTPClient = &http.Client{Transport: noticeTransport{timeoutTransport{rt: uaTransport{base, o.userAgent}, header: o.timeout, idle: o.idleTimeout}}}
	retries := o.retries
	rc.RequestLogHook = func(_ retryablehttp.Logger, req *http.Request, attempt int) {
		if n := waitnotice.From(req.Context()); attempt > 0 && n != nil && n.Printf != nil {
			n.Printf("retrying %s %s (attempt %d of %d)", req.Method, safetext.URL(req.URL.String()), attempt+1, retries+1)
		}
	}
	rc.Backoff = backoff(o.maxRetryAfter)
	rc.CheckRetry = checkRetry
	rc.ErrorHandler = func(resp *http.Response, err error, attempts int) (*http.Response, error) {
		if resp != nil {
			// Hand the last response to the caller, which reports its status
			// and URL; retryablehttp would otherwise drop it.
			return resp, nil
		}
		// The caller names the URL once (Do); drop the copy *url.Error adds.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		err = redactURLError(err)
		if attempts <= 1 {
			return nil, err
		}
		return nil, fmt.Errorf("giving up after %d attempt(s): %w", attempts, err)
	}
	return rc.StandardClient()
}

// checkRetry is retryablehttp's default policy, except that a host name that
// does not resolve is final: the resolver answered, and asking again within
// the same minute only makes an offline user or a mistyped host wait.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if IsNoSuchHost(err) {
		return false, err
	}
	return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
}

// IsNoSuchHost reports whether err is a DNS answer that the name does not
// exist ("no such host").
func IsNoSuchHost(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// noticeTransport has every request watched by the waitnotice.Notice of its
// context (a long wait for the answer is said on the command's stderr), each
// attempt as the caller sent it.
type noticeTransport struct{ rt http.RoundTripper }

func (t noticeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	stop := waitnotice.Watch(r)
	resp, err := t.rt.RoundTrip(r)
	stop(err)
	return resp, err
}

type uaTransport struct {
	rt http.RoundTripper
	ua string
}

func (t uaTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("User-Agent") == "" && t.ua != "" {
		r = r.Clone(r.Context())
		r.Header.Set("User-Agent", t.ua)
	}
	return t.rt.RoundTrip(r)
}

// backoff honours Retry-After (seconds or HTTP date) on 429 and 503, capped at
// max; otherwise it is exponential between min and max.
func backoff(maxRetryAfter time.Duration) retryablehttp.Backoff {
	return func(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
		if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
			if d, ok := RetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				if d > maxRetryAfter {
					d = maxRetryAfter
				}
				return d
			}
		}
		return retryablehttp.DefaultBackoff(min, max, attempt, nil)
	}
}

// RetryAfter parses a Retry-After header value: delay-seconds or an HTTP date.
func RetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

// Get issues a GET with ctx and the given headers and returns the response if
// its status is 200; otherwise it closes the body and returns an error naming
// the URL and status.
func Get(ctx context.Context, c *http.Client, url string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", safetext.URL(url), redactURLError(err))
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return Do(c, req)
}

// Do sends req and returns the response if its status is 200; otherwise it
// closes the body and returns a *StatusError.
func Do(c *http.Client, req *http.Request) (*http.Response, error) {
	resp, err := c.Do(req)
	if err != nil {
		// c.Do wraps err in a *url.Error that repeats the URL: name it once.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s %s: %w", req.Method, safetext.URL(req.URL.String()), redactURLError(err))
	}
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		// The URL without userinfo, the body (upstream text) with its
		// control characters escaped: both end up on a terminal.
		return nil, &StatusError{Method: req.Method, URL: safetext.URL(req.URL.String()), Status: resp.StatusCode, Body: safetext.Sanitize(string(bytes.TrimSpace(snippet)))}
	}
	return resp, nil
}

// redactURLError removes the userinfo from the URL of every *url.Error in
// err (net/http masks only the password, as "***"). It must run before err
// is wrapped with fmt.Errorf, which formats its message at once.
func redactURLError(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if ue, ok := e.(*url.Error); ok {
			ue.URL = safetext.URL(ue.URL)
		}
	}
	return err
}

// StatusError is a non-200 answer: URL has no userinfo, Body is the start
// of the body with control characters escaped.
type StatusError struct {
	Method, URL string
	Status      int
	Body        string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s %s: HTTP %d %s", e.Method, e.URL, e.Status, http.StatusText(e.Status))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// ReadJSONBody reads at most limit bytes of a body expected to be JSON and
// fails with a clear error when it is HTML (a captive portal or an error page
// served with status 200), empty, or larger than limit.
func ReadJSONBody(r io.Reader, url string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	url = safetext.URL(url)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", url, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("reading %s: body larger than %d bytes", url, limit)
	}
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return nil, fmt.Errorf("reading %s: empty body, expected JSON", url)
	}
	if t[0] == '<' {
		return nil, fmt.Errorf("reading %s: got an HTML page, expected JSON", url)
	}
	return b, nil
}
