// Package ctxio makes long reads and copies stop when their context is done:
// Reader checks the context before every Read, so extraction, hashing and
// copying of large files end within one buffer of a cancellation (SIGINT)
// instead of running to the end.
package ctxio
