package labsuite

import (
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/scenario/services"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

// TestSuiteServicesScenario runs the services scenario with every
// implementation at one service and tiny windows: every cell is measured
// and carries its proof, and nothing is left behind (namespaces, BPF
// programs, host nft tables).
func TestSuiteServicesScenario(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.NeedProgram(t, "iptables-nft-restore")
	o := tinyOptions(t)
	o.Scenario, o.NewScenario = services.ScenarioName, scenarioFlags(t, services.ScenarioName, "--services", "1")
	o.Duration = 100 * time.Millisecond
	set, progress := runScenarioTest(t, o, 3*time.Minute)
	if len(set.Skipped) != 0 {
		t.Errorf("skipped: %+v", set.Skipped)
	}
	// 4 implementations (none included) × 1 service count × 6 cells.
	if want := 4 * 6; len(set.Runs) != want {
		t.Fatalf("%d runs, want %d\n%s", len(set.Runs), want, progress)
	}
	for _, r := range set.Runs {
		l := r.Labels
		if l["scenario"] != services.ScenarioName || l["services"] != "1" || l["implementation"] == "" ||
			(l["path"] != services.PathPodToService && l["path"] != services.PathHairpin) {
			t.Errorf("labels %v", l)
			continue
		}
		if len(r.Repeats) != 1 || r.Repeats[0].Error != "" {
			t.Errorf("%v: repeats %+v", l, r.Repeats)
			continue
		}
		m := r.Repeats[0].Metrics
		if m[result.TransPerSec] <= 0 || (m[services.SvcSetupSeconds] <= 0 && l["implementation"] != services.ImplNone) {
			t.Errorf("%v: rate %v, set-up %v", l, m[result.TransPerSec], m[services.SvcSetupSeconds])
		}
		// The proof, as recorded: iptables translated in conntrack, the
		// eBPF paths in BPF with no VIP in conntrack.
		vip, translated := m[services.MetricVIPEntries], m[services.MetricTranslations]
		switch l["implementation"] {
		case services.ImplIPTables:
			if vip <= 0 {
				t.Errorf("%v: no VIP conntrack entry", l)
			}
		case services.ImplNone:
			if vip != 0 || m[services.MetricNATEntries] != 0 {
				t.Errorf("%v: VIP entries %v, NAT entries %v without a service", l, vip, m[services.MetricNATEntries])
			}
		default:
			if translated <= 0 || vip != 0 || m[services.MetricNATEntries] != 0 {
				t.Errorf("%v: translations %v, VIP entries %v, NAT entries %v", l, translated, vip, m[services.MetricNATEntries])
			}
		}
	}
}
