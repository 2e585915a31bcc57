package options

import (
	"bytes"
	"io"
	"sync"

	"github.com/imagectl/imagectl/internal/safetext"
)

// WarnPrefix starts every line imagectl prints on stderr for the user (an
// error, a warning, a notice), as "imagectl: warning: ...".
const WarnPrefix = "imagectl: "

// linePrefixer writes to w with prefix before every line.
type linePrefixer struct {
	mu     sync.Mutex
	w      io.Writer
	prefix []byte
	mid    bool // within a line
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	var out bytes.Buffer
	for len(b) > 0 {
		if !p.mid {
			out.Write(p.prefix)
			p.mid = true
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out.Write(b)
			break
		}
		out.Write(b[:i+1])
		b = b[i+1:]
		p.mid = false
	}
	if _, err := p.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return n, nil
}

// Warnings is where the libraries write their warnings ("warning: ...")
// and notices: stderr, each line prefixed "imagectl: " like every other
// line imagectl prints there, upstream text escaped.
func (g *Globals) Warnings() io.Writer {
	return NewWarnings(g.Stderr)
}

// NewWarnings is the writer Warnings returns, over w.
func NewWarnings(w io.Writer) io.Writer {
	return &linePrefixer{w: safetext.Writer(w), prefix: []byte(WarnPrefix)}
}
