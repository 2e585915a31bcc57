package dashproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
)

// Worker is what the proxy knows of a paused worker row.
type Worker struct {
	WorkerID, IP                   string
	DebuggerPort, NumPausedThreads int
	WorkerType                     string
}

// Tunneler opens (or returns the already open) local tunnel to a paused
// worker's debugger port. The proxy calls it concurrently, once per paused
// row per request, with the request's context.
type Tunneler interface {
	Tunnel(ctx context.Context, w Worker) (host string, port int, err error)
}

// DefaultMaxBody bounds the State API answers the proxy decodes.
const DefaultMaxBody = 16 << 20

type options struct {
	header  http.Header
	logger  *slog.Logger
	errFunc func(Worker, error)
	maxBody int64
}

// Option configures New.
type Option func(*options)

// WithHeader adds a header to every upstream request (Ray's token
// authentication); its value is never logged.
func WithHeader(name, value string) Option { return func(o *options) { o.header.Set(name, value) } }

// WithLogger logs rewrites at debug level and failures at warn level
// (default: nothing is logged).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithErrorFunc sets the function called, possibly concurrently, when a
// paused worker's tunnel cannot be opened.
func WithErrorFunc(f func(w Worker, err error)) Option { return func(o *options) { o.errFunc = f } }

// WithMaxBody bounds the workers answers the proxy decodes (default
// DefaultMaxBody); a larger one is a 502.
func WithMaxBody(n int64) Option { return func(o *options) { o.maxBody = n } }

// Proxy is the local dashboard proxy; it implements http.Handler.
type Proxy struct {
	upstream *url.URL
	tunneler Tunneler
	o        options
	rp       *httputil.ReverseProxy
}

// rewriteKey marks, in the outbound request's context, an answer to rewrite.
type rewriteKey struct{}

// New returns a proxy to the dashboard at upstream ("http://host:port").
func New(upstream string, t Tunneler, opts ...Option) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("dashboard proxy: upstream %q: %w", upstream, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("dashboard proxy: upstream %q: expected http://host:port", upstream)
	}
	if t == nil {
		return nil, errors.New("dashboard proxy: no Tunneler")
	}
	p := &Proxy{upstream: u, tunneler: t, o: options{header: http.Header{}, maxBody: DefaultMaxBody}}
	for _, opt := range opts {
		opt(&p.o)
	}
	if p.o.maxBody <= 0 {
		return nil, fmt.Errorf("dashboard proxy: WithMaxBody(%d): the limit must be positive", p.o.maxBody)
	}
	if p.o.logger == nil {
		p.o.logger = slog.New(slog.DiscardHandler)
	}
	// No transparent gzip: the client's Accept-Encoding goes upstream and
	// the answer comes back as the dashboard encoded it.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableCompression = true
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      tr,
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.errorHandler,
		ErrorLog:       slog.NewLogLogger(p.o.logger.Handler(), slog.LevelWarn),
	}
	return p, nil
}

// ServeHTTP forwards r to the dashboard.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.rp.ServeHTTP(w, r) }

func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(p.upstream)
	for k, vs := range p.o.header {
		pr.Out.Header[k] = append([]string(nil), vs...)
	}
	if pr.In.Method == http.MethodGet && pr.In.URL.Path == "/api/v0/workers" {
		pr.Out.Header.Set("Accept-Encoding", "identity")
		pr.Out = pr.Out.WithContext(context.WithValue(pr.Out.Context(), rewriteKey{}, true))
	}
}

func (p *Proxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	msg := fmt.Sprintf("dashboard proxy: %s %s (dashboard at %s): %v", r.Method, r.URL.Redacted(), p.upstream.Redacted(), err)
	level := slog.LevelWarn
	if r.Context().Err() != nil {
		level = slog.LevelDebug // the client went away
	}
	p.o.logger.Log(r.Context(), level, "dashboard proxy error", "method", r.Method, "url", r.URL.Redacted(), "err", err)
	http.Error(w, msg, http.StatusBadGateway)
}

// modifyResponse points the paused rows of a workers answer at their tunnels.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	req := resp.Request
	if req.Context().Value(rewriteKey{}) == nil || resp.StatusCode != http.StatusOK {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ce := resp.Header.Get("Content-Encoding"); mt != "application/json" || ce != "" && ce != "identity" {
		return nil
	}
	if resp.ContentLength > p.o.maxBody {
		return fmt.Errorf("the answer of %d bytes is larger than the limit of %d bytes", resp.ContentLength, p.o.maxBody)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, p.o.maxBody+1))
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if int64(len(body)) > p.o.maxBody {
		return fmt.Errorf("the answer is larger than the limit of %d bytes", p.o.maxBody)
	}
	out, err := p.rewriteWorkers(req.Context(), body)
	if err != nil {
		return err
	}
	if out == nil {
		out = body // nothing rewritten: the same bytes, the same Content-Length
	} else {
		resp.ContentLength = int64(len(out))
		resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	return nil
}

// row is the part of a WorkerState row the proxy reads.
type row struct {
	WorkerID         string `json:"worker_id"`
	IsAlive          bool   `json:"is_alive"`
	WorkerType       string `json:"worker_type"`
	IP               string `json:"ip"`
	DebuggerPort     int    `json:"debugger_port"`
	NumPausedThreads int    `json:"num_paused_threads"`
}

// rewriteWorkers returns body with the paused rows pointing at their
// tunnels, or nil when it is not a State API list or no row changed. It
// fails only when ctx ends.
func (p *Proxy) rewriteWorkers(ctx context.Context, body []byte) ([]byte, error) {
	env, ok := parseObject(body)
	if !ok || string(env.get("result")) != "true" {
		return nil, nil
	}
	data, ok := parseObject(env.get("data"))
	if !ok {
		return nil, nil
	}
	list, ok := parseObject(data.get("result"))
	if !ok {
		return nil, nil
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(list.get("result"), &rows); err != nil {
		return nil, nil
	}
	changed := false
	for i, raw := range rows {
		var r row
		if err := json.Unmarshal(raw, &r); err != nil || r.NumPausedThreads < 1 || !r.IsAlive || r.DebuggerPort <= 0 || r.IP == "" {
			continue
		}
		w := Worker{WorkerID: r.WorkerID, IP: r.IP, DebuggerPort: r.DebuggerPort, NumPausedThreads: r.NumPausedThreads, WorkerType: r.WorkerType}
		host, port, err := p.tunneler.Tunnel(ctx, w)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("opening the tunnel to worker %s: %w", w.WorkerID, context.Cause(ctx))
		}
		if err != nil {
			p.o.logger.Warn("dashboard proxy: cannot open a tunnel to a paused worker; its row is left unchanged", "worker_id", w.WorkerID, "ip", w.IP, "debugger_port", w.DebuggerPort, "err", err)
			if p.o.errFunc != nil {
				p.o.errFunc(w, err)
			}
			continue
		}
		obj, ok := parseObject(raw)
		if !ok {
			continue
		}
		obj.set("ip", quote(host))
		obj.set("debugger_port", json.RawMessage(strconv.Itoa(port)))
		rows[i] = obj.bytes()
		changed = true
		p.o.logger.Debug("dashboard proxy: paused worker points at its tunnel", "worker_id", w.WorkerID, "from", fmt.Sprintf("%s:%d", w.IP, w.DebuggerPort), "to", fmt.Sprintf("%s:%d", host, port))
	}
	if !changed {
		return nil, nil
	}
	arr := []byte{'['}
	for i, r := range rows {
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, r...)
	}
	list.set("result", append(arr, ']'))
	data.set("result", list.bytes())
	env.set("data", data.bytes())
	return env.bytes(), nil
}

// object is a JSON object whose members keep their order and the exact
// text of their values.
type object []member

type member struct {
	key string
	val json.RawMessage
}

// parseObject parses b, a JSON object and nothing else.
func parseObject(b []byte) (object, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	o := object{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		o = append(o, member{k, v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return o, true
}

// get returns the value of key, the last one as Python's json reads a
// repeated key.
func (o object) get(key string) json.RawMessage {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].key == key {
			return o[i].val
		}
	}
	return nil
}

func (o object) set(key string, v json.RawMessage) {
	for i := range o {
		if o[i].key == key {
			o[i].val = v
		}
	}
}

func (o object) bytes() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(quote(m.key))
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func quote(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
