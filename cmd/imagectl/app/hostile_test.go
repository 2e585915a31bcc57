package app

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every file the CLI reads by path is a regular file read through a bounded
// reader: /dev/zero, a FIFO with no writer, a directory and a sparse file
// far over the limit are refused at once, naming the file (and the limit).
func TestHostileInputFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	sparse := filepath.Join(dir, "sparse")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	img := "127.0.0.1:1/x@sha256:" + strings.Repeat("a", 64)
	t.Setenv("COSIGN_PASSWORD", "hostile-input-test")
	key := filepath.Join(dir, "k")
	if code, _, errOut := run(t, "sign", "--generate-key", key); code != 0 {
		t.Fatalf("sign --generate-key: exit %d: %s", code, errOut)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"matrix /dev/zero", []string{"--matrix", "/dev/zero", "matrix", "resolve", "--ray", "2.46.0"}, "/dev/zero: not a regular file (a character device)"},
		{"matrix FIFO", []string{"--matrix", fifo, "matrix", "resolve", "--ray", "2.46.0"}, fifo + ": not a regular file (a FIFO)"},
		{"matrix sparse", []string{"--matrix", sparse, "matrix", "resolve", "--ray", "2.46.0"}, sparse + ": larger than the limit of 1 MiB"},
		{"matrix directory", []string{"--matrix", dir, "matrix", "resolve", "--ray", "2.46.0"}, dir + ": not a regular file (a directory)"},
		{"catalog /dev/zero", []string{"--matrix", repoMatrix, "--catalog", "/dev/zero", "matrix", "resolve", "--ray", "2.46.0"}, "/dev/zero: not a regular file (a character device)"},
		{"catalog FIFO", []string{"--matrix", repoMatrix, "--catalog", fifo, "matrix", "resolve", "--ray", "2.46.0"}, fifo + ": not a regular file (a FIFO)"},
		{"catalog sparse", []string{"--matrix", repoMatrix, "--catalog", sparse, "matrix", "resolve", "--ray", "2.46.0"}, sparse + ": larger than the limit of 64 MiB"},
		{"verify key /dev/zero", []string{"verify", img, "--key", "/dev/zero"}, "/dev/zero: not a regular file"},
		{"verify key FIFO", []string{"verify", img, "--key", fifo}, fifo + ": not a regular file (a FIFO)"},
		{"sign key FIFO", []string{"sign", img, "--key", fifo}, fifo + ": not a regular file (a FIFO)"},
		{"sign key sparse", []string{"sign", img, "--key", sparse}, sparse + ": larger than the limit of 64 KiB"},
		{"sign password file FIFO", []string{"sign", img, "--key", key + ".key", "--key-password-file", fifo}, fifo + ": not a regular file (a FIFO)"},
		{"sign password file /dev/zero", []string{"sign", img, "--key", key + ".key", "--key-password-file", "/dev/zero"}, "/dev/zero: not a regular file"},
		{"sign key password file FIFO", []string{"sign", img, "--key", key + ".key", "--key-password-file", fifo}, fifo + ": not a regular file (a FIFO)"},
		{"inject /dev/zero", []string{"inject", "-f", "/dev/zero"}, "/dev/zero: not a regular file (a character device)"},
		{"inject FIFO", []string{"inject", "-f", fifo}, fifo + ": not a regular file (a FIFO)"},
		{"inject sparse", []string{"inject", "-f", sparse}, sparse + ": larger than the limit of 16 MiB"},
		{"sign SBOM /dev/zero", []string{"sign", img, "--key", fifo, "--sbom", "/dev/zero"}, "/dev/zero: not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { expectQuickFailure(t, tc.wantErr, tc.args...) })
	}
}

// expectQuickFailure runs imagectl with args and wants a non-zero exit
// within 10 s with a short stderr containing wantErr.
func expectQuickFailure(t *testing.T, wantErr string, args ...string) {
	t.Helper()
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, errOut := run(t, args...)
		done <- result{code, errOut}
	}()
	select {
	case r := <-done:
		if r.code == 0 {
			t.Fatalf("exit 0, want a failure")
		}
		if !strings.Contains(r.stderr, wantErr) {
			t.Errorf("stderr %q lacks %q", r.stderr, wantErr)
		}
		if len(r.stderr) > 2000 {
			t.Errorf("stderr is %d bytes, want one readable error", len(r.stderr))
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("imagectl %s did not return within 10 s", strings.Join(args, " "))
	}
}

// SOURCE_DATE_EPOCH (and --source-date-epoch) out of range is refused by
// every command that uses it, before any work: 99999999999999999 overflowed
// installedTimestamp (milliseconds) and gave mtimes in 1901.
func TestSourceDateEpochRange(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COSIGN_PASSWORD", "hostile-input-test")
	key := filepath.Join(dir, "k")
	if code, _, errOut := run(t, "sign", "--generate-key", key); code != 0 {
		t.Fatalf("sign --generate-key: exit %d: %s", code, errOut)
	}
	const huge = "99999999999999999"
	const want = `="99999999999999999": want a Unix time in seconds from 0 to 8589934591 (2242-03-16T12:56:31Z)`
	img := "127.0.0.1:1/x@sha256:" + strings.Repeat("a", 64)
	for _, tc := range []struct {
		name, env, wantErr string
		args               []string
	}{
		{"extensions layout", huge, "SOURCE_DATE_EPOCH" + want, []string{"--matrix", repoMatrix, "extensions", "layout", "--ray", "2.46.0",
			"--platform", "linux/amd64", "--out", filepath.Join(dir, "out"), "--cache-dir", filepath.Join(dir, "cache")}},
		{"build env", huge, "SOURCE_DATE_EPOCH" + want, []string{"--matrix", repoMatrix, "build", "--ray", "2.46.0", "--cache-dir", filepath.Join(dir, "cache")}},
		{"build flag", "", "--source-date-epoch" + want, []string{"--matrix", repoMatrix, "build", "--ray", "2.46.0", "--cache-dir", filepath.Join(dir, "cache"), "--source-date-epoch", huge}},
		{"sign SBOM from labels", huge, "SOURCE_DATE_EPOCH" + want, []string{"sign", img, "--key", key + ".key", "--sbom-from-lock"}},
		{"sign SBOM, not a number", "yesterday", `SOURCE_DATE_EPOCH="yesterday": want`, []string{"sign", img, "--key", key + ".key", "--sbom-from-lock"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SOURCE_DATE_EPOCH", tc.env)
			expectQuickFailure(t, tc.wantErr, tc.args...)
		})
	}
}

// A malformed newest extension version in catalog.json is not skipped in
// favour of an older one: resolve fails, naming the JSON path.
func TestMatrixResolveRefusesMalformedCatalog(t *testing.T) {
	raw, err := os.ReadFile(repoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	const old = `"versions": [
        {
          "version": "0.1.4",`
	if !strings.Contains(string(raw), old) {
		t.Fatalf("catalog.json no longer has %q", old)
	}
	for _, tc := range []struct{ name, newer, wantErr string }{
		{"no engine", `{"version": "0.1.6", "files": {"universal": {}}},`, `extensions[0].versions[0].engine: missing`},
		{"no files", `{"version": "0.1.6", "engine": "^1.66.0", "files": {}},`, `extensions[0].versions[0].files: none`},
		{"path as version", `{"version": "../../x", "engine": "^1.66.0", "files": {"universal": {}}},`, `extensions[0].versions[0].version: "../../x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "catalog.json")
			doc := strings.Replace(string(raw), old, `"versions": [`+tc.newer+old[len(`"versions": [`):], 1)
			if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := run(t, "--matrix", repoMatrix, "--catalog", p, "matrix", "resolve", "--ray", "2.46.0")
			if code == 0 {
				t.Fatalf("exit 0 (an older extension was chosen):\n%s", out)
			}
			if want := p + ": " + tc.wantErr; !strings.Contains(errOut, want) {
				t.Errorf("stderr %q lacks %q", errOut, want)
			}
		})
	}
}
