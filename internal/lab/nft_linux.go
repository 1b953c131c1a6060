package lab

import (
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
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
