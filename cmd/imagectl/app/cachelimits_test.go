package app

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/imagectl/imagectl/internal/testutil"
)

// Files fetched under limits raised on the command line are cache hits the
// next time under the same limits: not removed and downloaded again.
func TestRaisedVSIXLimitsApplyToCacheHits(t *testing.T) {
	e := newGalleryEnvWith(t, func(vsix []byte) []byte { return testutil.PadZip(t, vsix, 8) })
	f, root, tmp, catPath := e.f, e.root, e.tmp, e.catPath
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		base := []string{"--matrix", filepath.Join(root, "matrix.yaml"), "--catalog", catPath}
		return Run(context.Background(), append(base, args...), &out, &errb), errb.String()
	}
	fetch := []string{"extensions", "fetch", "--ray", "2.46.0", "--cache-dir", filepath.Join(tmp, "cache"),
		"--marketplace-url", f.MarketplaceURL(), "--openvsx-url", f.OpenVSXURL(), "--max-expansion-ratio", "5000"}

	// Under the default limits the padded files are refused: the test's
	// files really need the raised limit.
	if code, _ := run(append(fetch[:len(fetch)-2:len(fetch)-2], "--cache-dir", filepath.Join(tmp, "other"))...); code == 0 {
		t.Fatal("the padded files were accepted under the default expansion ratio")
	}
	if code, errOut := run(fetch...); code != 0 {
		t.Fatalf("first fetch with --max-expansion-ratio 5000: exit %d\n%s", code, errOut)
	}
	f.ResetStats()
	if code, errOut := run(fetch...); code != 0 {
		t.Fatalf("second fetch: exit %d\n%s", code, errOut)
	}
	if s := f.Stats(); s.Downloads != 0 {
		t.Errorf("second fetch downloaded %d files again (requests %q), want every file a cache hit", s.Downloads, f.Requests())
	}
}
