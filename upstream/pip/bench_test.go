package pip

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/imagectl/imagectl/internal/testutil"
	"github.com/imagectl/imagectl/pylock"
)

// ColdBuildEnv names the wall time, in seconds, of one cold multi-arch build
// as the e2e benchmark measured it; locking is reported as a ratio to it.
const ColdBuildEnv = "IMAGECTL_COLD_BUILD_SECONDS"

// BenchmarkLockClosure locks the e2e fixture closure (ray[default] and
// debugpy with their transitive dependencies) for both platforms with the
// machine's pip, as matrix refresh does: the time refresh adds per set.
func BenchmarkLockClosure(b *testing.B) {
	l := New(WithTimeout(30*time.Second), WithRetries(0))
	testutil.RequirePip(b, "pip for python3", l.Check)
	_, index := fixtureIndex(b)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for _, p := range []string{"linux/amd64", "linux/arm64"} {
			if _, err := l.Lock(ctx, pylock.Request{Requirements: []string{"ray[default]==2.46.0", "debugpy==1.8.14"}, Python: "3.11", Platform: p, Index: index}); err != nil {
				b.Fatal(err)
			}
		}
	}
	wall := time.Since(start).Seconds() / float64(b.N)
	b.StopTimer()
	if v := os.Getenv(ColdBuildEnv); v != "" {
		cold, err := strconv.ParseFloat(v, 64)
		if err != nil || cold <= 0 {
			b.Fatalf("%s=%q: want seconds > 0", ColdBuildEnv, v)
		}
		b.ReportMetric(wall/cold, "x-cold-build")
		b.Logf("locking one set's closure on 2 platforms (pip, fixture index): %.2fs = %.4f of one cold build (%.0fs)", wall, wall/cold, cold)
	} else {
		b.Logf("locking one set's closure on 2 platforms (pip, fixture index): %.2fs; the ratio to a cold build needs %s from the e2e benchmark", wall, ColdBuildEnv)
	}
}
