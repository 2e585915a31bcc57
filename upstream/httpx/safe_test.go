package httpx

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
)

// Errors never carry a URL's userinfo, and the error body an upstream sends
// reaches the terminal with its control characters escaped.
func TestErrorsAreSafeToPrint(t *testing.T) {
	s, _ := server(t, func(_ int32, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte("\x1b]0;pwned\x07\x1b[2Jdenied"))
	})
	withUser := strings.Replace(s.URL, "http://", "http://alice:s3cret@", 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://alice:s3cret@" + l.Addr().String() + "/x"
	l.Close()
	for _, u := range []string{withUser + "/x", closed, "http://alice:s3cret@[::1/x"} {
		_, err := Get(context.Background(), New(WithRetries(0)), u, nil)
		if err == nil {
			t.Fatalf("GET %s succeeded", u)
		}
		msg := err.Error()
		if strings.Contains(msg, "s3cret") || strings.Contains(msg, "alice") {
			t.Errorf("error leaks the userinfo: %s", msg)
		}
		if strings.ContainsAny(msg, "\x1b\x07") {
			t.Errorf("error carries raw control characters: %q", msg)
		}
	}
	_, err = Get(context.Background(), New(WithRetries(0)), withUser+"/x", nil)
	if se, ok := err.(*StatusError); !ok || !strings.Contains(se.Body, `\x1b]0;pwned\x07`) || !strings.Contains(se.URL, "redacted@") {
		t.Errorf("err = %#v, want a *StatusError with the body escaped and the URL redacted", err)
	}
}
