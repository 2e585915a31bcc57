package vsix

import (
	"context"
	"io"
)

// ReadFiles returns the contents of the named entries of the VSIX in r
// (size bytes), e.g. PackageJSONPath and "extension/dist/extension.js",
// after the archive safety checks on what the entries declare (lim; a zero
// field takes the default). An entry the VSIX does not hold is absent from
// the map; an entry larger than max bytes is an error naming it. It is a
// reader for checks of an extension's content, not a validation (see
// Validate).
func ReadFiles(ctx context.Context, r io.ReaderAt, size int64, lim Limits, max int64, names ...string) (map[string][]byte, error) {
	zr, err := open(ctx, r, size, lim.withDefaults())
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(names))
	for _, name := range names {
		f := find(zr.File, name)
		if f == nil {
			continue
		}
		b, err := readEntry(ctx, f, max)
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}
