package build

import (
	"fmt"
	"strings"
	"sync"

	"github.com/moby/buildkit/client"

	"github.com/imagectl/imagectl/upstream/pip"
)

// HashMismatchError is a locked wheel whose sha256 is not the lock's: the
// index served other bytes under the locked name and version since
// imagectl matrix refresh recorded it. Its message is one line naming the
// distribution, the platform and both hashes.
type HashMismatchError struct {
	Platform   string
	Mismatches []pip.Mismatch
}

func (e *HashMismatchError) Error() string {
	parts := make([]string, 0, len(e.Mismatches))
	for _, m := range e.Mismatches {
		name, version, _ := strings.Cut(m.Requirement, "==")
		parts = append(parts, fmt.Sprintf("%s %s on %s: locked sha256 %s, the index served sha256 %s (%s)",
			name, version, e.Platform, strings.Join(m.Expected, " or "), m.Got, m.URL))
	}
	return "python lock: wheel hash mismatch: " + strings.Join(parts, "; ")
}

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
// solve as an error, or nil.
func (l *logTail) hashMismatch(platform string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.logs {
		if ms := pip.HashMismatches(string(b)); len(ms) > 0 {
			return &HashMismatchError{Platform: platform, Mismatches: ms}
		}
	}
	return nil
}
