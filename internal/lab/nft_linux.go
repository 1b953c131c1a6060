package lab

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// NftTable is the nftables table (family ip) the lab installs in nodes of
// the routed and bridged datapaths.
const NftTable = "cnibench"

// Comments of the lab's nft rules; NftCounters reports packets by comment.
const (
	RuleCtNew           = "ct-new"            // forward: ct state new counter, no verdict (new tracked connections)
	RuleEstablished     = "ct-established"    // forward: ct state established,related accept
	RuleInvalid         = "ct-invalid"        // forward: ct state invalid drop
	RulePodToPod        = "pod-to-pod"        // forward: ip saddr/daddr in the pod supernet accept
	RuleNotrack         = "notrack-pod"       // prerouting at raw priority: pod traffic notrack
	RuleNotrackOut      = "notrack-pod-out"   // output at raw priority (locally generated, e.g. ICMP)
	RuleNotrackVXLAN    = "notrack-vxlan"     // prerouting at raw priority: VXLAN UDP notrack
	RuleNotrackVXLANOut = "notrack-vxlan-out" // output at raw priority: VXLAN UDP notrack
)

// nftRules selects what installConntrackRules adds to the forward chain.
type nftRules struct {
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
	return inScratchNS(func(_ *netlink.Handle) error {
		if _, err := os.Stat("/proc/sys/net/bridge/bridge-nf-call-iptables"); err != nil {
			return &UnsupportedError{Feature: "br_netfilter", Reason: err.Error()}
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
func installConntrackRules(ns *NS, r nftRules) error {
	c, err := nftables.New(nftables.WithNetNSFd(ns.Fd()))
	if err != nil {
		return fmt.Errorf("nftables connection in %s: %w", ns.Name, err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: NftTable})
	drop := nftables.ChainPolicyDrop
	fwd := c.AddChain(&nftables.Chain{
		Name: "forward", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &drop,
	})
	c.AddRule(NftRule(t, fwd, RuleCtNew, append(NftCtStateIn(expr.CtStateBitNEW), &expr.Counter{})...))
	c.AddRule(NftRule(t, fwd, RuleEstablished, append(NftCtStateIn(expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED),
		&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept})...))
	c.AddRule(NftRule(t, fwd, RuleInvalid, append(NftCtStateIn(expr.CtStateBitINVALID),
		&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop})...))
	c.AddRule(NftRule(t, fwd, RulePodToPod, append(podToPod(), &expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept})...))
	if r.notrack {
		for _, h := range []struct {
			name, comment, vxlan string
			hook                 *nftables.ChainHook
		}{
			{"raw-prerouting", RuleNotrack, RuleNotrackVXLAN, nftables.ChainHookPrerouting},
			{"raw-output", RuleNotrackOut, RuleNotrackVXLANOut, nftables.ChainHookOutput},
		} {
			ch := c.AddChain(&nftables.Chain{
				Name: h.name, Table: t, Type: nftables.ChainTypeFilter,
				Hooknum: h.hook, Priority: nftables.ChainPriorityRaw,
			})
			c.AddRule(NftRule(t, ch, h.comment, append(podToPod(), &expr.Counter{}, &expr.Notrack{})...))
			if r.notrackVXLAN {
				c.AddRule(NftRule(t, ch, h.vxlan, append(udpDport(VXLANPort), &expr.Counter{}, &expr.Notrack{})...))
			}
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("install nftables rules in %s: %w", ns.Name, err)
	}
	return nil
}

// NftCounters returns the packet counters of the lab's nft rules in ns, by
// rule comment (RuleEstablished, RulePodToPod, ...).
func NftCounters(ns *NS) (map[string]uint64, error) {
	c, err := nftables.New(nftables.WithNetNSFd(ns.Fd()))
	if err != nil {
		return nil, fmt.Errorf("nftables connection in %s: %w", ns.Name, err)
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: NftTable}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return nil, fmt.Errorf("list nft chains in %s: %w", ns.Name, err)
	}
	out := map[string]uint64{}
	for _, ch := range chains {
		if ch.Table.Name != NftTable {
			continue
		}
		rules, err := c.GetRules(t, ch)
		if err != nil {
			return nil, fmt.Errorf("list nft rules of chain %s in %s: %w", ch.Name, ns.Name, err)
		}
		for _, r := range rules {
			name, _ := userdata.GetString(r.UserData, userdata.TypeComment)
			for _, e := range r.Exprs {
				if cnt, ok := e.(*expr.Counter); ok {
					out[name] += cnt.Packets
				}
			}
		}
	}
	return out, nil
}

// probeConntrack checks that nftables and conntrack work, in a scratch
// namespace.
func probeConntrack() error {
	return inScratchNS(func(_ *netlink.Handle) error {
		c, err := nftables.New()
		if err != nil {
			return fmt.Errorf("nftables connection: %w", err)
		}
		t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: NftTable})
		ch := c.AddChain(&nftables.Chain{
			Name: "forward", Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter,
		})
		c.AddRule(NftRule(t, ch, RuleEstablished, append(NftCtStateIn(expr.CtStateBitESTABLISHED), &expr.Notrack{})...))
		if err := c.Flush(); err != nil {
			return &UnsupportedError{Feature: "nftables conntrack and notrack", Reason: err.Error()}
		}
		return nil
	})
}

// NftRule builds a rule of chain ch in table t from exprs, with comment
// as its comment: NftCounters reports a rule's counter under that name.
func NftRule(t *nftables.Table, ch *nftables.Chain, comment string, exprs ...expr.Any) *nftables.Rule {
	return &nftables.Rule{
		Table: t, Chain: ch, Exprs: exprs,
		UserData: userdata.AppendString(nil, userdata.TypeComment, comment),
	}
}

// NftCtStateIn matches packets whose conntrack state has any of bits
// (expr.CtStateBit*).
func NftCtStateIn(bits uint32) []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{
			SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(bits), Xor: binaryutil.NativeEndian.PutUint32(0),
		},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
	}
}

// VXLANPort is the UDP port of every VXLAN device the lab creates (the
// IANA port).
const VXLANPort = 4789

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
	return append(NftIPInPrefix(12, PodSupernet), NftIPInPrefix(16, PodSupernet)...)
}

// NftIPInPrefix matches the IPv4 address at offset (12 saddr, 16 daddr) of the
// network header against p.
func NftIPInPrefix(offset uint32, p netip.Prefix) []expr.Any {
	mask := ipNet(p).Mask
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte(mask), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: p.Masked().Addr().AsSlice()},
	}
}
