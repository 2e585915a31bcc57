// Package debug is imagectl debug: its flags turned into one call of
// package debug (github.com/imagectl/imagectl/debug), whose events it
// prints as text or JSON lines, and its exit code (ExitJobFailed for a job
// that failed).
package debug
