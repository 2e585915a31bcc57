package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/imagectl/imagectl/sign"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options"
)

// A registry on loopback that names a token realm on another host over
// plain HTTP gets verify and plan refused with one line naming the realm;
// the other host never sees the docker config's credentials.
func TestTokenRealmOnAnotherHostGetsNoCredentials(t *testing.T) {
	var requests, withAuth atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Header.Get("Authorization") != "" {
			withAuth.Add(1)
		}
		fmt.Fprint(w, `{"token":"t0ken"}`)
	}))
	t.Cleanup(other.Close)
	_, otherPort, err := net.SplitHostPort(strings.TrimPrefix(other.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	realm := "http://localhost:" + otherPort + "/token"
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service="evil"`, realm))
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")

	cfgDir := t.TempDir()
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte("ci:s3cret"))}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", cfgDir)
	_, pub, err := sign.WriteKeyPair(filepath.Join(t.TempDir(), "cosign"), []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "..", "..")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"verify", []string{"verify", host + "/team/img:v1", "--key", pub}},
		{"verify --insecure", []string{"verify", host + "/team/img:v1", "--key", pub, "--insecure"}},
		{"plan", []string{"--matrix", filepath.Join(root, "matrix.yaml"), "--catalog", filepath.Join(root, "catalog.json"), "plan", "--repository", host}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(context.Background(), tc.args, &out, &errb)
			if code != options.ExitFailure {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, options.ExitFailure, errb.String())
			}
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			last := lines[len(lines)-1]
			if !strings.Contains(last, realm) || !strings.Contains(last, "another host over plain HTTP") {
				t.Errorf("last line of stderr %q does not refuse the realm %s", last, realm)
			}
		})
	}
	if n, a := requests.Load(), withAuth.Load(); n != 0 || a != 0 {
		t.Errorf("the other host got %d requests, %d with an Authorization header; want none", n, a)
	}
}
