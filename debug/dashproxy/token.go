package dashproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
)

// ReadToken reads Ray's token from file (a Secret's key mounted as a file),
// surrounding whitespace trimmed; an empty file is an error. The error
// names the file and never holds its content.
func ReadToken(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading the Ray token: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("reading the Ray token: %s is empty", file)
	}
	return t, nil
}

// tokenKey carries, in a request's context, the token read for it.
type tokenKey struct{}

// NewTokenProxy returns the loopback proxy of a code-server sidecar in a
// Ray cluster with token authentication, the Go twin of the one inject
// runs in the sidecar (inject.TokenProxyScript): it forwards GET and HEAD
// requests to the dashboard at upstream ("http://host:port") with
// "Authorization: Bearer <token>", the header Ray's dashboard middleware
// reads first (so a client's own Authorization, X-Ray-Authorization or
// cookie does not override it), the token read from tokenFile for each
// request (a Secret updated in place is followed). Any other method is a
// 405 that never reaches the dashboard. Answers pass back unchanged.
// Failures (the token file, the dashboard) are 502s naming the file or the
// dashboard, logged at warn level; the token is never logged.
func NewTokenProxy(upstream, tokenFile string, logger *slog.Logger) (http.Handler, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("dashboard proxy: upstream %q: expected http://host:port", upstream)
	}
	if tokenFile == "" {
		return nil, errors.New("dashboard proxy: no token file")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableCompression = true
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Header.Set("Authorization", "Bearer "+pr.In.Context().Value(tokenKey{}).(string))
		},
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			msg := fmt.Sprintf("%s %s (dashboard at %s): %v", r.Method, r.URL.Path, u.Redacted(), err)
			logger.Warn("dashboard proxy: " + msg)
			http.Error(w, "dashboard proxy: "+msg, http.StatusBadGateway)
		},
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "dashboard proxy: "+r.Method+": only GET and HEAD go to the Ray dashboard through this proxy", http.StatusMethodNotAllowed)
			return
		}
		tok, err := ReadToken(tokenFile)
		if err != nil {
			logger.Warn("dashboard proxy: " + err.Error())
			http.Error(w, "dashboard proxy: "+err.Error(), http.StatusBadGateway)
			return
		}
		rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenKey{}, tok)))
	}), nil
}
