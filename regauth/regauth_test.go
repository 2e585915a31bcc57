package regauth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/regauth"
	"github.com/imagectl/imagectl/regauth/regauthtest"
)

// dockerConfig writes a config.json the way `docker login HOST` writes it
// (auths.HOST.auth = base64(user:password)) and points DOCKER_CONFIG at it.
func dockerConfig(t *testing.T, cfg map[string]any) {
	t.Helper()
	dir := t.TempDir()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
}

func login(host, user, pass string) map[string]any {
	return map[string]any{"auths": map[string]any{host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))}}}
}

// newAuthRegistry serves an in-memory registry that wants ci:s3cret.
func newAuthRegistry(t *testing.T, opts ...regauthtest.Option) (host string, h *regauthtest.Handler) {
	t.Helper()
	h = regauthtest.New(testutil.RegistryHandler(), "ci", "s3cret", opts...)
	return testutil.Serve(t, h), h
}

func TestCheckPushAndWriteWithDockerLogin(t *testing.T) {
	ctx := context.Background()
	host, _ := newAuthRegistry(t)
	dockerConfig(t, login(host, "ci", "s3cret"))
	repo, err := name.NewRepository(host + "/team/img")
	if err != nil {
		t.Fatal(err)
	}
	if err := regauth.CheckPush(ctx, repo, nil, nil); err != nil {
		t.Fatalf("CheckPush with docker login credentials: %v", err)
	}
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag("v1"), img, regauth.RemoteOptions(ctx)...); err != nil {
		t.Fatalf("push with RemoteOptions: %v", err)
	}
	if _, err := remote.Head(repo.Tag("v1"), regauth.RemoteOptions(ctx)...); err != nil {
		t.Fatalf("HEAD with RemoteOptions: %v", err)
	}
}

func TestCheckPushRefusals(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		cfg       func(host string) map[string]any
		anonPull  bool
		wantParts []string
	}{
		{"no config", func(string) map[string]any { return map[string]any{} }, false,
			[]string{"refused an anonymous push to", "/team/img", "log in first (docker login 127.0.0.1:", "config.json"}},
		{"anonymous token without push (Docker Hub)", func(string) map[string]any { return map[string]any{} }, true,
			[]string{"refused an anonymous push", "docker login 127.0.0.1:"}},
		{"wrong password", func(host string) map[string]any { return login(host, "ci", "badpass-xyz") }, false,
			[]string{"refused a push to", "with the credentials from", "401 Unauthorized", "log in again"}},
		{"credentials for another registry", func(string) map[string]any { return login("other.example:5000", "ci", "s3cret") }, false,
			[]string{"refused an anonymous push"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []regauthtest.Option
			if tc.anonPull {
				opts = append(opts, regauthtest.WithAnonymousPull())
			}
			host, _ := newAuthRegistry(t, opts...)
			dockerConfig(t, tc.cfg(host))
			repo, _ := name.NewRepository(host + "/team/img")
			err := regauth.CheckPush(ctx, repo, nil, nil)
			if err == nil {
				t.Fatal("CheckPush succeeded without valid credentials")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans several lines: %q", msg)
			}
			if !strings.Contains(msg, "registry "+host) {
				t.Errorf("error %q does not name the registry %s", msg, host)
			}
			for _, p := range tc.wantParts {
				if !strings.Contains(msg, p) {
					t.Errorf("error %q lacks %q", msg, p)
				}
			}
			if strings.Contains(msg, "s3cret") || strings.Contains(msg, "badpass-xyz") {
				t.Errorf("error leaks a password: %q", msg)
			}
		})
	}
}

// A credential helper named in credHelpers (docker-credential-NAME on PATH)
// is asked for the registry's credentials, as docker does.
func TestCredentialHelper(t *testing.T) {
	ctx := context.Background()
	host, h := newAuthRegistry(t)
	bin := t.TempDir()
	script := "#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread host\necho '{\"ServerURL\":\"'\"$host\"'\",\"Username\":\"ci\",\"Secret\":\"s3cret\"}'\n"
	if err := os.WriteFile(filepath.Join(bin, "docker-credential-imagectltest"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dockerConfig(t, map[string]any{"credHelpers": map[string]string{host: "imagectltest"}})
	repo, _ := name.NewRepository(host + "/team/img")
	if err := regauth.CheckPush(ctx, repo, nil, nil); err != nil {
		t.Fatalf("CheckPush through the credential helper: %v (registry log: %q)", err, h.Log())
	}
	found := false
	for _, l := range h.Log() {
		found = found || strings.HasPrefix(l, "token user=ci ")
	}
	if !found {
		t.Errorf("no token was issued to user ci: %q", h.Log())
	}
}

// Without credentials nothing at all is served: the fake is as strict as a
// private Docker Hub repository, so the tests above cannot pass anonymously.
func TestFakeRefusesAnonymousReads(t *testing.T) {
	host, _ := newAuthRegistry(t)
	dockerConfig(t, map[string]any{})
	ref, _ := name.ParseReference(host + "/team/img:v1")
	_, err := remote.Head(ref, regauth.RemoteOptions(context.Background())...)
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized") {
		t.Fatalf("anonymous HEAD: got %v, want 401 Unauthorized", err)
	}
}

// A registry that allows anonymous pushes (a local one) needs no login.
func TestCheckPushAnonymousWhereAllowed(t *testing.T) {
	host := testutil.Registry(t)
	dockerConfig(t, map[string]any{})
	repo, _ := name.NewRepository(host + "/open/img")
	if err := regauth.CheckPush(context.Background(), repo, nil, nil); err != nil {
		t.Fatalf("CheckPush to an open registry without credentials: %v", err)
	}
}
