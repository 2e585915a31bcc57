package base

import (
	"bytes"
	"io"
	"log/slog"
	"sync"

	"github.com/spf13/pflag"

	"github.com/imagectl/imagectl/internal/safetext"
)

// Streams are where a command writes (stdout, stderr) and whether it logs
// its progress (--verbose): the part of options.Globals a verb that reads
// no matrix.yaml or catalog needs.
type Streams struct {
	Stdout  io.Writer
	Stderr  io.Writer
	Verbose bool
}

// AddFlags registers -v/--verbose; the root command passes its persistent
// flags.
func (s *Streams) AddFlags(fl *pflag.FlagSet) {
	fl.BoolVarP(&s.Verbose, "verbose", "v", false, "log progress and retries to stderr")
}

// Logger logs to stderr at level through safetext.Handler (URLs redacted,
// upstream text escaped), every line starting "imagectl: " like the rest of
// stderr, with no timestamp. Every verb's log (-v) is one of these.
func (s *Streams) Logger(level slog.Level) *slog.Logger {
	noTime := func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	w := &linePrefixer{w: s.Stderr, prefix: []byte(WarnPrefix)}
	return slog.New(safetext.Handler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: noTime})))
}

// Warnings is where the libraries write their warnings ("warning: ...")
// and notices: stderr, each line prefixed "imagectl: " like every other
// line imagectl prints there, upstream text escaped.
func (s *Streams) Warnings() io.Writer {
	return NewWarnings(s.Stderr)
}

// NewWarnings is the writer Warnings returns, over w.
func NewWarnings(w io.Writer) io.Writer {
	return &linePrefixer{w: safetext.Writer(w), prefix: []byte(WarnPrefix)}
}

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
