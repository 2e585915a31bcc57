package regauth_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/regauth"
)

// authCounter is the "other host": it counts the requests it gets and those
// carrying an Authorization header, and answers every one with a token.
type authCounter struct {
	mu             sync.Mutex
	requests, auth int
}

func (c *authCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.requests++
	if r.Header.Get("Authorization") != "" {
		c.auth++
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"token":"t0ken"}`)
}

func (c *authCounter) counts() (requests, auth int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests, c.auth
}

// challengingRegistry answers every request with 401 and the challenge
// WWW-Authenticate: Bearer realm="<realm>".
func challengingRegistry(t *testing.T, realm func() string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service="evil"`, realm()))
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// A registry reached over plain HTTP (loopback, or --insecure) that names a
// token realm on another host over plain HTTP gets an error naming the realm,
// and the other host never sees the docker config's credentials.
func TestPlainHTTPRealmOnAnotherHostIsRefused(t *testing.T) {
	ctx := context.Background()
	other := &authCounter{}
	otherSrv := httptest.NewServer(other)
	t.Cleanup(otherSrv.Close)
	_, otherPort, err := net.SplitHostPort(strings.TrimPrefix(otherSrv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// go-containerregistry itself refuses loopback IP literals as realms;
	// "localhost" is another host name for the same listener.
	realm := "http://localhost:" + otherPort + "/token"
	host := challengingRegistry(t, func() string { return realm })
	dockerConfig(t, login(host, "ci", "s3cret"))

	for _, tc := range []struct {
		name     string
		nameOpts []name.Option
		call     func(repo name.Repository) error
	}{
		{"HEAD through RemoteOptions", nil, func(repo name.Repository) error {
			_, err := remote.Head(repo.Tag("v1"), regauth.RemoteOptions(ctx)...)
			return err
		}},
		{"HEAD through RemoteOptions, insecure", []name.Option{name.Insecure}, func(repo name.Repository) error {
			_, err := remote.Head(repo.Tag("v1"), regauth.RemoteOptions(ctx)...)
			return err
		}},
		{"CheckPush", nil, func(repo name.Repository) error {
			return regauth.CheckPush(ctx, repo, nil, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, err := name.NewRepository(host+"/team/img", tc.nameOpts...)
			if err != nil {
				t.Fatal(err)
			}
			err = tc.call(repo)
			if err == nil {
				t.Fatal("succeeded against a registry that only challenges")
			}
			msg := err.Error()
			if !strings.Contains(msg, realm) || !strings.Contains(msg, "another host over plain HTTP") {
				t.Errorf("error %q does not name the refused realm %s", msg, realm)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans several lines: %q", msg)
			}
			if strings.Contains(msg, "s3cret") {
				t.Errorf("error leaks the password: %q", msg)
			}
		})
	}
	if reqs, auth := other.counts(); reqs != 0 || auth != 0 {
		t.Errorf("the other host got %d requests, %d with an Authorization header; want none", reqs, auth)
	}
}
