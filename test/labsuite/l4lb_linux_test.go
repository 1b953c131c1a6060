package labsuite

import (
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/scenario/l4lb"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestSuiteL4LBScenario runs the l4lb scenario in two modes (snat over
// vxlan without firewall, dsr direct with it) and tiny windows: every cell
// is measured with its proof and per-node CPU, the IPv6 point is recorded
// skipped, and nothing is left behind.
func TestSuiteL4LBScenario(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	o := tinyOptions(t)
	o.Lab.Datapaths = nil
	o.Scenario, o.NewScenario = l4lb.ScenarioName, scenarioFlags(t, l4lb.ScenarioName, "--lb-modes", "snat-vxlan,dsr-direct-fw,dsr-direct-ipv6")
	o.Duration = 200 * time.Millisecond
	set, progress := runScenarioTest(t, o, 3*time.Minute)
	if len(set.Skipped) != 1 || set.Skipped[0].Labels[l4lb.LabelIPFamily] != "ipv6" || !strings.Contains(set.Skipped[0].Reason, "skipped: ") {
		t.Errorf("skipped: %+v, want the IPv6 point", set.Skipped)
	}
	// 2 modes × 3 cells.
	if len(set.Runs) != 6 {
		t.Fatalf("%d runs, want 6\n%s", len(set.Runs), progress)
	}
	for _, r := range set.Runs {
		l := r.Labels
		if l["scenario"] != l4lb.ScenarioName || l["datapath"] != "l4lb" || l["path"] != l4lb.PathNorthSouth {
			t.Errorf("labels %v", l)
			continue
		}
		if len(r.Repeats) != 1 || r.Repeats[0].Error != "" {
			t.Errorf("%v: repeats %+v", l, r.Repeats)
			continue
		}
		m := r.Repeats[0].Metrics
		if m[l4lb.MetricLBForward] <= 0 || m[l4lb.MetricRefusedTried] <= 0 {
			t.Errorf("%v: forward %v, refused attempts %v", l, m[l4lb.MetricLBForward], m[l4lb.MetricRefusedTried])
		}
		if (l["lb_mode"] == "dsr") != (m[l4lb.MetricLBReverse] == 0) {
			t.Errorf("%v: LB reverse %v", l, m[l4lb.MetricLBReverse])
		}
		if _, ok := m[l4lb.MetricLBCPU]; !ok {
			t.Errorf("%v: no LB CPU (%s)", l, r.Config["node_cpu"])
		}
	}
}
