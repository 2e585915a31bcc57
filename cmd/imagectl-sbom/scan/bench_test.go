package scan

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/sbom"
)

// ColdBuildEnv names the wall time, in seconds, of one cold multi-arch build
// as the e2e benchmark measured it; a scan is reported as a ratio to it.
const ColdBuildEnv = "IMAGECTL_COLD_BUILD_SECONDS"

// BenchmarkScanImage scans, per platform, an image made of the stand-in
// base (mmdebstrap bookworm, hack/deps.d/35-base-images.sh) and the layers of
// testImage (Python distributions, npm packages, extensions): the time SBOM
// scanning adds to a build per platform (without the registry pull).
func BenchmarkScanImage(b *testing.B) {
	cache := testutil.CacheDir()
	for _, arch := range []string{"amd64", "arm64"} {
		b.Run("linux/"+arch, func(b *testing.B) {
			tar := filepath.Join(cache, "base", "base-"+arch+".tar")
			if _, err := os.Stat(tar); err != nil {
				testutil.SkipOrFail(b, "stand-in base %s (hack/deps.d/35-base-images.sh): %v", tar, err)
			}
			base, err := tarball.LayerFromFile(tar)
			if err != nil {
				b.Fatal(err)
			}
			top := testImage(b)
			layers, err := top.Layers()
			if err != nil {
				b.Fatal(err)
			}
			// The base first, as in the image; testImage's own stand-in
			// Debian layer (layers[0]) would hide the base's dpkg database.
			img, err := mutate.AppendLayers(empty.Image, append([]v1.Layer{base}, layers[1:]...)...)
			if err != nil {
				b.Fatal(err)
			}
			var res *sbom.Result
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if res, err = Scan(context.Background(), img, sbom.Options{Name: "bench/x", Platform: "linux/" + arch, Extensions: testExtensions()}); err != nil {
					b.Fatal(err)
				}
			}
			wall := time.Since(start).Seconds() / float64(b.N)
			b.StopTimer()
			b.ReportMetric(float64(res.Counts["deb"]), "deb-packages")
			if v := os.Getenv(ColdBuildEnv); v != "" {
				cold, err := strconv.ParseFloat(v, 64)
				if err != nil || cold <= 0 {
					b.Fatalf("%s=%q: want seconds > 0", ColdBuildEnv, v)
				}
				b.ReportMetric(wall/cold, "x-cold-build")
				b.Logf("SBOM scan of linux/%s (stand-in base, %d dpkg packages): %.2fs = %.4f of one cold build (%.0fs)", arch, res.Counts["deb"], wall, wall/cold, cold)
			} else {
				b.Logf("SBOM scan of linux/%s (stand-in base, %d dpkg packages): %.2fs; the ratio to a cold build needs %s from the e2e benchmark", arch, res.Counts["deb"], wall, ColdBuildEnv)
			}
		})
	}
}
