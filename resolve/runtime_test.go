package resolve

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/imagespec"
)

func catRuntime(minor, version, release string, c byte) catalog.PythonRuntime {
	return catalog.PythonRuntime{Python: minor, Version: version, Repository: "astral-sh/python-build-standalone", Release: release, Flavor: "install_only",
		Files: map[string]catalog.RuntimeFile{
			"linux/amd64": {URL: "https://example.com/" + version + "-x86_64.tar.gz", SHA256: strings.Repeat(string(c), 64), Size: 7},
			"linux/arm64": {URL: "https://example.com/" + version + "-aarch64.tar.gz", SHA256: strings.Repeat(string(c+1), 64)},
		}}
}

// The set carries the catalog's runtime of the Python it resolves to, for
// matrix.yaml's release; without one it carries none and a note says to
// refresh.
func TestResolvePythonRuntime(t *testing.T) {
	for _, tc := range []struct {
		name     string
		req      Request
		runtimes []catalog.PythonRuntime
		extra    string
		want     *imagespec.PythonRuntime
		wantNote string
	}{
		{name: "the set's minor", req: ray46(), runtimes: []catalog.PythonRuntime{catRuntime("3.11", "3.11.13", "20250808", '1'), catRuntime("3.12", "3.12.11", "20250808", '3')},
			want: &imagespec.PythonRuntime{Version: "3.12.11", Release: "20250808", Files: map[string]imagespec.RuntimeFile{
				"linux/amd64": {URL: "https://example.com/3.12.11-x86_64.tar.gz", SHA256: strings.Repeat("3", 64)},
				"linux/arm64": {URL: "https://example.com/3.12.11-aarch64.tar.gz", SHA256: strings.Repeat("4", 64)},
			}}},
		{name: "a pinned older Python", req: Request{Ray: "2.46.0", Python: "3.11"}, runtimes: []catalog.PythonRuntime{catRuntime("3.11", "3.11.13", "20250808", '1'), catRuntime("3.12", "3.12.11", "20250808", '3')},
			want: &imagespec.PythonRuntime{Version: "3.11.13", Release: "20250808", Files: map[string]imagespec.RuntimeFile{
				"linux/amd64": {URL: "https://example.com/3.11.13-x86_64.tar.gz", SHA256: strings.Repeat("1", 64)},
				"linux/arm64": {URL: "https://example.com/3.11.13-aarch64.tar.gz", SHA256: strings.Repeat("2", 64)},
			}}},
		{name: "none recorded", req: ray46(), runtimes: []catalog.PythonRuntime{catRuntime("3.11", "3.11.13", "20250808", '1')},
			wantNote: "python runtime: the catalog records no python-build-standalone runtime of Python 3.12 for astral-sh/python-build-standalone release 20250808 or later (install_only); run imagectl matrix refresh"},
		{name: "recorded for another release", req: ray46(), runtimes: []catalog.PythonRuntime{catRuntime("3.12", "3.12.10", "20250610", '1')},
			wantNote: "it records astral-sh/python-build-standalone release 20250610 (install_only) (matrix.yaml build.standalone changed since); run imagectl matrix refresh"},
		{name: "a later release refresh locked", req: ray46(), runtimes: []catalog.PythonRuntime{catRuntime("3.12", "3.12.12", "20251014", '5')},
			want: &imagespec.PythonRuntime{Version: "3.12.12", Release: "20251014", Files: map[string]imagespec.RuntimeFile{
				"linux/amd64": {URL: "https://example.com/3.12.12-x86_64.tar.gz", SHA256: strings.Repeat("5", 64)},
				"linux/arm64": {URL: "https://example.com/3.12.12-aarch64.tar.gz", SHA256: strings.Repeat("6", 64)},
			}}},
		{name: "base runtime", req: ray46(), runtimes: []catalog.PythonRuntime{catRuntime("3.12", "3.12.11", "20250808", '3')}, extra: "build: {pythonRuntime: base}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat := testCatalog()
			cat.PythonRuntimes = tc.runtimes
			set, ex, err := Resolve(mustMatrix(t, testMatrix+tc.extra), cat, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, set.PythonRuntime); diff != "" {
				t.Errorf("pythonRuntime (-want +got):\n%s", diff)
			}
			if tc.want != nil && !strings.Contains(ex.String(), "python runtime "+tc.want.Version+" chosen: python-build-standalone install_only of astral-sh/python-build-standalone release "+tc.want.Release) {
				t.Errorf("explanation lacks the runtime decision:\n%s", ex)
			}
			if tc.wantNote != "" && !strings.Contains(ex.String(), tc.wantNote) {
				t.Errorf("explanation lacks %q:\n%s", tc.wantNote, ex)
			}
			if tc.wantNote == "" && strings.Contains(ex.String(), "python runtime:") {
				t.Errorf("unexpected runtime note:\n%s", ex)
			}
		})
	}
}
