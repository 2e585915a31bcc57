package matrix

import (
	"fmt"
	"strings"
)

// Error is a matrix.yaml error at a line and field path. Its text is
// "FILE:LINE: PATH: MSG"; the line and the path are left out when unknown.
type Error struct {
	File string
	Line int // 0 when unknown
	Path string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Path != "" {
		b.WriteString(": ")
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}
