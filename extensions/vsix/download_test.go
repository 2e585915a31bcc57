package vsix_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/upstream/httpx"
)

func TestMaybeGunzip(t *testing.T) {
	zipBody := readFixture(t, universalFixture)
	tests := []struct {
		name    string
		in      []byte
		limit   int64
		want    []byte
		wantErr error  // checked with errors.Is
		errText string // checked with strings.Contains
	}{
		{name: "zip passes through", in: zipBody, limit: 1 << 20, want: zipBody},
		{name: "gzip is decompressed", in: gz(t, zipBody), limit: 1 << 20, want: zipBody},
		{name: "gzip of exactly the limit", in: gz(t, zipBody), limit: int64(len(zipBody)), want: zipBody},
		{name: "gzip one byte over the limit", in: gz(t, zipBody), limit: int64(len(zipBody)) - 1, wantErr: vsix.ErrTooLarge},
		{name: "gzip bomb", in: gz(t, make([]byte, 8<<20)), limit: 1 << 20, wantErr: vsix.ErrTooLarge},
		{name: "empty", in: nil, limit: 10, want: []byte{}},
		{name: "one byte", in: []byte("P"), limit: 10, want: []byte("P")},
		{name: "gzip magic then garbage", in: []byte{0x1f, 0x8b, 'x', 'y'}, limit: 10, errText: "gzip body"},
		{name: "html passes through (rejected later by Download)", in: []byte("<html>"), limit: 10, want: []byte("<html>")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := vsix.MaybeGunzip(bytes.NewReader(tc.in), tc.limit)
			var got []byte
			if err == nil {
				got, err = io.ReadAll(r)
			}
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if int64(len(got)) > tc.limit {
					t.Errorf("read %d bytes before failing, limit %d", len(got), tc.limit)
				}
				return
			case tc.errText != "":
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.errText)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("got %d bytes %.16q, want %d bytes %.16q", len(got), got, len(tc.want), tc.want)
			}
		})
	}
}

// body is what the fake server answers.
type body struct {
	status      int
	contentType string
	encoding    string // Content-Encoding header
	data        []byte
	// declare, when > len(data), is sent as Content-Length and the body is
	// cut short (the connection closes).
	declare int
	chunked bool // no Content-Length
}

func TestDownload(t *testing.T) {
	zipBody := readFixture(t, x64Fixture)
	bomb := gz(t, append([]byte("PK\x03\x04"), make([]byte, 16<<20)...)) // 16 MiB of zeros behind a zip magic
	const limit = 1 << 20
	tests := []struct {
		name string
		body body
		max  int64
		// want is the body expected in w; when nil an error is expected
		// containing every wantErr string (the URL is always checked).
		want    []byte
		wantErr []string
		wantIs  error
	}{
		{name: "zip", body: body{data: zipBody}, want: zipBody},
		{name: "zip chunked", body: body{data: zipBody, chunked: true}, want: zipBody},
		{name: "gzip without a Content-Encoding header", body: body{data: gz(t, zipBody), contentType: "application/octet-stream"}, want: zipBody},
		{name: "gzip with Content-Encoding gzip", body: body{data: gz(t, zipBody), encoding: "gzip"}, want: zipBody},
		{name: "gzip labelled as vsix", body: body{data: gz(t, zipBody), contentType: "application/vsix; api-version=7.2-preview.1"}, want: zipBody},
		{name: "exactly the limit", body: body{data: zipBody}, max: int64(len(zipBody)), want: zipBody},
		{name: "html page with 200", body: body{data: []byte("<!DOCTYPE html><html>sign in</html>"), contentType: "text/html; charset=utf-8"}, wantErr: []string{"HTML page"}},
		{name: "html page with 200, leading blank lines", body: body{data: []byte("\n\n\n\n<!DOCTYPE html><html>sign in</html>"), contentType: "text/html"}, wantErr: []string{"HTML page (Content-Type text/html)"}},
		{name: "html body labelled octet-stream", body: body{data: []byte("<html><body>captive portal</body></html>"), contentType: "application/octet-stream"}, wantErr: []string{"HTML page"}},
		{name: "gzipped html", body: body{data: gz(t, []byte("<html>oops</html>")), contentType: "application/octet-stream"}, wantErr: []string{"HTML page"}},
		{name: "empty body", body: body{data: nil, contentType: "application/octet-stream"}, wantErr: []string{"not a zip"}},
		{name: "json error body", body: body{data: []byte(`{"message":"not found"}`), contentType: "application/octet-stream"}, wantErr: []string{"not a zip", `"{\"me"`}},
		{name: "gzip bomb without header", body: body{data: bomb, contentType: "application/octet-stream"}, max: limit, wantIs: vsix.ErrTooLarge},
		{name: "gzip bomb with Content-Encoding gzip", body: body{data: bomb, encoding: "gzip"}, max: limit, wantIs: vsix.ErrTooLarge},
		{name: "oversize with Content-Length", body: body{data: zipBody}, max: int64(len(zipBody)) - 1, wantErr: []string{"Content-Length " + strconv.Itoa(len(zipBody)) + " exceeds the limit"}},
		{name: "oversize chunked", body: body{data: zipBody, chunked: true}, max: int64(len(zipBody)) - 1, wantIs: vsix.ErrTooLarge},
		{name: "truncated body", body: body{data: zipBody[:len(zipBody)/2], declare: len(zipBody)}, wantErr: []string{"reading body after"}},
		{name: "404", body: body{status: http.StatusNotFound, data: []byte("no such file")}, wantErr: []string{"HTTP 404"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b := tc.body
				if b.contentType != "" {
					w.Header().Set("Content-Type", b.contentType)
				}
				if b.encoding != "" {
					w.Header().Set("Content-Encoding", b.encoding)
				}
				switch {
				case b.declare > 0:
					w.Header().Set("Content-Length", strconv.Itoa(b.declare))
				case !b.chunked:
					w.Header().Set("Content-Length", strconv.Itoa(len(b.data)))
				}
				if b.status != 0 {
					w.WriteHeader(b.status)
				}
				w.Write(b.data)
				if b.chunked {
					w.(http.Flusher).Flush()
				}
			}))
			defer srv.Close()
			url := srv.URL + "/files/ms-python.debugpy-2025.10.0@linux-x64.vsix"
			hc := httpx.New(httpx.WithRetries(0), httpx.WithTimeout(10*time.Second))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var w bytes.Buffer
			n, err := vsix.Download(ctx, hc, url, &w, tc.max)
			max := tc.max
			if max == 0 {
				max = vsix.DefaultMaxDownloadBytes
			}
			if int64(w.Len()) > max || n != int64(w.Len()) {
				t.Errorf("wrote %d bytes (reported %d), limit %d", w.Len(), n, max)
			}
			if tc.want != nil {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, w.Bytes()); diff != "" {
					t.Errorf("body differs (-want +got):\n%.2000s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; wrote %d bytes", n)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("err = %v, want errors.Is %v", err, tc.wantIs)
			}
			for _, s := range append(tc.wantErr, url) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %v, want it to contain %q", err, s)
				}
			}
		})
	}
}
