package vsix

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/safetext"
	"github.com/imagectl/imagectl/upstream/httpx"
)

// Universal is the target platform of a build that runs everywhere.
const Universal = imagespec.VSCodeUniversal

// DefaultMaxDownloadBytes bounds one decompressed VSIX download (512 MiB;
// ms-python.python is a few tens of MB).
const DefaultMaxDownloadBytes = 512 << 20

// Origin says where a downloaded VSIX came from.
type Origin struct {
	URL string
	// SHA256 is the digest the source published for the file, when it
	// publishes one (Open VSX does, the Marketplace does not).
	SHA256 string
	Size   int64
}

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zipMagic  = []byte("PK\x03\x04")
)

// ErrTooLarge is returned when a body exceeds its limit.
var ErrTooLarge = errors.New("body exceeds the size limit")

// MaybeGunzip returns r decompressed when it starts with the gzip magic bytes
// (1f 8b), whatever the headers said, and r unchanged otherwise. A
// decompressed stream longer than limit fails with ErrTooLarge.
func MaybeGunzip(r io.Reader, limit int64) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if !bytes.Equal(head, gzipMagic) {
		return br, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("gzip body: %w", err)
	}
	return &limitedReader{r: zr, n: limit}, nil
}

// limitedReader fails (rather than truncating silently) past n bytes.
type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		// Hand on only the bytes within the limit: the one read past it
		// is how the excess was detected, not data to write.
		return n + int(l.n), ErrTooLarge
	}
	return n, err
}

// BodyError is a failure to read the body of a 200 answer: the connection
// was reset, the body ended before its Content-Length, or no data came for
// the HTTP client's idle timeout. The request itself succeeded, so this is
// the one download failure a caller retries with a new request (the HTTP
// client already retried everything that failed earlier).
type BodyError struct{ Err error }

func (e *BodyError) Error() string { return e.Err.Error() }
func (e *BodyError) Unwrap() error { return e.Err }

// bodyReader marks every read error of a response body (but io.EOF) as a
// *BodyError.
type bodyReader struct{ r io.Reader }

func (b bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = &BodyError{err}
	}
	return n, err
}

// Download GETs url and writes the VSIX to w: a gzip body (by magic bytes) is
// decompressed, the result must start with the zip magic PK\x03\x04, an HTML
// page served with status 200 is rejected, and more than maxBytes fails. It
// returns the number of bytes written. Errors name the URL (without its
// userinfo). A body cut short (connection reset, Content-Length not met, no
// data for the idle timeout) is a *BodyError; the caller decides whether to
// retry.
func Download(ctx context.Context, hc *http.Client, url string, w io.Writer, maxBytes int64) (int64, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxDownloadBytes
	}
	resp, err := httpx.Get(ctx, hc, url, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	url = safetext.URL(url) // for messages
	if resp.ContentLength > maxBytes {
		return 0, fmt.Errorf("GET %s: Content-Length %d exceeds the limit of %d bytes", url, resp.ContentLength, maxBytes)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/html" {
		return 0, fmt.Errorf("GET %s: got an HTML page (Content-Type %s), expected a VSIX", url, safetext.Sanitize(resp.Header.Get("Content-Type")))
	}
	body, err := MaybeGunzip(&limitedReader{r: bodyReader{resp.Body}, n: maxBytes}, maxBytes)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	br := bufio.NewReader(body)
	head, err := br.Peek(len(zipMagic))
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("GET %s: reading body: %w", url, err)
	}
	if !bytes.Equal(head, zipMagic) {
		if t := bytes.TrimSpace(head); len(t) > 0 && t[0] == '<' {
			return 0, fmt.Errorf("GET %s: got an HTML page, expected a VSIX (zip)", url)
		}
		return 0, fmt.Errorf("GET %s: body is not a zip (starts with %q), expected a VSIX", url, head)
	}
	n, err := io.Copy(w, br)
	if err != nil {
		return n, fmt.Errorf("GET %s: reading body after %d bytes: %w", url, n, err)
	}
	return n, nil
}
