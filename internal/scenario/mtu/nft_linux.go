package mtu

import (
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/lab"
)

// nftTable is the scenario's table (family ip) on both nodes, apart from
// the lab's own.
const nftTable = "cnibench-mtu"

// ruleFragNeeded is the comment of the rule counting (and with drop,
// dropping) ICMP "fragmentation needed".
const ruleFragNeeded = "icmp-frag-needed"

// ICMP destination unreachable, fragmentation needed (RFC 792, RFC 1191).
const (
	icmpDestUnreach = 3
	icmpFragNeeded  = 4
)

// fragNeededExprs matches IPv4 ICMP type 3 code 4.
func fragNeededExprs() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_ICMP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{icmpDestUnreach, icmpFragNeeded}},
	}
}

// installICMPRule adds, in ns, the scenario's table: an output chain (the
// ICMP a node generates itself, e.g. when it cannot forward a packet
// into a smaller device) and a forward chain (ICMP from elsewhere), each
// with one rule counting ICMP "fragmentation needed" and, with drop,
// dropping it. They run before the lab's filter chains.
func installICMPRule(ns *lab.NS, drop bool) error {
	c, err := nftables.New(nftables.WithNetNSFd(ns.Fd()))
	if err != nil {
		return fmt.Errorf("nftables connection in %s: %w", ns.Name, err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: nftTable})
	for _, h := range []struct {
		name string
		hook *nftables.ChainHook
	}{{"output", nftables.ChainHookOutput}, {"forward", nftables.ChainHookForward}} {
		ch := c.AddChain(&nftables.Chain{
			Name: h.name, Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: h.hook, Priority: nftables.ChainPriorityRef(*nftables.ChainPriorityFilter - 10),
		})
		exprs := append(fragNeededExprs(), &expr.Counter{})
		if drop {
			exprs = append(exprs, &expr.Verdict{Kind: expr.VerdictDrop})
		}
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: exprs,
			UserData: userdata.AppendString(nil, userdata.TypeComment, ruleFragNeeded)})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("install the ICMP fragmentation-needed rule in %s: %w", ns.Name, err)
	}
	return nil
}

// removeICMPRule deletes the scenario's table from ns (nothing if absent).
func removeICMPRule(ns *lab.NS) error {
	c, err := nftables.New(nftables.WithNetNSFd(ns.Fd()))
	if err != nil {
		return fmt.Errorf("nftables connection in %s: %w", ns.Name, err)
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return fmt.Errorf("list nft tables in %s: %w", ns.Name, err)
	}
	for _, t := range tables {
		if t.Name == nftTable {
			c.DelTable(t)
			if err := c.Flush(); err != nil {
				return fmt.Errorf("delete nft table %s in %s: %w", nftTable, ns.Name, err)
			}
		}
	}
	return nil
}

// fragNeededCount sums the rule's packet counters in ns.
func fragNeededCount(ns *lab.NS) (uint64, error) {
	c, err := nftables.New(nftables.WithNetNSFd(ns.Fd()))
	if err != nil {
		return 0, fmt.Errorf("nftables connection in %s: %w", ns.Name, err)
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return 0, fmt.Errorf("list nft chains in %s: %w", ns.Name, err)
	}
	var n uint64
	found := false
	for _, ch := range chains {
		if ch.Table.Name != nftTable {
			continue
		}
		rules, err := c.GetRules(ch.Table, ch)
		if err != nil {
			return 0, fmt.Errorf("list nft rules of %s/%s in %s: %w", nftTable, ch.Name, ns.Name, err)
		}
		for _, r := range rules {
			if name, _ := userdata.GetString(r.UserData, userdata.TypeComment); name != ruleFragNeeded {
				continue
			}
			for _, e := range r.Exprs {
				if cnt, ok := e.(*expr.Counter); ok {
					n += cnt.Packets
					found = true
				}
			}
		}
	}
	if !found {
		return 0, fmt.Errorf("no %s rule in nft table %s of %s", ruleFragNeeded, nftTable, ns.Name)
	}
	return n, nil
}
