package options

import (
	"io"

	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
)

// WarnPrefix starts every line imagectl prints on stderr for the user (an
// error, a warning, a notice), as "imagectl: warning: ...".
const WarnPrefix = base.WarnPrefix

// NewWarnings is the writer Globals.Warnings returns, over w: each line
// prefixed "imagectl: ", upstream text escaped.
func NewWarnings(w io.Writer) io.Writer { return base.NewWarnings(w) }
