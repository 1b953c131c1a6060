package lab_test

import (
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/lab/labtest"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestCostDatapath checks veth-routing-cost: pods reach each other on both
// path kinds, each node carries lab.CostRules rules in its cost chain, and
// no packet matches one (their counters stay at zero) while the traffic
// crosses the forward hook (the pod-to-pod rules count it).
func TestCostDatapath(t *testing.T) {
	l := labtest.Up(t, lab.Options{Datapaths: []string{lab.CostDatapath}})
	if err, ok := l.Skipped()[lab.CostDatapath]; ok {
		t.Skipf("%s: %v", lab.CostDatapath, err)
	}
	if !lab.OptIn(lab.CostDatapath) {
		t.Errorf("%s is in the default matrix; want opt-in", lab.CostDatapath)
	}
	_, topo, err := l.Datapath(lab.CostDatapath)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []lab.PathKind{lab.SameNode, lab.CrossNode} {
		ep, err := l.Endpoint(lab.CostDatapath, kind)
		if err != nil {
			t.Fatal(err)
		}
		srv := testutil.StartTCPEcho(t, ep.Server.Do, ep.ServerIP)
		for range 5 {
			if _, err := testutil.TCPRoundTrip(ep.Client.Do, srv, []byte("ping")); err != nil {
				t.Fatalf("%s: TCP: %v", kind, err)
			}
		}
	}
	for _, node := range topo.Nodes {
		rules, matched, err := lab.CostRuleCount(node)
		if err != nil {
			t.Fatal(err)
		}
		if rules != lab.CostRules {
			t.Errorf("%s: %d cost rules, want %d", node.Name, rules, lab.CostRules)
		}
		if matched != 0 {
			t.Errorf("%s: %d packets matched a cost rule, want 0 (they must never match)", node.Name, matched)
		}
		c, err := lab.NftCounters(node)
		if err != nil {
			t.Fatal(err)
		}
		if c[lab.RuleEstablished]+c[lab.RulePodToPod] == 0 {
			t.Errorf("%s: no packet crossed the forward chain (counters %v)", node.Name, c)
		}
	}
}
