package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by the error for anything but a regular file.
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError says a file is larger than the limit its reader allows.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than the limit of %s", e.Path, FormatSize(e.Limit))
}

// Option changes how a file is opened.
type Option func(*options)

type options struct{ noFollow bool }

// NoFollow refuses a symbolic link as the last element of the path.
func NoFollow() Option { return func(o *options) { o.noFollow = true } }

// Open opens path for reading without blocking and returns it only if it is
// a regular file. The caller closes it.
func Open(path string, opts ...Option) (*os.File, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	flags := os.O_RDONLY | openFlags
	if o.noFollow {
		if noFollowFlag == 0 { // no O_NOFOLLOW: check first (racy, best effort)
			if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return nil, fmt.Errorf("%s: %w (a symbolic link)", path, ErrNotRegular)
			}
		}
		flags |= noFollowFlag
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		if o.noFollow && isLinkLoop(err) {
			if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return nil, fmt.Errorf("%s: %w (a symbolic link)", path, ErrNotRegular)
			}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, describe(fi.Mode()))
	}
	return f, nil
}

// ReadFile returns the content of the regular file at path, which must not
// be larger than limit bytes.
func ReadFile(path string, limit int64, opts ...Option) ([]byte, error) {
	f, err := Open(path, opts...)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return ReadAll(f, path, limit)
}

// ReadAll reads r to the end, failing with a TooLargeError naming name once
// more than limit bytes arrive.
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Path: name, Limit: limit}
	}
	return b, nil
}

// FormatSize prints a byte count for people: 1 MiB, 64 KiB, 1500 bytes.
func FormatSize(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

func describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "mode " + m.String()
}
