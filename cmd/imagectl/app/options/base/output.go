package base

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// OutputOptions are -o/--output of a verb that prints results.
type OutputOptions struct {
	Format  string
	Formats []string // the first is the default
}

var _ Options = (*OutputOptions)(nil)

// NewOutputOptions takes the formats a verb prints, its default first.
func NewOutputOptions(formats ...string) OutputOptions {
	return OutputOptions{Formats: formats}
}

func (o *OutputOptions) AddFlags(fl *pflag.FlagSet) {
	fl.StringVarP(&o.Format, "output", "o", o.Formats[0], "output format: "+OrList(o.Formats))
}

func (o *OutputOptions) Validate() error { return CheckOutput(o.Format, o.Formats...) }

// JSON reports whether the output is JSON.
func (o *OutputOptions) JSON() bool { return o.Format == "json" }

// CheckOutput refuses an -o value not among allowed (exit 2).
func CheckOutput(v string, allowed ...string) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	if v == "table" && slices.Contains(allowed, "text") {
		return Usagef("--output %q: want %s (table is now text)", v, OrList(allowed))
	}
	return Usagef("--output %q: want %s", v, OrList(allowed))
}

// OrList is "a", "a or b", "a, b or c".
func OrList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
