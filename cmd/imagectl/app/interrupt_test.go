package app

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imagectl/imagectl/sign"
)

// stall listens on loopback, accepts every connection and never answers;
// asked is closed at the first connection. It returns its host:port.
func stall(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			once.Do(func() { close(asked) })
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String(), asked
}

// keyFiles writes a cosign key pair and its password file into dir.
func keyFiles(t *testing.T, dir string) (key, pub, pwFile string) {
	t.Helper()
	key, pub, err := sign.WriteKeyPair(filepath.Join(dir, "cosign"), []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	pwFile = filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("pw"), 0o600); err != nil {
		t.Fatal(err)
	}
	return key, pub, pwFile
}

// Ctrl-C (the context cancelled by the first SIGINT) ends every verb with
// exit 130 while it waits for the network, and inject -i leaves the file as
// it was.
func TestInterruptExits130(t *testing.T) {
	dir := t.TempDir()
	key, pub, pwFile := keyFiles(t, dir)
	manifest, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "rayjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	root := filepath.Join("..", "..", "..")
	files := []string{"--matrix", filepath.Join(root, "matrix.yaml"), "--catalog", filepath.Join(root, "catalog.json")}
	for _, tc := range []struct {
		name string
		args func(host string) []string
	}{
		{"verify", func(h string) []string { return []string{"verify", h + "/team/img:v1", "--key", pub} }},
		{"sign", func(h string) []string {
			return []string{"sign", h + "/team/img:v1", "--key", key, "--key-password-file", pwFile}
		}},
		{"plan", func(h string) []string { return append(files, "plan", "--repository", h+"/team/img") }},
		{"extensions fetch", func(h string) []string {
			return append(files, "extensions", "fetch", "--ray", "2.46.0", "--cache-dir", filepath.Join(dir, "cache"),
				"--marketplace-url", "http://"+h, "--openvsx-url", "http://"+h)
		}},
		{"inject", func(h string) []string {
			f := filepath.Join(dir, "job.yaml")
			if err := os.WriteFile(f, manifest, 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"inject", "-f", f, "-i", "--repository", h + "/team/img"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host, asked := stall(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			var out, errb bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- Run(ctx, tc.args(host), &out, &errb) }()
			select {
			case <-asked:
			case code := <-done:
				t.Fatalf("ended (exit %d) before asking %s anything; stderr:\n%s", code, host, errb.String())
			case <-time.After(30 * time.Second):
				t.Fatal("never asked the stalled host anything")
			}
			cancel(errors.New("interrupt signal received"))
			select {
			case code := <-done:
				if code != ExitInterrupted {
					t.Errorf("exit %d after the interrupt, want %d; stderr:\n%s", code, ExitInterrupted, errb.String())
				}
				// The last line says what was interrupted and why, not
				// only "context canceled".
				lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
				last := lines[len(lines)-1]
				if want := "imagectl: " + tc.name + " interrupted (interrupt signal received)"; !strings.HasPrefix(last, want) || strings.Contains(last, "context canceled") {
					t.Errorf("last line of stderr %q, want it to start with %q and not say context canceled", last, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("still running 10 s after the interrupt")
			}
		})
	}
	if got, err := os.ReadFile(filepath.Join(dir, "job.yaml")); err != nil || !bytes.Equal(got, manifest) {
		t.Errorf("inject -i wrote the file although interrupted (err %v)", err)
	}
}
