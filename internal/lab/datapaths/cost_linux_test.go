package datapaths_test

import (
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/lab/datapaths"
	"github.com/cnibench/cnibench/internal/lab/labtest"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestCostDatapath checks veth-routing-cost: pods reach each other on both
// path kinds, each node carries datapaths.CostRules rules in its cost chain, and
// no packet matches one (their counters stay at zero) while the traffic
// crosses the forward hook (the pod-to-pod rules count it).
func TestCostDatapath(t *testing.T) {
	l := labtest.Up(t, lab.Options{Datapaths: []string{datapaths.CostDatapath}})
	if err, ok := l.Skipped()[datapaths.CostDatapath]; ok {
		t.Skipf("%s: %v", datapaths.CostDatapath, err)
	}
	if !lab.OptIn(datapaths.CostDatapath) {
		t.Errorf("%s is in the default matrix; want opt-in", datapaths.CostDatapath)
	}
	_, topo, err := l.Datapath(datapaths.CostDatapath)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []lab.PathKind{lab.SameNode, lab.CrossNode} {
		ep, err := l.Endpoint(datapaths.CostDatapath, kind)
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
		rules, matched, err := datapaths.CostRuleCount(node)
		if err != nil {
			t.Fatal(err)
		}
		if rules != datapaths.CostRules {
			t.Errorf("%s: %d cost rules, want %d", node.Name, rules, datapaths.CostRules)
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
