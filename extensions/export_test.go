package extensions

import (
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/imagectl/imagectl/extensions/vsix"
	"github.com/imagectl/imagectl/vscode/vsixmanifest"
)

// CountValidations counts the package's VSIX validations (its calls of
// vsix.Validate) until the test ends. A test using it must not run in
// parallel with another of the package's tests.
func CountValidations(t testing.TB) *atomic.Int64 {
	var n atomic.Int64
	orig := validateVSIX
	validateVSIX = func(ctx context.Context, r io.ReaderAt, size int64, want vsix.Expect, lim vsix.Limits) (*vsixmanifest.Info, error) {
		n.Add(1)
		return orig(ctx, r, size, want, lim)
	}
	t.Cleanup(func() { validateVSIX = orig })
	return &n
}
