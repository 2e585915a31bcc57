// Package dap is a small Debug Adapter Protocol client on top of
// github.com/google/go-dap, which provides the message types and the
// Content-Length framing but no client loop.
//
// A Client owns one connection: a reader goroutine decodes every message,
// hands responses to the request that is waiting for them (matched on
// request_seq) and queues events for WaitEvent. Events that go-dap does not
// know — debugpy sends debugpyWaitingForServer, debugpySockets and
// debugpyAttach — are recorded by name and skipped, never fatal.
//
// The package knows nothing about Ray or debugpy; package probe drives the
// attach sequence.
package dap
