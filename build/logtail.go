package build

import (
	"sync"

	"github.com/moby/buildkit/client"

	"github.com/imagectl/imagectl/pylock"
)

// maxLogTail bounds the solve output kept per vertex to find pip's report.
const maxLogTail = 256 << 10

// logTail keeps the last maxLogTail bytes each vertex logged.
type logTail struct {
	mu   sync.Mutex
	logs map[string][]byte
}

func newLogTail() *logTail { return &logTail{logs: map[string][]byte{}} }

func (l *logTail) add(ss *client.SolveStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, lg := range ss.Logs {
		k := lg.Vertex.String()
		b := append(l.logs[k], lg.Data...)
		if len(b) > maxLogTail {
			b = b[len(b)-maxLogTail:]
		}
		l.logs[k] = b
	}
}

// hashMismatch returns pip's hash-mismatch report from the logs of a failed
// solve as a *pylock.HashMismatchError, or nil.
func (l *logTail) hashMismatch(platform string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.logs {
		if ms := pylock.HashMismatches(string(b)); len(ms) > 0 {
			return &pylock.HashMismatchError{Platform: platform, Mismatches: ms}
		}
	}
	return nil
}
