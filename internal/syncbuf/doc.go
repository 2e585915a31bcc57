// Package syncbuf is a bytes.Buffer that goroutines may write to while
// another reads it (a child process's output collected while it runs, a
// server's log read by a test), and a Writer that serializes the writes of
// goroutines sharing one io.Writer (the platforms' warnings of a build).
package syncbuf
