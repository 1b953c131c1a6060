package datapaths

import (
	"fmt"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/nsrun"
)

// conntrackRules selects what installConntrackRules adds to the forward chain.
type conntrackRules struct {
	// notrack marks pod-to-pod traffic NOTRACK at raw priority.
	notrack bool
	// notrackVXLAN also marks VXLAN's UDP packets NOTRACK (port 4789).
	notrackVXLAN bool
}

// brNetfilterSysctls make bridged IPv4 traffic cross the IPv4 netfilter
// hooks (br_netfilter, as Kubernetes requires).
var brNetfilterSysctls = [][2]string{{"net/bridge/bridge-nf-call-iptables", "1"}}

// probeBrNetfilter checks that br_netfilter's per-namespace sysctl exists,
// in a scratch namespace.
func probeBrNetfilter() error {
	return nsrun.Scratch(func() error {
		if _, err := os.Stat("/proc/sys/net/bridge/bridge-nf-call-iptables"); err != nil {
			return &lab.UnsupportedError{Feature: "br_netfilter", Reason: err.Error()}
		}
		return nil
	})
}

// installConntrackRules installs, in ns, a forward chain in the style of
// kube-proxy/Calico: established/related accepted by conntrack state, new
// pod-to-pod flows accepted, everything else dropped. The ct state match is
// what engages connection tracking in the namespace. With notrack, a raw
// priority prerouting chain marks pod-to-pod traffic NOTRACK (seed 000's
// conntrack bypass), so the pod-to-pod rule accepts it untracked.
func installConntrackRules(ns *lab.NS, r conntrackRules) error {
	c, err := nftables.New(nftables.WithNetNSFd(ns.Fd()))
	if err != nil {
		return fmt.Errorf("nftables connection in %s: %w", ns.Name, err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: lab.NftTable})
	drop := nftables.ChainPolicyDrop
	fwd := c.AddChain(&nftables.Chain{
		Name: "forward", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &drop,
	})
	c.AddRule(lab.NftRule(t, fwd, lab.RuleCtNew, append(lab.NftCtStateIn(expr.CtStateBitNEW), &expr.Counter{})...))
	c.AddRule(lab.NftRule(t, fwd, lab.RuleEstablished, append(lab.NftCtStateIn(expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED),
		&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept})...))
	c.AddRule(lab.NftRule(t, fwd, lab.RuleInvalid, append(lab.NftCtStateIn(expr.CtStateBitINVALID),
		&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop})...))
	c.AddRule(lab.NftRule(t, fwd, lab.RulePodToPod, append(podToPod(), &expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept})...))
	if r.notrack {
		for _, h := range []struct {
			name, comment, vxlan string
			hook                 *nftables.ChainHook
		}{
			{"raw-prerouting", lab.RuleNotrack, lab.RuleNotrackVXLAN, nftables.ChainHookPrerouting},
			{"raw-output", lab.RuleNotrackOut, lab.RuleNotrackVXLANOut, nftables.ChainHookOutput},
		} {
			ch := c.AddChain(&nftables.Chain{
				Name: h.name, Table: t, Type: nftables.ChainTypeFilter,
				Hooknum: h.hook, Priority: nftables.ChainPriorityRaw,
			})
			c.AddRule(lab.NftRule(t, ch, h.comment, append(podToPod(), &expr.Counter{}, &expr.Notrack{})...))
			if r.notrackVXLAN {
				c.AddRule(lab.NftRule(t, ch, h.vxlan, append(udpDport(lab.VXLANPort), &expr.Counter{}, &expr.Notrack{})...))
			}
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("install nftables rules in %s: %w", ns.Name, err)
	}
	return nil
}

// probeConntrack checks that nftables and conntrack work, in a scratch
// namespace.
func probeConntrack() error {
	return nsrun.Scratch(func() error {
		c, err := nftables.New()
		if err != nil {
			return fmt.Errorf("nftables connection: %w", err)
		}
		t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: lab.NftTable})
		ch := c.AddChain(&nftables.Chain{
			Name: "forward", Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter,
		})
		c.AddRule(lab.NftRule(t, ch, lab.RuleEstablished, append(lab.NftCtStateIn(expr.CtStateBitESTABLISHED), &expr.Notrack{})...))
		if err := c.Flush(); err != nil {
			return &lab.UnsupportedError{Feature: "nftables conntrack and notrack", Reason: err.Error()}
		}
		return nil
	})
}

// udpDport matches UDP packets to port.
func udpDport(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_UDP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
	}
}

// podToPod matches IPv4 packets from and to the pod supernet.
func podToPod() []expr.Any {
	return append(lab.NftIPInPrefix(12, lab.PodSupernet), lab.NftIPInPrefix(16, lab.PodSupernet)...)
}
