package labsuite

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

// A CPU hog of one core beside the suite is measured as other programs'
// CPU in every window and by the idle probe, its repeats are marked busy
// and re-run, and the report's first line says the host was busy; the
// cost per transaction leaves the hog out.
func TestInterferenceWithHog(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs: the hog takes one")
	}
	before := labNamespaces(t)
	o := tinyOptions(t, "baseline", "veth-routing")
	o.Tests, o.Flows = []string{engine.TCPRR}, []int{1}
	o.Interference = suite.Interference{ThresholdPct: suite.DefaultBusyThresholdPct, Retries: 1, IdleProbe: 500 * time.Millisecond}
	testutil.StartOrphanHog(t)
	var progress strings.Builder
	out, err := o.run(context.Background(), &progress)
	if err != nil {
		t.Fatalf("suite: %v\n%s", err, progress.String())
	}
	assertNothingLeft(t, before)
	in := out.Set.Interference
	// The hog is one core: the idle probe sees most of it; in the windows
	// it shares the CPUs with the run (counted process by process: 90–111 %
	// beside these cells, 39–79 % when it was counted by difference), above
	// the threshold.
	if in == nil || in.IdleForeignPct < 60 || in.MedianPct <= suite.DefaultBusyThresholdPct || in.Busy == 0 || in.Reruns == 0 {
		t.Fatalf("interference %+v with a hog of one core\n%s", in, progress.String())
	}
	for _, r := range out.Set.Runs {
		for _, rep := range r.Repeats {
			if rep.Error != "" {
				continue
			}
			f := rep.Metrics[result.ForeignCPUPct]
			if f > suite.DefaultBusyThresholdPct && rep.Busy == "" {
				t.Errorf("%v repeat %d: foreign %.0f %% not marked busy", r.Labels, rep.Index, f)
			}
			// The cost per transaction counts the run's CPU only: less
			// than the host's busy CPU per transaction.
			host := rep.Metrics[result.HostCPUPct] / 100 * 1e6 / rep.Metrics[result.TransPerSec]
			if c := rep.Metrics[result.CPUUsPerTrans]; c <= 0 || c >= host {
				t.Errorf("%v repeat %d: cpu_us_per_trans %.1f, host's %.1f", r.Labels, rep.Index, c, host)
			}
		}
	}
	if !strings.Contains(progress.String(), "idle load before the run: other programs used") {
		t.Errorf("no idle probe line in the progress:\n%s", progress.String())
	}
	if n := report.InterferenceNote(out.Set); !strings.HasPrefix(n, "The host was busy") {
		t.Errorf("report's first line %q", n)
	}
}
