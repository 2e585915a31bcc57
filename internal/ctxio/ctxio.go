package ctxio

import (
	"context"
	"io"
)

// Reader returns a reader that reads r until ctx is done, then fails with
// ctx's error (context.Cause, so a cancellation cause is kept).
func Reader(ctx context.Context, r io.Reader) io.Reader { return &reader{ctx: ctx, r: r} }

type reader struct {
	ctx context.Context
	r   io.Reader
}

func (r *reader) Read(p []byte) (int, error) {
	if r.ctx.Err() != nil {
		return 0, context.Cause(r.ctx)
	}
	return r.r.Read(p)
}

// ReaderAt is Reader for an io.ReaderAt (archive/zip reads through one).
func ReaderAt(ctx context.Context, r io.ReaderAt) io.ReaderAt { return &readerAt{ctx: ctx, r: r} }

type readerAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (r *readerAt) ReadAt(p []byte, off int64) (int, error) {
	if r.ctx.Err() != nil {
		return 0, context.Cause(r.ctx)
	}
	return r.r.ReadAt(p, off)
}

// Copy is io.Copy that stops with ctx's error when ctx is done (checked
// before every read of at most 32 KiB).
func Copy(ctx context.Context, dst io.Writer, src io.Reader) (int64, error) {
	buf := make([]byte, 32<<10)
	return io.CopyBuffer(onlyWriter{dst}, Reader(ctx, src), buf)
}

// onlyWriter hides ReaderFrom/WriterTo, so that io.CopyBuffer really reads
// through the context check in chunks instead of handing the whole copy to
// an *os.File's ReadFrom (sendfile, copy_file_range), which a context cannot
// interrupt.
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }
