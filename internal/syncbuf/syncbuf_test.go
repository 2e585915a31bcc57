package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Concurrent writers and a reader (go test -race finds an unguarded one).
func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Errorf("%d bytes written, want 800", len(got))
	}
}

// Goroutines sharing an unguarded writer through Writer: every write
// arrives whole (go test -race finds an unguarded one); nil discards.
func TestWriter(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if _, err := w.Write([]byte("line\n")); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("line\n", 800) {
		t.Errorf("%d bytes written, want 800 whole lines", len(got))
	}
	if n, err := NewWriter(nil).Write([]byte("x")); n != 1 || err != nil {
		t.Errorf("NewWriter(nil).Write: %d, %v; want 1, nil", n, err)
	}
}
