package sign_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imagectl/imagectl/sign"
)

// TestPrefetchStartsAtOnceAndWaitsOnUse checks that Prefetch starts the
// load before anyone asks for the signer, that Signer waits for it (or for
// its own ctx), and that the load runs once.
func TestPrefetchStartsAtOnceAndWaitsOnUse(t *testing.T) {
	want := sign.NewSigner(nil, "test")
	started, release := make(chan struct{}), make(chan struct{})
	var loads atomic.Int32
	p := sign.Prefetch(context.Background(), func(context.Context) (*sign.Signer, error) {
		loads.Add(1)
		close(started)
		<-release
		return want, nil
	})
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the load did not start before Signer was called")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if s, err := p.Signer(ctx); !errors.Is(err, context.DeadlineExceeded) || s != nil {
		t.Fatalf("Signer during the load = %v, %v; want it to wait until its ctx ends", s, err)
	}
	close(release)
	for range 2 {
		if s, err := p.Signer(context.Background()); err != nil || s != want {
			t.Fatalf("Signer = %v, %v; want the loaded signer", s, err)
		}
	}
	if n := loads.Load(); n != 1 {
		t.Errorf("load ran %d times, want 1", n)
	}
}

// TestPrefetchKeyErrorsNameTheFile checks that a key that does not load
// is reported with its file, from the first use.
func TestPrefetchKeyErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	keyPath, _, err := sign.WriteKeyPair(filepath.Join(dir, "cosign"), []byte("right"))
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.key")
	for _, tc := range []struct {
		name, path string
		pw         sign.Password
	}{
		{"wrong password", keyPath, sign.StaticPassword([]byte("wrong"))},
		{"missing key", missing, sign.StaticPassword([]byte("right"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sign.PrefetchKey(context.Background(), tc.path, tc.pw).Signer(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("Signer error = %v, want one naming %s", err, tc.path)
			}
		})
	}
	s, err := sign.PrefetchKey(context.Background(), keyPath, sign.StaticPassword([]byte("right"))).Signer(context.Background())
	if err != nil || s.String() != "key "+keyPath {
		t.Errorf("Signer = %v, %v; want key %s", s, err, keyPath)
	}
}
