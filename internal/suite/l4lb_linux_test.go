package suite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/scenario/l4lb"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

// TestSuiteL4LBScenario runs the l4lb scenario in two modes (snat over
// vxlan without firewall, dsr direct with it) and tiny windows: every cell
// is measured with its proof and per-node CPU, the IPv6 point is recorded
// skipped, and nothing is left behind.
func TestSuiteL4LBScenario(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	before := labNamespaces(t)
	fdsBefore := ownBPFFDs(t)
	o := tinyOptions(t)
	o.Datapaths = nil
	o.Scenario = ScenarioL4LB
	o.LBModes = []string{"snat-vxlan", "dsr-direct-fw", "dsr-direct-ipv6"}
	o.Repeat = 1
	o.Duration = 200 * time.Millisecond
	o.Warmup = 50 * time.Millisecond
	var progress strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := (&Runner{Progress: &progress, LockPath: filepath.Join(t.TempDir(), "lock")}).Run(ctx, o)
	if err != nil {
		t.Fatalf("suite: %v\n%s", err, progress.String())
	}
	assertNothingLeft(t, before)
	if n := ownBPFFDs(t); n != fdsBefore {
		t.Errorf("%d BPF objects (programs, links, maps) held open before the run, %d after", fdsBefore, n)
	}
	data, err := os.ReadFile(out.ResultsPath)
	if err != nil {
		t.Fatal(err)
	}
	set, err := result.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Skipped) != 1 || set.Skipped[0].Labels[l4lb.LabelIPFamily] != "ipv6" || !strings.Contains(set.Skipped[0].Reason, "skipped: ") {
		t.Errorf("skipped: %+v, want the IPv6 point", set.Skipped)
	}
	// 2 modes × 3 cells.
	if len(set.Runs) != 6 {
		t.Fatalf("%d runs, want 6\n%s", len(set.Runs), progress.String())
	}
	for _, r := range set.Runs {
		l := r.Labels
		if l["scenario"] != ScenarioL4LB || l["datapath"] != "l4lb" || l["path"] != l4lb.PathNorthSouth {
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

// ownBPFFDs counts this process's file descriptors of BPF objects
// (programs, links, maps): what a scenario leaks keeps one open. Other
// test packages running at the same time load programs of their own, so
// the machine-wide program list cannot tell a leak from them.
func ownBPFFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "anon_inode:bpf-") {
			n++
		}
	}
	return n
}
