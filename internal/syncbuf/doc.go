// Package syncbuf is a bytes.Buffer that goroutines may write to while
// another reads it: a child process's output collected while it runs, a
// server's log read by a test.
package syncbuf
