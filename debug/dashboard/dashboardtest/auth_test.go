package dashboardtest

import (
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	smokedash "github.com/imagectl/imagectl/debug/dashboard"
)

const testToken = "c2VjcmV0LXRva2VuLW9mLXRoZS1jbHVzdGVy"

// do sends method path to s with the headers given (name, value pairs;
// "Cookie" included) and returns the status, Content-Type and body.
func do(t *testing.T, s *Server, method, path string, headers ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestTokenAuthLikeRaysMiddleware: with a token set, the fake answers as
// Ray's token_auth_middleware does: 401 and its body when no header or
// cookie gives a value, 403 and its body when the value is not exactly
// "Bearer <token>", Authorization before X-Ray-Authorization before the
// cookie, and the public paths let through.
func TestTokenAuthLikeRaysMiddleware(t *testing.T) {
	s := New()
	defer s.Close()
	s.SetWorkers(Worker{WorkerID: "a", IsAlive: true, WorkerType: "WORKER", NumPausedThreads: 1, IP: "10.0.0.7", DebuggerPort: 5678})
	s.SetAuthToken(testToken)
	workers := "/api/v0/workers?" + smokedash.PausedWorkersQuery
	const plainText = "text/plain; charset=utf-8"
	for _, tc := range []struct {
		name    string
		path    string
		headers []string
		status  int
		body    string // checked when the request is refused
	}{
		{"no credential", workers, nil, 401, MissingTokenBody},
		{"Authorization", workers, []string{"Authorization", "Bearer " + testToken}, 200, ""},
		{"X-Ray-Authorization", workers, []string{"X-Ray-Authorization", "Bearer " + testToken}, 200, ""},
		{"header name in lower case", workers, []string{"x-ray-authorization", "Bearer " + testToken}, 200, ""},
		{"cookie holds the bare token", workers, []string{"Cookie", AuthTokenCookie + "=" + testToken}, 200, ""},
		{"wrong token", workers, []string{"Authorization", "Bearer wrong"}, 403, InvalidTokenBody},
		{"wrong token in X-Ray-Authorization", workers, []string{"X-Ray-Authorization", "Bearer wrong"}, 403, InvalidTokenBody},
		{"wrong token in the cookie", workers, []string{"Cookie", AuthTokenCookie + "=wrong"}, 403, InvalidTokenBody},
		{"no Bearer prefix", workers, []string{"Authorization", testToken}, 403, InvalidTokenBody},
		{"bearer in lower case", workers, []string{"Authorization", "bearer " + testToken}, 403, InvalidTokenBody},
		{"Bearer alone", workers, []string{"Authorization", "Bearer"}, 403, InvalidTokenBody},
		{"token with a suffix", workers, []string{"Authorization", "Bearer " + testToken + "x"}, 403, InvalidTokenBody},
		{"Authorization wins over X-Ray-Authorization", workers, []string{"Authorization", "Bearer wrong", "X-Ray-Authorization", "Bearer " + testToken}, 403, InvalidTokenBody},
		{"an empty Authorization is absent", workers, []string{"Authorization", "", "X-Ray-Authorization", "Bearer " + testToken}, 200, ""},
		{"a header wins over the cookie", workers, []string{"X-Ray-Authorization", "Bearer wrong", "Cookie", AuthTokenCookie + "=" + testToken}, 403, InvalidTokenBody},
		{"an empty cookie is absent", workers, []string{"Cookie", AuthTokenCookie + "="}, 401, MissingTokenBody},
		{"another cookie is no credential", workers, []string{"Cookie", "session=" + testToken}, 401, MissingTokenBody},
		{"cluster_id", "/cluster_id", nil, 401, MissingTokenBody},
		{"job", "/api/jobs/raysubmit_1", nil, 401, MissingTokenBody},
		{"unknown path", "/no/such/path", nil, 401, MissingTokenBody},
		// Public paths: the answer is the route's (404 where the fake
		// serves nothing), never the middleware's.
		{"public /api/gcs_healthz", "/api/gcs_healthz", nil, 404, ""},
		{"public /", "/", nil, 404, ""},
		{"public /static/ prefix", "/static/js/main.js", nil, 404, ""},
		{"/static without the slash is not public", "/static", nil, 401, MissingTokenBody},
		{"/api/healthz/ is not /api/healthz", "/api/healthz/", nil, 401, MissingTokenBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, ctype, body := do(t, s, "GET", tc.path, tc.headers...)
			if status != tc.status {
				t.Fatalf("GET %s with %q: status %d (%s), want %d", tc.path, tc.headers, status, body, tc.status)
			}
			if tc.body != "" && (body != tc.body || ctype != plainText) {
				t.Errorf("GET %s: body %q (%s), want %q (%s)", tc.path, body, ctype, tc.body, plainText)
			}
		})
	}
	// Refused requests reach the dashboard: they are recorded.
	if got := s.Requests(); len(got) == 0 || got[0] != workers {
		t.Errorf("requests %q: want the refused ones recorded too", got)
	}
}

// TestTokenAuthBeforeModes: a refused request gets the middleware's answer
// whatever the mode; SetAuthToken("") turns authentication off.
func TestTokenAuthBeforeModes(t *testing.T) {
	s := New()
	defer s.Close()
	s.SetAuthToken(testToken)
	s.SetMode(ServerError)
	if status, _, body := do(t, s, "GET", "/cluster_id"); status != 401 || body != MissingTokenBody {
		t.Errorf("ServerError mode without a token: %d %q, want 401 %q", status, body, MissingTokenBody)
	}
	if status, _, _ := do(t, s, "GET", "/cluster_id", "Authorization", "Bearer "+testToken); status != 500 {
		t.Errorf("ServerError mode with the token: %d, want the mode's 500", status)
	}
	s.SetMode(Normal)
	s.SetAuthToken("")
	status, _, body := do(t, s, "GET", "/cluster_id")
	if status != 200 {
		t.Errorf("authentication off: %d %q, want 200", status, body)
	}
	if diff := cmp.Diff([]string{"/cluster_id", "/cluster_id", "/cluster_id"}, s.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}
