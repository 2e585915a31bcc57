package regauth

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/internal/waitnotice"
)

// Transport returns base (nil: go-containerregistry's remote.DefaultTransport)
// guarded so that no registry can direct imagectl's credentials to another
// host in clear: a registry's 401 whose WWW-Authenticate names a token realm
// over plain HTTP on a host (or port) other than the registry's own, or a
// plain-HTTP realm for a registry spoken to over TLS, ends the request with
// one line naming the realm, before anything is sent there.
//
// go-containerregistry sends the docker config's credentials (Basic, or the
// identity token) to whatever realm the registry's challenge names, over plain
// HTTP when the registry itself was reached over plain HTTP (localhost,
// 127.0.0.1, or a registry named insecure). With this guard, credentials go
// over plain HTTP only to the registry host itself, and only when plain HTTP
// to that host was allowed; everywhere else only over TLS.
//
// Every request is watched by the waitnotice.Notice of its context, if any.
// With base nil, each attempt waits at most ResponseHeaderTimeout for the
// response headers after it is sent; the body and the whole call are bounded
// by the caller's context.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = defaultBase
	}
	return &realmGuard{base: base}
}

// ResponseHeaderTimeout bounds each request's wait for the response headers
// (after the request is written) on Transport's default base.
const ResponseHeaderTimeout = 60 * time.Second

// defaultBase is go-containerregistry's remote.DefaultTransport with a bound
// on the wait for response headers: a registry that accepts connections and
// never answers fails the attempt instead of holding it forever.
var defaultBase http.RoundTripper = func() http.RoundTripper {
	t := remote.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = ResponseHeaderTimeout
	return t
}()

// realmGuard is the RoundTripper of Transport.
type realmGuard struct {
	base http.RoundTripper
}

func (g *realmGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	stop := waitnotice.Watch(req)
	resp, err := g.base.RoundTrip(req)
	stop(err)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	for _, realm := range challengeRealms(resp.Header.Values("WWW-Authenticate")) {
		if err := checkRealm(req.URL, realm); err != nil {
			resp.Body.Close()
			return nil, err
		}
	}
	return resp, nil
}

// checkRealm returns an error when realm is a plain-HTTP URL that is not on
// the host and port of reg (the registry request that was challenged), or
// when reg itself went over TLS. A realm that is not a plain-HTTP URL is left
// to go-containerregistry, which refuses anything but https and http.
func checkRealm(reg *url.URL, realm string) error {
	u, err := url.Parse(realm)
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return nil
	}
	if reg.Scheme != "http" {
		return fmt.Errorf("registry %s (HTTPS) named a plain-HTTP token realm %q: refusing to send credentials to it in clear", reg.Host, u.Redacted())
	}
	if !sameHostPort(reg, u) {
		return fmt.Errorf("registry %s named a token realm %q on another host over plain HTTP: refusing to send credentials to it in clear (only the registry host itself may be asked over plain HTTP)", reg.Host, u.Redacted())
	}
	return nil
}

// sameHostPort reports whether a and b name the same host and port, the
// scheme's default port standing in for a missing one.
func sameHostPort(a, b *url.URL) bool {
	return strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// realmParam matches a realm parameter of a WWW-Authenticate challenge, as a
// quoted string (group 1) or a token (group 2).
var realmParam = regexp.MustCompile(`(?i)(?:^|[\s,])realm\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]+))`)

// challengeRealms returns every realm parameter of the WWW-Authenticate
// header values hs, whatever the challenge's scheme (a Basic realm is a label
// and never a plain-HTTP URL).
func challengeRealms(hs []string) []string {
	var out []string
	for _, h := range hs {
		for _, m := range realmParam.FindAllStringSubmatch(h, -1) {
			r := m[2]
			if m[1] != "" {
				r = unquote(m[1])
			}
			out = append(out, r)
		}
	}
	return out
}

// unquote removes the backslash escapes of an RFC 9110 quoted string.
func unquote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
