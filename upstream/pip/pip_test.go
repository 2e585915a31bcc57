package pip

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/imagectl/imagectl/imagespec"
	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/pylock"
	"github.com/imagectl/imagectl/upstream/httpx"
	"github.com/imagectl/imagectl/upstream/pypi/pypitest"
)

const (
	sumA = "3f7f57af3fd185e91940526ce2c0a3d8dc795e702a2ba4f87467397c85d7a96e"
	sumB = "3d1f73958d1bc899c07cec7260c1a1c28f3c6039ad1e828edc9c2466306c7851"
)

func TestParseReport(t *testing.T) {
	for _, tc := range []struct {
		name    string
		report  string
		want    []imagespec.PythonDist
		missing []int
		err     string
	}{
		{
			name: "hashes and legacy hash",
			report: `{"version":"1","install":[
 {"download_info":{"url":"https://files.example/packages/aa/debugpy-1.8.14-py2.py3-none-any.whl","archive_info":{"hash":"sha256=` + sumA + `","hashes":{"sha256":"` + sumA + `"}}},"metadata":{"name":"debugpy","version":"1.8.14"}},
 {"download_info":{"url":"https://files.example/click-8.1.8-py3-none-any.whl#sha256=` + sumB + `","archive_info":{"hash":"sha256=` + sumB + `"}},"metadata":{"name":"click","version":"8.1.8"}}]}`,
			want: []imagespec.PythonDist{
				{Name: "debugpy", Version: "1.8.14", Filename: "debugpy-1.8.14-py2.py3-none-any.whl", URL: "https://files.example/packages/aa/debugpy-1.8.14-py2.py3-none-any.whl", SHA256: sumA},
				{Name: "click", Version: "8.1.8", Filename: "click-8.1.8-py3-none-any.whl", URL: "https://files.example/click-8.1.8-py3-none-any.whl", SHA256: sumB},
			},
		},
		{
			name:    "no hash from the index",
			report:  `{"version":"1","install":[{"download_info":{"url":"http://idx/x/PyYAML-6.0-cp312-cp312-manylinux2014_x86_64.whl","archive_info":{}},"metadata":{"name":"PyYAML","version":"6.0"}}]}`,
			want:    []imagespec.PythonDist{{Name: "PyYAML", Version: "6.0", Filename: "PyYAML-6.0-cp312-cp312-manylinux2014_x86_64.whl", URL: "http://idx/x/PyYAML-6.0-cp312-cp312-manylinux2014_x86_64.whl"}},
			missing: []int{0},
		},
		{name: "sdist", report: `{"version":"1","install":[{"download_info":{"url":"http://idx/x/foo-1.0.tar.gz","archive_info":{}},"metadata":{"name":"foo","version":"1.0"}}]}`, err: "is not a wheel"},
		{name: "direct url to a directory", report: `{"version":"1","install":[{"download_info":{"url":"file:///src/foo","dir_info":{}},"metadata":{"name":"foo","version":"1.0"}}]}`, err: "not an archive"},
		{name: "other version", report: `{"version":"2","install":[]}`, err: `version "2"`},
		{name: "empty", report: `{"version":"1","install":[]}`, err: "nothing to install"},
		{name: "not json", report: `ERROR`, err: "pip report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, missing, err := ParseReport([]byte(tc.report))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("distributions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.missing, missing); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBlocked(t *testing.T) {
	for _, tc := range []struct {
		name, stderr string
		want         pylock.Blocked
		ok           bool
	}{
		{
			name:   "no wheel for a dependency",
			stderr: "ERROR: Could not find a version that satisfies the requirement grpcio>=1.42.0; sys_platform != \"darwin\" (from ray[default]) (from versions: none)\nERROR: No matching distribution found for grpcio>=1.42.0; sys_platform != \"darwin\"\n",
			want:   pylock.Blocked{Distribution: "grpcio", Detail: `Could not find a version that satisfies the requirement grpcio>=1.42.0; sys_platform != "darwin" (from ray[default]) (from versions: none)`},
			ok:     true,
		},
		{
			name:   "top level with extras",
			stderr: "ERROR: No matching distribution found for Ray[default]==2.46.0\n",
			want:   pylock.Blocked{Distribution: "ray", Detail: "no matching distribution found for Ray[default]==2.46.0"},
			ok:     true,
		},
		{
			name:   "conflict",
			stderr: "ERROR: Cannot install ray[default]==2.46.0 and debugpy==1.8.14 because these package versions have conflicting dependencies.\n",
			want:   pylock.Blocked{Detail: "Cannot install ray[default]==2.46.0 and debugpy==1.8.14 because these package versions have conflicting dependencies."},
			ok:     true,
		},
		{
			name:   "index unreachable is not blocked",
			stderr: "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError(...)': /simple/ray/\nERROR: Could not find a version that satisfies the requirement ray==2.46.0 (from versions: none)\nERROR: No matching distribution found for ray==2.46.0\n",
		},
		{name: "other error", stderr: "ERROR: Exception:\nTraceback (most recent call last):\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Blocked(tc.stderr)
			if ok != tc.ok {
				t.Fatalf("Blocked ok = %v, want %v (%+v)", ok, tc.ok, got)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	l := New(WithTimeout(30*time.Second), WithRetries(2))
	req := pylock.Request{Requirements: []string{"ray[default]==2.46.0", "debugpy==1.8.14"}, Python: "3.12", Platform: "linux/arm64", Index: "http://127.0.0.1:8080/simple"}
	got, err := l.Args(req, "/r.json", "/t")
	if err != nil {
		t.Fatal(err)
	}
	// Every manylinux tag of the base's glibc 2.39 on aarch64, newest
	// first, down to manylinux_2_17 and its alias manylinux2014.
	platforms := ""
	for minor := 39; minor >= 17; minor-- {
		platforms += fmt.Sprintf(" --platform manylinux_2_%d_aarch64", minor)
	}
	platforms += " --platform manylinux2014_aarch64"
	want := "--isolated --no-input --disable-pip-version-check --quiet --timeout 30 --retries 2 install --dry-run --report /r.json --ignore-installed --target /t --no-cache-dir --only-binary=:all: --implementation cp --python-version 3.12" + platforms + " --index-url http://127.0.0.1:8080/simple --trusted-host 127.0.0.1 ray[default]==2.46.0 debugpy==1.8.14"
	if diff := cmp.Diff(want, strings.Join(got, " ")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []pylock.Request{
		{Requirements: req.Requirements, Python: "3", Platform: "linux/arm64", Index: req.Index},
		{Requirements: req.Requirements, Python: "3.12", Platform: "linux/386", Index: req.Index},
		{Requirements: req.Requirements, Python: "3.12", Platform: "linux/arm64", Index: "file:///idx"},
		{Requirements: []string{"--extra-index-url=http://evil"}, Python: "3.12", Platform: "linux/arm64", Index: req.Index},
		{Python: "3.12", Platform: "linux/arm64", Index: req.Index},
	} {
		if _, err := l.Args(bad, "/r", "/t"); err == nil {
			t.Errorf("Args(%+v) succeeded", bad)
		}
	}
}

// requirePip returns a Locker for the machine's pip, or skips (fails with
// IMAGECTL_REQUIRE_TOOLS=1) saying what is missing.
func requirePip(t *testing.T) *Locker {
	t.Helper()
	l := New(WithTimeout(20*time.Second), WithRetries(0), WithHTTPClient(httpx.New(httpx.WithRetries(0))))
	v := testutil.RequirePip(t, "pip for python3", l.Check)
	if _, err := exec.LookPath("python3"); err != nil {
		testutil.SkipOrFail(t, "pip for python3: %v", err)
	}
	t.Logf("pip %s", v)
	return l
}

// fixtureIndex builds the e2e's fixture wheels (tests/e2e/mkwheels.py) and
// serves them as a PEP 503 index.
func fixtureIndex(t testing.TB, args ...string) (dir, index string) {
	t.Helper()
	dir = t.TempDir()
	if out, err := exec.Command("python3", append([]string{"../../tests/e2e/mkwheels.py"}, append(args, dir)...)...).CombinedOutput(); err != nil {
		t.Fatalf("mkwheels.py: %v\n%s", err, out)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return dir, srv.URL + "/simple"
}

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestLockWithRealPip locks the fixture closure per platform with the
// machine's pip: the transitive dependencies, the architecture's own
// platform wheel, the universal ones, each with its file's sha256.
func TestLockWithRealPip(t *testing.T) {
	l := requirePip(t)
	dir, index := fixtureIndex(t)
	ctx := context.Background()
	for _, tc := range []struct{ platform, arch string }{{"linux/amd64", "x86_64"}, {"linux/arm64", "aarch64"}} {
		t.Run(tc.arch, func(t *testing.T) {
			got, err := l.Lock(ctx, pylock.Request{Requirements: []string{"ray[default]==2.46.0", "debugpy==1.8.14"}, Python: "3.12", Platform: tc.platform, Index: index})
			if err != nil {
				t.Fatal(err)
			}
			files := []string{
				"aiohttp-3.9.5-py3-none-any.whl",
				"aiosignal-1.3.1-py3-none-any.whl",
				"click-8.1.8-py3-none-any.whl",
				"colorful-0.5.6-py2.py3-none-any.whl",
				"debugpy-1.8.14-cp312-cp312-manylinux_2_5_" + tc.arch + ".manylinux1_" + tc.arch + ".manylinux_2_17_" + tc.arch + ".manylinux2014_" + tc.arch + ".whl",
				"frozenlist-1.4.1-cp312-cp312-manylinux2014_" + tc.arch + ".whl",
				"ray-2.46.0-cp312-cp312-manylinux2014_" + tc.arch + ".whl",
			}
			var want []imagespec.PythonDist
			for _, f := range files {
				parts := strings.Split(f, "-")
				want = append(want, imagespec.PythonDist{Name: parts[0], Version: parts[1], Filename: f,
					URL: strings.TrimSuffix(index, "/simple") + "/files/" + f, SHA256: fileSHA(t, filepath.Join(dir, "files", f))})
			}
			slices.SortFunc(got, func(a, b imagespec.PythonDist) int { return strings.Compare(a.Name, b.Name) })
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("closure on %s (-want +got):\n%s", tc.platform, diff)
			}
		})
	}
	// Ray ships no CPython 3.10 wheel: blocked by ray, not an error.
	_, err := l.Lock(ctx, pylock.Request{Requirements: []string{"ray[default]==2.46.0", "debugpy==1.8.14"}, Python: "3.10", Platform: "linux/arm64", Index: index})
	var be *pylock.BlockedError
	if !errors.As(err, &be) || be.Blocked.Distribution != "ray" {
		t.Errorf("CPython 3.10: err = %v, want blocked by ray", err)
	}
	// An index that does not answer is an error, never "blocked".
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	_, err = l.Lock(ctx, pylock.Request{Requirements: []string{"click==8.1.8"}, Python: "3.12", Platform: "linux/amd64", Index: u + "/simple"})
	if err == nil || errors.As(err, &be) {
		t.Errorf("unreachable index: err = %v, want a plain error", err)
	}
}

// TestLockTakesEveryManylinuxTagOfTheBase locks, with the machine's pip
// against the fake PyPI, a project whose only wheel per architecture is
// tagged manylinux_2_31 (a glibc older than the base's 2.39, neither
// manylinux_2_28 nor manylinux2014): it is locked. One tagged only
// manylinux_2_40 (newer than the base's glibc) is blocked.
func TestLockTakesEveryManylinuxTagOfTheBase(t *testing.T) {
	l := requirePip(t)
	f := pypitest.New([]pypitest.Project{
		{Name: "glibcfit", Releases: map[string][]pypitest.File{"1.0": {
			pypitest.Wheel("glibcfit-1.0-cp312-cp312-manylinux_2_31_x86_64.whl"),
			pypitest.Wheel("glibcfit-1.0-cp312-cp312-manylinux_2_31_aarch64.whl"),
		}}},
		{Name: "glibcnew", Releases: map[string][]pypitest.File{"1.0": {
			pypitest.Wheel("glibcnew-1.0-cp312-cp312-manylinux_2_40_x86_64.whl"),
			pypitest.Wheel("glibcnew-1.0-cp312-cp312-manylinux_2_40_aarch64.whl"),
		}}},
	})
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx := context.Background()
	for _, tc := range []struct{ platform, arch string }{{"linux/amd64", "x86_64"}, {"linux/arm64", "aarch64"}} {
		t.Run(tc.arch, func(t *testing.T) {
			got, err := l.Lock(ctx, pylock.Request{Requirements: []string{"glibcfit==1.0"}, Python: "3.12", Platform: tc.platform, Index: srv.URL + "/simple"})
			if err != nil {
				t.Fatalf("locking the manylinux_2_31 wheel: %v", err)
			}
			file := "glibcfit-1.0-cp312-cp312-manylinux_2_31_" + tc.arch + ".whl"
			want := []imagespec.PythonDist{{Name: "glibcfit", Version: "1.0", Filename: file, URL: f.FileURL(srv.URL, file), SHA256: f.SHA256(file)}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("closure (-want +got):\n%s", diff)
			}
			_, err = l.Lock(ctx, pylock.Request{Requirements: []string{"glibcnew==1.0"}, Python: "3.12", Platform: tc.platform, Index: srv.URL + "/simple"})
			var be *pylock.BlockedError
			if !errors.As(err, &be) || be.Blocked.Distribution != "glibcnew" {
				t.Errorf("manylinux_2_40 only: err = %v, want blocked by glibcnew", err)
			}
		})
	}
}

// TestLockHashesWheelsWithoutIndexHash: an index without #sha256= gets
// each wheel downloaded and hashed.
func TestLockHashesWheelsWithoutIndexHash(t *testing.T) {
	l := requirePip(t)
	dir, _ := fixtureIndex(t)
	page := filepath.Join(dir, "simple", "click", "index.html")
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	stripped := string(b)
	if i := strings.Index(stripped, "#sha256="); i >= 0 {
		stripped = stripped[:i] + stripped[i+len("#sha256=")+64:]
	}
	if strings.Contains(stripped, "#sha256=") || stripped == string(b) {
		t.Fatalf("could not strip the hash from %s", b)
	}
	if err := os.WriteFile(page, []byte(stripped), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	got, err := l.Lock(context.Background(), pylock.Request{Requirements: []string{"click==8.1.8"}, Python: "3.12", Platform: "linux/amd64", Index: srv.URL + "/simple"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].SHA256 != fileSHA(t, filepath.Join(dir, "files", "click-8.1.8-py3-none-any.whl")) {
		t.Errorf("got %+v, want click with its file's sha256", got)
	}
}

func TestCheckNamesWhatIsMissing(t *testing.T) {
	_, err := New(WithCommand(filepath.Join(t.TempDir(), "no-such-python"), "-m", "pip")).Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "python3-pip") {
		t.Errorf("err = %v, want one saying to install python3-pip", err)
	}
	old := filepath.Join(t.TempDir(), "oldpip")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho 'pip 21.3.1 from /usr/lib/python3/dist-packages/pip (python 3.10)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := New(WithCommand(old)).Check(context.Background()); err == nil || !strings.Contains(err.Error(), ">= 22.2") {
		t.Errorf("pip 21.3.1: err = %v, want one asking for pip >= 22.2", err)
	}
}

// TestPipRunsUnderTheInterpreterItself runs "python3 -m pip" where python3
// is a shim that, like pyenv's, fails after "-m pip" when its rehash hook
// races another pip run: pip must run under the interpreter the shim names
// (its sys.executable), not through the shim.
func TestPipRunsUnderTheInterpreterItself(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "python3.12")
	if err := os.WriteFile(real, []byte("#!/bin/sh\n[ \"$1 $2 $3\" = '-m pip --version' ] || exit 3\necho 'pip 24.0 from /usr/lib/python3/dist-packages/pip (python 3.12)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(dir, "python3")
	script := "#!/bin/sh\nif [ \"$1\" = -c ]; then printf %s " + real + "; exit 0; fi\n" +
		"echo 'pyenv: cannot rehash: /root/.pyenv/shims is not writable' >&2\nexit 1\n"
	if err := os.WriteFile(shim, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	v, err := New(WithCommand(shim, "-m", "pip")).Check(context.Background())
	if err != nil || v != "24.0" {
		t.Fatalf("Check through a shim = %q, %v; want 24.0 from the interpreter the shim names", v, err)
	}
	// A command that is not "INTERPRETER -m pip" runs as given.
	if _, err := New(WithCommand(shim, "--version")).Check(context.Background()); err == nil {
		t.Errorf("Check(%s --version) succeeded; the command must run as given", shim)
	}
}
