package regauthtest

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Service is the service name in the challenge and token requests.
const Service = "imagectl-test-registry"

// Handler is an http.Handler serving /token and, behind it, the registry.
type Handler struct {
	next          http.Handler
	user, pass    string
	anonymousPull bool
	ttl           time.Duration
	now           func() time.Time

	mu     sync.Mutex
	tokens map[string]grant
	log    []string
}

type grant struct {
	expires time.Time
	access  map[string]map[string]bool // repository -> actions
}

// Option configures New.
type Option func(*Handler)

// WithAnonymousPull grants pull on every repository to anonymous token
// requests (a public repository); by default anonymous tokens grant nothing.
func WithAnonymousPull() Option { return func(h *Handler) { h.anonymousPull = true } }

// New returns a Handler that serves next only to clients holding a token
// obtained at /token with user and password.
func New(next http.Handler, user, password string, opts ...Option) *Handler {
	h := &Handler{next: next, user: user, pass: password, ttl: 5 * time.Minute, now: time.Now, tokens: map[string]grant{}}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Log returns one line per request that was refused or answered by /token:
// "token user=NAME scope=..." or "401 METHOD PATH (reason)".
func (h *Handler) Log() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.log...)
}

func (h *Handler) logf(format string, args ...any) {
	h.mu.Lock()
	h.log = append(h.log, fmt.Sprintf(format, args...))
	h.mu.Unlock()
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/token":
		h.serveToken(w, r)
	case r.URL.Path == "/v2" || strings.HasPrefix(r.URL.Path, "/v2/"):
		h.serveRegistry(w, r)
	default:
		http.NotFound(w, r)
	}
}

// serveToken implements the token endpoint of the Docker registry token
// authentication specification (GET, basic credentials, service and scope
// query parameters).
func (h *Handler) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if s := r.URL.Query().Get("service"); s != Service {
		writeJSON(w, http.StatusBadRequest, map[string]string{"details": fmt.Sprintf("unknown service %q", s)})
		return
	}
	user, pass, hasBasic := r.BasicAuth()
	authed := false
	if hasBasic {
		if subtle.ConstantTimeCompare([]byte(user), []byte(h.user)) != 1 || subtle.ConstantTimeCompare([]byte(pass), []byte(h.pass)) != 1 {
			h.logf("token refused: incorrect username or password for %q", user)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"details": "incorrect username or password"})
			return
		}
		authed = true
	}
	g := grant{expires: h.now().Add(h.ttl), access: map[string]map[string]bool{}}
	for _, scope := range r.URL.Query()["scope"] {
		// repository:NAME:ACTION[,ACTION]
		parts := strings.Split(scope, ":")
		if len(parts) != 3 || parts[0] != "repository" {
			continue
		}
		repo := parts[1]
		for _, a := range strings.Split(parts[2], ",") {
			if authed || (h.anonymousPull && a == "pull") {
				if g.access[repo] == nil {
					g.access[repo] = map[string]bool{}
				}
				g.access[repo][a] = true
			}
		}
	}
	tok, err := randomToken()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h.mu.Lock()
	h.tokens[tok] = g
	h.mu.Unlock()
	who := "anonymous"
	if authed {
		who = user
	}
	h.logf("token user=%s scope=%s", who, strings.Join(r.URL.Query()["scope"], " "))
	writeJSON(w, http.StatusOK, map[string]any{
		"token": tok, "access_token": tok,
		"expires_in": int(h.ttl / time.Second), "issued_at": h.now().UTC().Format(time.RFC3339),
	})
}

func (h *Handler) serveRegistry(w http.ResponseWriter, r *http.Request) {
	repo, action := required(r)
	g, ok := h.token(r)
	if !ok {
		h.refuse(w, r, repo, action, "", "authentication required")
		return
	}
	if repo != "" && !g.access[repo][action] {
		h.refuse(w, r, repo, action, "insufficient_scope", "authentication required")
		return
	}
	// A mount from a repository the token may not pull from is a plain
	// upload: drop the mount parameters, as registries do.
	if from := r.URL.Query().Get("from"); from != "" && !g.access[from]["pull"] {
		q := r.URL.Query()
		q.Del("mount")
		q.Del("from")
		r.URL.RawQuery = q.Encode()
	}
	h.next.ServeHTTP(w, r)
}

// token returns the grant of the request's bearer token, if valid.
func (h *Handler) token(r *http.Request) (grant, bool) {
	a := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(a, "Bearer ")
	if !ok {
		return grant{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.tokens[tok]
	if !ok || h.now().After(g.expires) {
		return grant{}, false
	}
	return g, true
}

func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, repo, action, errCode, msg string) {
	realm := "http://" + r.Host + "/token"
	ch := fmt.Sprintf(`Bearer realm=%q,service=%q`, realm, Service)
	if repo != "" {
		scope := "repository:" + repo + ":pull"
		if action != "pull" {
			scope += "," + action
		}
		ch += fmt.Sprintf(`,scope=%q`, scope)
	}
	if errCode != "" {
		ch += fmt.Sprintf(`,error=%q`, errCode)
	}
	w.Header().Set("WWW-Authenticate", ch)
	h.logf("401 %s %s (%s)", r.Method, r.URL.Path, strings.TrimSpace(errCode+" "+action))
	detail := []map[string]string{}
	if repo != "" {
		detail = append(detail, map[string]string{"Type": "repository", "Class": "", "Name": repo, "Action": action})
	}
	writeJSON(w, http.StatusUnauthorized, map[string]any{"errors": []map[string]any{{"code": "UNAUTHORIZED", "message": msg, "detail": detail}}})
}

// required returns the repository a /v2/ request addresses and the action it
// needs: pull for GET and HEAD, delete for deleting a manifest or tag, push
// for everything else. The base /v2/
// (version check) addresses no repository.
func required(r *http.Request) (repo, action string) {
	p := strings.TrimPrefix(r.URL.Path, "/v2/")
	for _, seg := range []string{"/manifests/", "/blobs/", "/tags/", "/referrers/"} {
		if i := strings.LastIndex(p, seg); i > 0 {
			repo = p[:i]
			break
		}
	}
	switch {
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		return repo, "pull"
	case r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/manifests/"):
		return repo, "delete"
	}
	return repo, "push"
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// WriteDockerConfig writes dir/config.json the way `docker login host` writes
// it (auths.HOST.auth = base64(user:password)), for DOCKER_CONFIG=dir.
func WriteDockerConfig(dir, host, user, password string) error {
	b, err := json.Marshal(map[string]any{"auths": map[string]any{
		host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))},
	}})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600)
}
