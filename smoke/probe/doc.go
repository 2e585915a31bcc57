// Package probe proves that a debugger can attach to a Ray task paused at
// breakpoint(), doing exactly what the Ray Distributed Debugger VS Code
// extension does: it lists paused workers through the Ray dashboard's State
// API (package smoke/dashboard), dials the worker's ip:debugger_port, runs
// the Debug Adapter Protocol attach sequence against debugpy (package
// smoke/dap), asserts a stopped event and a stack frame in the expected
// function or file, then continues or disconnects so the task resumes.
//
// Every step has its own timeout and honours the caller's context. Failures
// wrap sentinel errors (ErrNoPausedWorker, ErrPortRefused, ErrAnotherClient,
// ErrNoStop, ErrFrameNotFound) so callers can map them to exit codes.
package probe
