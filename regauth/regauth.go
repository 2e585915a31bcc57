package regauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Keychain returns the docker config keychain (DOCKER_CONFIG or
// ~/.docker/config.json, credential helpers included).
func Keychain() authn.Keychain { return authn.DefaultKeychain }

// RemoteOptions returns the go-containerregistry options every registry call
// of imagectl starts from: the context, the docker config keychain, the
// guarded Transport, and extra options after them (a user agent; a transport
// given there must be wrapped in Transport itself).
func RemoteOptions(ctx context.Context, extra ...remote.Option) []remote.Option {
	return append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(Keychain()), remote.WithTransport(Transport(nil))}, extra...)
}

// ConfigDir returns the docker config directory, read from the environment
// now: $DOCKER_CONFIG, else ~/.docker. (docker/cli's config.Dir caches it for
// the life of the process; go-containerregistry's keychain reads it per call,
// and so must everything else.)
func ConfigDir() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "~/.docker"
	}
	return filepath.Join(home, ".docker")
}

// ConfigPath returns the docker config file the keychain reads, for messages.
func ConfigPath() string { return filepath.Join(ConfigDir(), "config.json") }

// CheckPushTimeout bounds CheckPush when ctx has no earlier deadline.
const CheckPushTimeout = 30 * time.Second

// CheckPush returns nil when the credentials of kc (nil: Keychain) may push
// to repo: it obtains a push-scoped token and initiates a blob upload, which
// it cancels again (nothing is written). Docker Hub grants an anonymous
// token without push access, so the upload is what tells. rt is the base
// transport (nil: remote.DefaultTransport), always wrapped in Transport. The error is one line naming the
// registry and what to do.
func CheckPush(ctx context.Context, repo name.Repository, kc authn.Keychain, rt http.RoundTripper) error {
	if kc == nil {
		kc = Keychain()
	}
	rt = Transport(rt)
	ctx, cancel := context.WithTimeout(ctx, CheckPushTimeout)
	defer cancel()
	reg := repo.RegistryStr()
	auth, err := authn.Resolve(ctx, kc, repo)
	if err != nil {
		return fmt.Errorf("reading credentials for %s from %s: %w", reg, ConfigPath(), err)
	}
	anonymous := auth == authn.Anonymous
	tr, err := transport.NewWithContext(ctx, repo.Registry, auth, rt, []string{repo.Scope(transport.PushScope)})
	if err != nil {
		return pushError(repo, anonymous, err)
	}
	c := &http.Client{Transport: tr}
	u := url.URL{Scheme: repo.Scheme(), Host: repo.RegistryStr(), Path: fmt.Sprintf("/v2/%s/blobs/uploads/", repo.RepositoryStr())}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return pushError(repo, anonymous, err)
	}
	defer resp.Body.Close()
	if err := transport.CheckError(resp, http.StatusAccepted, http.StatusCreated); err != nil {
		return pushError(repo, anonymous, err)
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		if lu, err := u.Parse(loc); err == nil {
			if del, err := http.NewRequestWithContext(ctx, http.MethodDelete, lu.String(), nil); err == nil {
				if r, err := c.Do(del); err == nil {
					r.Body.Close()
				}
			}
		}
	}
	return nil
}

func pushError(repo name.Repository, anonymous bool, err error) error {
	reg := repo.RegistryStr()
	var terr *transport.Error
	denied := errors.As(err, &terr) && (terr.StatusCode == http.StatusUnauthorized || terr.StatusCode == http.StatusForbidden)
	if !denied {
		return fmt.Errorf("registry %s: checking push access to %s: %w", reg, repo.Name(), err)
	}
	if anonymous {
		return fmt.Errorf("registry %s refused an anonymous push to %s: log in first (%s; credentials are read from %s)", reg, repo.Name(), loginCommand(reg), ConfigPath())
	}
	return fmt.Errorf("registry %s refused a push to %s with the credentials from %s (%d %s): log in again with an account that may push (%s)", reg, repo.Name(), ConfigPath(), terr.StatusCode, http.StatusText(terr.StatusCode), loginCommand(reg))
}

// loginCommand is the docker login command for reg (no host for Docker Hub).
func loginCommand(reg string) string {
	if reg == name.DefaultRegistry {
		return "docker login"
	}
	return "docker login " + reg
}
