package syncbuf

import (
	"bytes"
	"io"
	"sync"
)

// Buffer is a bytes.Buffer guarded by a mutex. The zero Buffer is empty and
// ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Writer serializes the writes to the writer it wraps, for writers shared
// by goroutines (a bytes.Buffer, a caller's io.Writer).
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter wraps w; a nil w discards what is written.
func NewWriter(w io.Writer) *Writer {
	if w == nil {
		w = io.Discard
	}
	return &Writer{w: w}
}

// Write writes p to the wrapped writer, one Write at a time.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}
