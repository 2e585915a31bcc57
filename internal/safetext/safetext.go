package safetext

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Sanitize returns s with every control character except newline and tab
// replaced by a visible escape (\x1b, \r, \u202e, ...) and every invalid
// UTF-8 byte by U+FFFD. Printable text, including non-ASCII letters, is kept.
func Sanitize(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clean reports whether s needs no change (the common case, without
// allocating).
func clean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unsafeRune(r) {
			return false
		}
		i += size
	}
	return true
}

// unsafeRune reports C1 controls (U+0080-U+009F: U+009B is a one-character
// CSI on some terminals) and the bidirectional formatting characters that
// can make text display in another order than it is read.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x200e || r == 0x200f || r == 0x061c:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Redacted replaces a URL's userinfo.
const Redacted = "redacted"

// URL returns raw with its userinfo (user, password or token before "@")
// replaced by "redacted"; a string that is not an absolute URL with
// userinfo is returned unchanged except for what Redact removes.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return Redact(raw)
	}
	u.User = url.User(Redacted)
	return u.String()
}

// userinfoRE matches the userinfo of a URL inside free text: a scheme, "//",
// then anything but "/", "@", "?", "#" and white space up to an "@".
var userinfoRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@?#\s"'<>]*@`)

// Redact returns s with the userinfo of every URL in it replaced by
// "redacted" (for error messages and log lines that embed URLs).
func Redact(s string) string {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s
	}
	return userinfoRE.ReplaceAllString(s, "${1}"+Redacted+"@")
}

// Text is Redact and Sanitize: what any message that may carry upstream text
// or a URL goes through before it is printed.
func Text(s string) string { return Sanitize(Redact(s)) }

// Handler returns a slog.Handler that passes every record to h with its
// message and string attribute values (and error values, as their text)
// through Text.
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ h slog.Handler }

func (s handler) Enabled(ctx context.Context, l slog.Level) bool { return s.h.Enabled(ctx, l) }

func (s handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(cleanAttr(a))
		return true
	})
	return s.h.Handle(ctx, out)
}

func (s handler) WithAttrs(as []slog.Attr) slog.Handler {
	c := make([]slog.Attr, len(as))
	for i, a := range as {
		c[i] = cleanAttr(a)
	}
	return handler{s.h.WithAttrs(c)}
}

func (s handler) WithGroup(name string) slog.Handler { return handler{s.h.WithGroup(name)} }

func cleanAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Text(v.String()))
	case slog.KindGroup:
		g := v.Group()
		c := make([]any, len(g))
		for i, x := range g {
			c[i] = cleanAttr(x)
		}
		return slog.Group(a.Key, c...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, Text(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, Text(x.String()))
		}
	}
	return a
}

// Writer returns a writer that passes everything written through Text
// before writing it to w: for warnings and messages that may carry upstream
// text or URLs (never for a terminal display that uses escape sequences on
// purpose, such as BuildKit's progress).
func Writer(w io.Writer) io.Writer { return textWriter{w} }

type textWriter struct{ w io.Writer }

func (t textWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
