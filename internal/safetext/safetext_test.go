package safetext_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/imagectl/imagectl/internal/safetext"
)

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, ünïcödé, 日本語", "plain text, ünïcödé, 日本語"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"\x1b]0;pwned\x07title", `\x1b]0;pwned\x07title`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"over\rwrite", `over\rwrite`},
		{"nul\x00del\x7f", `nul\x00del\x7f`},
		{"c1 \u009b31m csi", `c1 \u009b31m csi`},
		{"bidi \u202eevil\u202c", `bidi \u202eevil\u202c`},
		{"isolate \u2066x\u2069", `isolate \u2066x\u2069`},
		{"bad utf-8 \xff\xfe", "bad utf-8 \ufffd\ufffd"},
	} {
		if got := safetext.Sanitize(tc.in); got != tc.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := safetext.Sanitize(tc.want); strings.ContainsAny(got, "\x1b\r\x00\x07\u009b\u202e") {
			t.Errorf("Sanitize(%q) still holds a control character: %q", tc.want, got)
		}
	}
}

func TestURLAndRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://user:pass@host:8080/x?y=1", "http://redacted@host:8080/x?y=1"},
		{"https://ghp_token@api.github.com/repos", "https://redacted@api.github.com/repos"},
		{"https://marketplace.visualstudio.com/_apis", "https://marketplace.visualstudio.com/_apis"},
		{"not a url", "not a url"},
	} {
		if got := safetext.URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	msg := `GET http://user:s3cret@127.0.0.1:1/_apis/x: HTTP 500; retry "https://a:b@c/d" and mail bob@example.com`
	want := `GET http://redacted@127.0.0.1:1/_apis/x: HTTP 500; retry "https://redacted@c/d" and mail bob@example.com`
	if got := safetext.Redact(msg); got != want {
		t.Errorf("Redact:\n got %s\nwant %s", got, want)
	}
}

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	u, _ := url.Parse("http://user:s3cret@host/p")
	l := slog.New(safetext.Handler(slog.NewTextHandler(&buf, nil))).With("base", "http://a:s3cret@b/")
	l.Info("fetched \x1b[2J from http://x:s3cret@y/", "url", u, "err", errors.New("GET http://x:s3cret@y/: \x1b]0;t\x07"), "n", 3,
		slog.Group("g", "u", "https://tok:s3cret@z/"))
	out := buf.String()
	if strings.Contains(out, "s3cret") || strings.Contains(out, "\x1b") {
		t.Errorf("log line leaks a secret or an escape: %s", out)
	}
	for _, want := range []string{"redacted@host/p", "redacted@y/", "redacted@b/", "redacted@z/", "n=3", `\\x1b[2J`} {
		if !strings.Contains(out, want) {
			t.Errorf("log line %s lacks %q", out, want)
		}
	}
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := safetext.Writer(&buf)
	n, err := w.Write([]byte("warning: http://u:s3cret@h/ said \x1b]0;x\x07\n"))
	if err != nil || n != len("warning: http://u:s3cret@h/ said \x1b]0;x\x07\n") {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if got, want := buf.String(), "warning: http://redacted@h/ said \\x1b]0;x\\x07\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
