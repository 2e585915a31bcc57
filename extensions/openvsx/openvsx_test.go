package openvsx

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
)

func fakeRegistry(t *testing.T, vsixBody []byte, publishedDigest string) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	meta := func(v, tp string, pre bool) string {
		return fmt.Sprintf(`{"namespace":"ms-python","name":"debugpy","version":%q,"targetPlatform":%q,
 "preRelease":%v,"engines":{"vscode":"^1.92.0"},
 "dependencies":[{"url":"%[4]s/api/ms-python/python","namespace":"ms-python","extension":"python"}],
 "bundledExtensions":[],
 "downloads":{"universal":"%[4]s/api/ms-python/debugpy/universal/%[1]s/file/ms-python.debugpy-%[1]s.vsix",
              "linux-x64":"%[4]s/api/ms-python/debugpy/linux-x64/%[1]s/file/ms-python.debugpy-%[1]s@linux-x64.vsix"},
 "files":{"download":"%[4]s/api/ms-python/debugpy/%[2]s/%[1]s/file/x.vsix","sha256":"%[4]s/api/ms-python/debugpy/%[2]s/%[1]s/file/x.sha256"}}`,
			v, tp, pre, srv.URL)
	}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/api/ms-python/debugpy/versions":
			off := r.URL.Query().Get("offset")
			if off == "0" {
				io.WriteString(w, `{"offset":0,"totalSize":3,"versions":{"2025.9.0":"u","2025.10.0":"u"}}`)
			} else {
				io.WriteString(w, `{"offset":2,"totalSize":3,"versions":{"2025.8.0":"u"}}`)
			}
		case p == "/api/ms-python/debugpy/2025.10.0", p == "/api/ms-python/debugpy/2025.8.0":
			io.WriteString(w, meta(strings.Split(p, "/")[4], "universal", false))
		case p == "/api/ms-python/debugpy/2025.9.0":
			io.WriteString(w, meta("2025.9.0", "linux-x64", true))
		case p == "/api/ms-python/debugpy/linux-x64/2025.10.0":
			io.WriteString(w, meta("2025.10.0", "linux-x64", false))
		case strings.HasSuffix(p, ".sha256"):
			io.WriteString(w, publishedDigest+"  x.vsix\n")
		case strings.HasSuffix(p, ".vsix"):
			w.Write(vsixBody)
		default:
			w.WriteHeader(404)
			io.WriteString(w, `{"error":"Extension not found"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestVersions(t *testing.T) {
	srv := fakeRegistry(t, nil, "")
	got, err := New(WithBaseURL(srv.URL)).Versions(context.Background(), "ms-python.debugpy")
	if err != nil {
		t.Fatal(err)
	}
	files := func(v string) map[string]catalog.File {
		return map[string]catalog.File{
			"universal": {URL: srv.URL + "/api/ms-python/debugpy/universal/" + v + "/file/ms-python.debugpy-" + v + ".vsix"},
			"linux-x64": {URL: srv.URL + "/api/ms-python/debugpy/linux-x64/" + v + "/file/ms-python.debugpy-" + v + "@linux-x64.vsix"},
		}
	}
	dep := []string{"ms-python.python"}
	want := []catalog.ExtensionVersion{
		{Version: "2025.10.0", Engine: "^1.92.0", Dependencies: dep, Files: files("2025.10.0")},
		{Version: "2025.9.0", PreRelease: true, Engine: "^1.92.0", Dependencies: dep, Files: files("2025.9.0")},
		{Version: "2025.8.0", Engine: "^1.92.0", Dependencies: dep, Files: files("2025.8.0")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Versions (-want +got):\n%s", diff)
	}
	if _, err := New(WithBaseURL(srv.URL)).Versions(context.Background(), "ms-python.missing"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing extension: err = %v, want a 404", err)
	}
}

func TestDownloadChecksPublishedDigest(t *testing.T) {
	body := []byte("PK\x03\x04 pretend zip")
	sum := sha256.Sum256(body)
	good := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name, digest string
		wantErr      bool
	}{
		{"match", good, false},
		{"mismatch", strings.Repeat("0", 64), true},
		{"not a digest", "nope", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeRegistry(t, body, tc.digest)
			var buf bytes.Buffer
			o, err := New(WithBaseURL(srv.URL)).Download(context.Background(), "ms-python.debugpy", "2025.10.0", "linux-x64", &buf)
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.SHA256 != good || !bytes.Equal(buf.Bytes(), body) {
				t.Errorf("origin %+v, body %q", o, buf.Bytes())
			}
		})
	}
}
