// Package probe proves that a debugger can attach to a Ray task paused at
// breakpoint(), or frozen on an uncaught exception (RAY_DEBUG_POST_MORTEM=1),
// doing exactly what the Ray Distributed Debugger VS Code extension does: it
// lists paused workers through the Ray dashboard's State API (package
// debug/dashboard), dials the worker's ip:debugger_port, runs the Debug
// Adapter Protocol attach sequence against debugpy (package debug/dap) with
// the extension's exact attach configuration (dap.ExtensionAttachArguments, from
// the cluster's localRoot setting), asserts a stopped event and a stack frame
// in the expected function or file, opens that frame's source as VS Code
// would from where the probe runs (a file that exists there, or debugpy's
// sourceReference) and requires a breakpoint set on it to be verified, then
// continues or disconnects so the task resumes.
//
// Every step has its own timeout and honours the caller's context. Failures
// wrap sentinel errors (ErrNoPausedWorker, ErrPortRefused, ErrAnotherClient,
// ErrNoStop, ErrFrameNotFound, ErrSourceNotOpened, ErrNotPostMortem) so
// callers can map them to exit codes.
package probe
