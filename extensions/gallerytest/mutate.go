package gallerytest

import (
	"archive/zip"
	"bytes"
	"io/fs"
)

// Entry is an extra zip entry for AddEntries.
type Entry struct {
	Name string
	Body []byte
	Mode fs.FileMode // e.g. fs.ModeSymlink|0o777; 0 means 0o644
}

// AddEntries returns a copy of the VSIX with extra entries appended (for
// zip-slip, link and bomb fixtures). Entries are deflated.
func AddEntries(vsix []byte, extra ...Entry) ([]byte, error) {
	return rewrite(vsix, func(zw *zip.Writer) error {
		for _, e := range extra {
			h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate}
			m := e.Mode
			if m == 0 {
				m = 0o644
			}
			h.SetMode(m)
			w, err := zw.CreateHeader(h)
			if err != nil {
				return err
			}
			if _, err := w.Write(e.Body); err != nil {
				return err
			}
		}
		return nil
	})
}

// AddRawEntry returns a copy of the VSIX with one entry appended raw: its
// header says what h says (CRC, sizes, method), whatever data is — for
// entries that lie about their contents.
func AddRawEntry(vsix []byte, h *zip.FileHeader, data []byte) ([]byte, error) {
	return rewrite(vsix, func(zw *zip.Writer) error {
		w, err := zw.CreateRaw(h)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
}

// rewrite copies the VSIX's entries into a new zip, lets add append to it
// and returns the result.
func rewrite(vsix []byte, add func(*zip.Writer) error) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(vsix), int64(len(vsix)))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if err := zw.Copy(f); err != nil {
			return nil, err
		}
	}
	if err := add(zw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
