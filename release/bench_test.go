package release

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/imagectl/imagectl/imagespec"
)

// ColdBuildEnv names the wall time, in seconds, of one cold multi-arch build
// as measured by the e2e benchmark (build package). The no-change plan is
// reported as a ratio to it when set.
const ColdBuildEnv = "IMAGECTL_COLD_BUILD_SECONDS"

// BenchmarkPlanNoChange plans a fully published, unchanged matrix: the cost a
// scheduled run pays when nothing moved upstream. It reports registry
// requests per plan and, with IMAGECTL_COLD_BUILD_SECONDS, the ratio to one
// cold build.
func BenchmarkPlanNoChange(b *testing.B) {
	for _, size := range []struct{ rays, codeServers int }{{1, 1}, {12, 2}} {
		b.Run(fmt.Sprintf("entries=%d", size.rays*size.codeServers), func(b *testing.B) {
			var sets []imagespec.Set
			for cs := 0; cs < size.codeServers; cs++ {
				for r := 0; r < size.rays; r++ {
					sets = append(sets, newSet(fmt.Sprintf("4.%d.2", 101-cs), fmt.Sprintf("2.%d.0", 46-r), "3.12"))
				}
			}
			w := newWorld(b, sets...)
			w.publishAll()
			planner := NewPlanner(w.reg.reg, w.repo)
			ctx := context.Background()
			// Warm the transport (one ping per registry), as one process does.
			if _, err := planner.Plan(ctx, w.targets); err != nil {
				b.Fatal(err)
			}
			reads0, writes0 := w.reg.count.snapshot()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				p, err := planner.Plan(ctx, w.targets)
				if err != nil {
					b.Fatal(err)
				}
				if !p.Empty() {
					b.Fatalf("no-change plan has %d entries", len(p.Entries))
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			reads, writes := w.reg.count.snapshot()
			perPlan := float64(reads-reads0) / float64(b.N)
			b.ReportMetric(perPlan, "requests/plan")
			b.ReportMetric(perPlan/float64(len(sets)), "requests/entry")
			if writes != writes0 {
				b.Fatalf("a plan wrote %d times to the registry", writes-writes0)
			}
			wall := elapsed.Seconds() / float64(b.N)
			if v := os.Getenv(ColdBuildEnv); v != "" {
				cold, err := strconv.ParseFloat(v, 64)
				if err != nil || cold <= 0 {
					b.Fatalf("%s=%q: want seconds > 0", ColdBuildEnv, v)
				}
				b.ReportMetric(wall/cold, "x-cold-build")
				b.Logf("no-change plan of %d entries: %.4fs, %.0f requests = %.6f of one cold build (%.0fs)", len(sets), wall, perPlan, wall/cold, cold)
			} else {
				b.Logf("no-change plan of %d entries: %.4fs, %.0f requests; the ratio to a cold build needs %s from the e2e benchmark", len(sets), wall, perPlan, ColdBuildEnv)
			}
		})
	}
}
