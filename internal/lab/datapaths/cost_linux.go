package datapaths

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/cnibench/cnibench/internal/lab"
)

func init() {
	lab.RegisterOptIn(func() lab.Datapath { return newCost(CostRules) })
}

// CostDatapath is the name of the datapath with an injected per-packet cost.
const CostDatapath = "veth-routing-cost"

// CostRules is the number of never-matching nft rules veth-routing-cost adds
// to each node's forward hook: every forwarded packet is compared with each
// of them, a cost linear in the count and independent of the traffic. It is
// the known, injected slowdown on which the regression gate's detection
// power is measured (docs/reports.md, "The gate's error rates"); the
// slowdown it causes per test is measured there, not assumed.
const CostRules = 128

// RuleCost is the comment of the cost chain's rules.
const RuleCost = "injected-cost"

// costBase is where the never-matching destinations start: 198.18.0.0/15 is
// reserved for benchmarking (RFC 2544) and the lab routes none of it.
var costBase = netip.MustParseAddr("198.18.0.1")

// newCost returns veth-routing with n never-matching rules per forwarded
// packet on each node.
func newCost(n int) *Routed {
	r := NewRouted(RoutedConfig{})
	cfg := r.cfg
	cfg.Name = CostDatapath
	cfg.Description = fmt.Sprintf("veth-routing plus %d never-matching nft rules every forwarded packet is compared with: a controlled per-packet cost (the regression gate's injected slowdown)", n)
	cfg.PacketPath = fmt.Sprintf("client pod eth0 -> veth -> node1 IP stack (nft forward: %d cost rules, conntrack) -> wire0 -> "+
		"node2 IP stack (nft forward: %d cost rules, conntrack) -> veth -> server pod eth0", n, n)
	cfg.NodeReady = func(_ context.Context, _ *lab.Env, node RoutedNode) error {
		return installCostRules(node.NS, n)
	}
	return &Routed{cfg: cfg}
}

// installCostRules adds a forward-hook chain, before the filter chain, of n
// rules "ip daddr 198.18.x.y drop" that no lab packet matches.
func installCostRules(ns *lab.NS, n int) error {
	c, err := nftables.New(nftables.WithNetNSFd(ns.Fd()))
	if err != nil {
		return fmt.Errorf("nftables connection in %s: %w", ns.Name, err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: lab.NftTable})
	prio := nftables.ChainPriorityRef(*nftables.ChainPriorityFilter - 10)
	ch := c.AddChain(&nftables.Chain{
		Name: "cost", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: prio,
	})
	for i, a := range costAddrs(n) {
		c.AddRule(lab.NftRule(t, ch, RuleCost,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a.AsSlice()},
			&expr.Counter{},
			&expr.Verdict{Kind: expr.VerdictDrop}))
		// One batch of every rule overflows the netlink socket's receive
		// buffer with acknowledgements: flush every costBatch rules.
		if (i+1)%costBatch == 0 || i == n-1 {
			if err := c.Flush(); err != nil {
				return fmt.Errorf("install %d cost rules in %s: %w", n, ns.Name, err)
			}
		}
	}
	return nil
}

// costBatch is the number of rules installed per netlink batch.
const costBatch = 64

// costAddrs returns n distinct addresses from costBase on.
func costAddrs(n int) []netip.Addr {
	out := make([]netip.Addr, 0, n)
	for a := costBase; len(out) < n; a = a.Next() {
		out = append(out, a)
	}
	return out
}

// CostRuleCount returns how many cost rules ns carries and how many
// packets matched any of them (0 when the chain works as meant).
func CostRuleCount(ns *lab.NS) (rules int, matched uint64, err error) {
	c, err := nftables.New(nftables.WithNetNSFd(ns.Fd()))
	if err != nil {
		return 0, 0, fmt.Errorf("nftables connection in %s: %w", ns.Name, err)
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: lab.NftTable}
	rs, err := c.GetRules(t, &nftables.Chain{Name: "cost", Table: t})
	if err != nil {
		return 0, 0, fmt.Errorf("list the cost chain in %s: %w", ns.Name, err)
	}
	for _, r := range rs {
		for _, e := range r.Exprs {
			if cnt, ok := e.(*expr.Counter); ok {
				matched += cnt.Packets
			}
		}
	}
	return len(rs), matched, nil
}
