package testutil

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// TarMember returns the content of the member name (a leading "./" in
// the tarball's names is ignored) of the tarball at path, and false when it
// has none.
func TarMember(t testing.TB, path, name string) ([]byte, bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, false
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if strings.TrimPrefix(h.Name, "./") != name {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, name, err)
		}
		return b, true
	}
}
