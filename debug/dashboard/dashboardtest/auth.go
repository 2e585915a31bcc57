package dashboardtest

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// Ray's token authentication of the dashboard (RAY_AUTH_MODE=token, Ray
// >= 2.52), as its aiohttp middleware does it: token_auth_middleware in
// python/ray/_private/authentication/http_token_authentication.py (read at
// ray-project/ray commit 39f042f745, the version with the X-Ray-Authorization
// fallback of ray PR #58819, cherry-picked into the 2.52 release as
// PR #58826), the constants of authentication_constants.py beside it, the
// public paths python/ray/dashboard/http_server_head.py passes it (commit
// 00709838dd), and the token check of validate_authentication_token
// (AuthenticationToken::FromMetadata in
// src/ray/rpc/authentication/authentication_token.h).
const (
	// AuthorizationHeader is read first ("authorization").
	AuthorizationHeader = "Authorization"
	// RayAuthorizationHeader is read when Authorization is absent or
	// empty ("x-ray-authorization": for proxies that consume
	// Authorization, and KubeRay's dashboard client).
	RayAuthorizationHeader = "X-Ray-Authorization"
	// AuthTokenCookie is read last, when neither header is given: its
	// value is the bare token, which the middleware prefixes with
	// "Bearer " (the dashboard UI's session cookie).
	AuthTokenCookie = "ray-authentication-token"
	// BearerPrefix must begin the header's value exactly (case and the
	// one space included); the rest must equal the token byte for byte.
	BearerPrefix = "Bearer "
	// MissingTokenBody is the answer (401, text/plain; charset=utf-8)
	// when neither header nor cookie gives a value.
	MissingTokenBody = "Unauthorized: Missing authentication token"
	// InvalidTokenBody is the answer (403, text/plain; charset=utf-8)
	// when the value given is not "Bearer <token>".
	InvalidTokenBody = "Forbidden: Invalid authentication token"
)

// PublicExactPaths and PublicPathPrefixes are the paths the dashboard's
// middleware lets through without a token (http_server_head.py
// public_exact_paths and public_path_prefixes): what the UI needs to load
// and ask for a token, and the health checks.
var (
	PublicExactPaths = []string{
		"/", "/favicon.ico", "/api/authentication_mode", "/api/authenticate",
		"/api/healthz", "/api/gcs_healthz", "/api/local_raylet_healthz", "/-/healthz",
	}
	PublicPathPrefixes = []string{"/static/"}
)

// SetAuthToken turns Ray's token authentication on with token (as
// RAY_AUTH_MODE=token and RAY_AUTH_TOKEN do), or off with "": every
// request but those to the public paths must then carry the token, or is
// refused as Ray's middleware refuses it, before any Mode applies.
// Refused requests are recorded too.
func (s *Server) SetAuthToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authToken = token
}

// refuse answers r as Ray's token middleware does when it does not let r
// through, and reports whether it did.
func refuse(w http.ResponseWriter, r *http.Request, token string) bool {
	if token == "" || isPublicPath(r.URL.Path) {
		return false
	}
	auth := r.Header.Get(AuthorizationHeader)
	if auth == "" {
		auth = r.Header.Get(RayAuthorizationHeader)
	}
	if auth == "" {
		if c, err := r.Cookie(AuthTokenCookie); err == nil && c.Value != "" {
			auth = BearerPrefix + c.Value
		}
	}
	switch {
	case auth == "":
		text(w, http.StatusUnauthorized, MissingTokenBody)
		return true
	case !validToken(auth, token):
		text(w, http.StatusForbidden, InvalidTokenBody)
		return true
	}
	return false
}

// validToken is validate_authentication_token in token mode: the value
// must start with "Bearer " exactly, and the rest equal the token
// (compared in constant time, as Ray does).
func validToken(auth, token string) bool {
	got, ok := strings.CutPrefix(auth, BearerPrefix)
	return ok && got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

func isPublicPath(p string) bool {
	for _, e := range PublicExactPaths {
		if p == e {
			return true
		}
	}
	for _, pre := range PublicPathPrefixes {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}
