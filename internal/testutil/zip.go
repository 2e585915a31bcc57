package testutil

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"testing"
)

// EditZip returns a copy of the zip archive data. Each entry goes through
// replace (nil copies every entry as it is): where replace returns true the
// entry is written again, deflated, with the body it returned. add (may be
// nil) then writes entries of its own after the copied ones.
func EditZip(t testing.TB, data []byte, replace func(f *zip.File) (body []byte, ok bool), add func(zw *zip.Writer)) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if replace != nil {
			if body, ok := replace(f); ok {
				w, err := zw.Create(f.Name)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.Write(body); err != nil {
					t.Fatal(err)
				}
				continue
			}
		}
		if err := zw.Copy(f); err != nil {
			t.Fatal(err)
		}
	}
	if add != nil {
		add(zw)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ReadZipEntry returns the uncompressed content of f.
func ReadZipEntry(t testing.TB, f *zip.File) []byte {
	t.Helper()
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	return b
}

// PadZip returns a copy of the zip archive data with n entries of 900 KiB
// of zeros added (extension/pad-0.bin, ...): each under the VSIX limits'
// per-entry ratio floor (1 MiB), together, from three on, past the default
// total expansion ratio (40): a VSIX only raised limits accept.
func PadZip(t testing.TB, data []byte, n int) []byte {
	t.Helper()
	zeros := make([]byte, 900<<10)
	return EditZip(t, data, nil, func(zw *zip.Writer) {
		for i := range n {
			w, err := zw.Create(fmt.Sprintf("extension/pad-%d.bin", i))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(zeros); err != nil {
				t.Fatal(err)
			}
		}
	})
}
