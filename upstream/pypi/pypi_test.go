package pypi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseWheel(t *testing.T) {
	tests := []struct {
		file string
		want Wheel
		ok   bool
	}{
		{"ray-2.46.0-cp312-cp312-manylinux2014_x86_64.whl", Wheel{[]string{"linux/amd64"}, []string{"3.12"}}, true},
		{"ray-2.46.0-cp39-cp39-manylinux2014_aarch64.whl", Wheel{[]string{"linux/arm64"}, []string{"3.9"}}, true},
		{"debugpy-1.8.14-cp312-cp312-manylinux_2_5_x86_64.manylinux1_x86_64.manylinux_2_17_x86_64.manylinux2014_x86_64.whl", Wheel{[]string{"linux/amd64"}, []string{"3.12"}}, true},
		{"debugpy-1.8.14-py2.py3-none-any.whl", Wheel{[]string{"any"}, []string{"any"}}, true},
		{"x-1.0-py3-none-any.whl", Wheel{[]string{"any"}, []string{"any"}}, true},
		{"x-1.0-cp311-abi3-manylinux_2_28_aarch64.whl", Wheel{[]string{"linux/arm64"}, []string{"3.11", "3.12", "3.13", "3.14"}}, true},
		{"x-1.0-1build-cp310-cp310-manylinux2014_x86_64.whl", Wheel{[]string{"linux/amd64"}, []string{"3.10"}}, true},
		// Every manylinux tag of the base's glibc (2.39) counts, none newer.
		{"x-1.0-cp312-cp312-manylinux_2_31_x86_64.whl", Wheel{[]string{"linux/amd64"}, []string{"3.12"}}, true},
		{"x-1.0-cp312-cp312-manylinux_2_24_aarch64.whl", Wheel{[]string{"linux/arm64"}, []string{"3.12"}}, true},
		{"x-1.0-cp312-cp312-manylinux_2_39_aarch64.whl", Wheel{[]string{"linux/arm64"}, []string{"3.12"}}, true},
		{"x-1.0-cp312-cp312-manylinux_2_12_x86_64.manylinux2010_x86_64.whl", Wheel{[]string{"linux/amd64"}, []string{"3.12"}}, true},
		{"x-1.0-cp312-cp312-manylinux_2_40_x86_64.whl", Wheel{}, false},
		{"x-1.0-cp312-cp312-manylinux_2_40_aarch64.whl", Wheel{}, false},
		{"x-1.0-cp312-cp312-manylinux_3_0_x86_64.whl", Wheel{}, false},
		{"x-1.0-cp312-cp312-manylinux_2_40_x86_64.manylinux_2_28_aarch64.whl", Wheel{[]string{"linux/arm64"}, []string{"3.12"}}, true},
		// aarch64 has no manylinux policy before 2014 (glibc 2.17).
		{"x-1.0-cp312-cp312-manylinux_2_12_aarch64.whl", Wheel{}, false},
		// pip, given --platform manylinux tags, never takes these.
		{"x-1.0-cp312-cp312-linux_x86_64.whl", Wheel{}, false},
		{"x-1.0-cp312-cp312-manylinux_2_31_armv7l.whl", Wheel{}, false},
		{"ray-2.46.0-cp312-cp312-macosx_12_0_arm64.whl", Wheel{}, false},
		{"ray-2.46.0-cp312-cp312-win_amd64.whl", Wheel{}, false},
		{"x-1.0-cp312-cp312-musllinux_1_1_x86_64.whl", Wheel{}, false},
		{"x-1.0-cp313-cp313t-manylinux2014_x86_64.whl", Wheel{}, false},
		{"x-1.0-pp310-pypy310_pp73-manylinux2014_x86_64.whl", Wheel{}, false},
		{"x-1.0-py2-none-any.whl", Wheel{}, false},
		{"x-1.0.tar.gz", Wheel{}, false},
		{"x-1.0-cp312.whl", Wheel{}, false},
	}
	for _, tc := range tests {
		got, ok := ParseWheel(tc.file)
		if ok != tc.ok {
			t.Errorf("ParseWheel(%s) ok = %v, want %v", tc.file, ok, tc.ok)
			continue
		}
		if diff := cmp.Diff(tc.want, got); tc.ok && diff != "" {
			t.Errorf("ParseWheel(%s) (-want +got):\n%s", tc.file, diff)
		}
	}
}

func TestReleasesErrors(t *testing.T) {
	const ct = "application/vnd.pypi.simple.v1+json"
	page := func(meta, rest string) string {
		return `{"meta": ` + meta + `, "name": "ray"` + rest + `}`
	}
	const files = `, "files": [{"filename": "ray-2.46.0-cp312-cp312-manylinux2014_x86_64.whl", "url": "https://files.example/ray.whl", "hashes": {"sha256": "00"}, "requires-python": null, "yanked": false}]`
	tests := []struct {
		name, contentType, body string
		status                  int
		wantErr                 string
	}{
		{"404", "text/plain", "404 Not Found", 404, "/simple/ray/: HTTP 404"},
		{"HTML page", "text/html", "<!DOCTYPE html><html></html>", 200, `answered Content-Type "text/html", want application/vnd.pypi.simple.v1+json`},
		{"JSON API shape", "application/json", `{"info": {}, "releases": {}}`, 200, `answered Content-Type "application/json"`},
		{"major version 2", ct, page(`{"api-version": "2.0"}`, `, "versions": ["2.46.0"]`+files), 200, "meta.api-version 2.0: want major version 1"},
		{"version 1.0 has no versions", ct, page(`{"api-version": "1.0"}`, files), 200, "meta.api-version 1.0: want 1.1 or later (PEP 700 versions)"},
		{"no api-version", ct, page(`{}`, `, "versions": ["2.46.0"]`+files), 200, `meta.api-version "" is not MAJOR.MINOR`},
		{"no versions", ct, page(`{"api-version": "1.4"}`, files), 200, `no "versions" list (PEP 700)`},
		{"no files", ct, page(`{"api-version": "1.4"}`, `, "versions": ["2.46.0"]`), 200, `no "files" list (PEP 691)`},
		{"yanked neither bool nor reason", ct, page(`{"api-version": "1.4"}`, `, "versions": ["2.46.0"], "files": [{"filename": "ray-2.46.0-py3-none-any.whl", "yanked": 3}]`), 200, "file ray-2.46.0-py3-none-any.whl: yanked is 3"},
		{"bad json", ct, `{"files": [}`, 200, "decoding"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if got := r.Header.Get("Accept"); got != ct {
					t.Errorf("Accept %q, want %q", got, ct)
				}
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			_, err := New(WithBaseURL(srv.URL+"/")).Releases(context.Background(), "ray")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want containing %q", err, tc.wantErr)
			}
		})
	}
}

// The versions of files are read from their names and matched to PEP 700's
// versions, whatever their spelling.
func TestFileVersion(t *testing.T) {
	versions := []string{"1.0", "1.0.1", "2.0rc1", "3.0.0"}
	tests := []struct {
		file, want string
		ok         bool
	}{
		{"ray-1.0-py3-none-any.whl", "1.0", true},
		{"ray-1.0.1-cp312-cp312-manylinux2014_x86_64.whl", "1.0.1", true},
		{"ray-3-py3-none-any.whl", "3.0.0", true},
		{"ray-2.0rc1-1build-py3-none-any.whl", "2.0rc1", true},
		{"ray-1.0.1.tar.gz", "1.0.1", true},
		{"ray-1.0.zip", "1.0", true},
		{"ray-1.0-py3.9.egg", "1.0", true},
		{"Ray-2.0rc1.tar.gz", "2.0rc1", true},
		{"other-1.0-py3-none-any.whl", "", false},
		{"ray-4.0-py3-none-any.whl", "", false},
		{"ray-4.0.tar.gz", "", false},
		{"ray-1.0.whl", "", false},
	}
	for _, tc := range tests {
		got, ok := fileVersion(tc.file, "ray", versions)
		if got != tc.want || ok != tc.ok {
			t.Errorf("fileVersion(%s) = %q, %v; want %q, %v", tc.file, got, ok, tc.want, tc.ok)
		}
	}
}
