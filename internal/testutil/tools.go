package testutil

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RequireToolsEnv is the variable that, set to 1, makes a missing tool fail
// a test instead of skipping it (CI sets it where every tool is installed).
const RequireToolsEnv = "IMAGECTL_REQUIRE_TOOLS"

// ToolsRequired reports whether IMAGECTL_REQUIRE_TOOLS=1.
func ToolsRequired() bool {
	return os.Getenv(RequireToolsEnv) == "1"
}

// SkipOrFail skips t with the formatted reason, or fails it with the same
// reason under IMAGECTL_REQUIRE_TOOLS=1.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if ToolsRequired() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// RequirePip skips (fails under IMAGECTL_REQUIRE_TOOLS=1) when check, a
// pip Locker's Check, reports pip missing or too old; the reason starts
// with what. It returns pip's version.
func RequirePip(t testing.TB, what string, check func(context.Context) (string, error)) string {
	t.Helper()
	v, err := check(context.Background())
	if err != nil {
		SkipOrFail(t, "%s: %v", what, err)
	}
	return v
}

// RequireDebugpy skips (fails under IMAGECTL_REQUIRE_TOOLS=1) when the real
// debugpy is not importable by python.
func RequireDebugpy(t testing.TB, python string) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import debugpy; print(debugpy.__version__)").CombinedOutput()
	if err != nil {
		SkipOrFail(t, "real debugpy not available: %s -c 'import debugpy' failed: %s (%v); install Debian's python3-debugpy (hack/deps.d/10-apt.sh)", python, strings.TrimSpace(string(out)), err)
	}
}

// CacheDir is where hack/deps.d installs what the tool-dependent tests use
// (stand-in base tarballs, node, code-server): $IMAGECTL_TEST_CACHE, or
// ~/.cache/imagectl-test.
func CacheDir() string {
	if c := os.Getenv("IMAGECTL_TEST_CACHE"); c != "" {
		return c
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "imagectl-test")
}
