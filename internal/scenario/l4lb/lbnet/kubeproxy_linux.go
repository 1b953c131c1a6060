package lbnet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/lab"
)

// The kubeproxy LB mode: kube-proxy's iptables-mode rules for a
// LoadBalancer service whose endpoints are on other nodes, written in
// nftables (the shape iptables-nft gives them) in the LB node's table
// lab.NftTable:
//
//	prerouting  raw    kp-firewall  ip daddr VIP ip saddr != CLIENTS counter drop   (firewall on)
//	prerouting  dstnat kp-services  ip daddr VIP tcp dport P jump kp-svc-P          (KUBE-SERVICES)
//	            kp-svc-P            numgen random mod 2 == 0 goto kp-sep-P-0          (KUBE-SVC: statistic random 1/2)
//	                                goto kp-sep-P-1
//	            kp-sep-P-i          meta mark |= 0x4000; counter dnat to BACKEND:P  (KUBE-MARK-MASQ, KUBE-SEP)
//	forward     filter kp-forward   ct state invalid drop; counters to/from the pods (KUBE-FORWARD)
//	postrouting srcnat kp-postrouting meta mark & 0x4000 counter masquerade     (KUBE-POSTROUTING)
//
// The LB's stack forwards (ip_forward 1 in this mode only) by routes to
// the backends: via the worker on the segment (direct) or via the
// worker's tunnel address on a plain VXLAN device (vxlan).

// Comments (counter names) of the kubeproxy mode's rules.
const (
	ruleKPFirewall = "kp-fw-drop"
	ruleKPService  = "kp-service"
	ruleKPDNAT     = "kp-dnat"
	ruleKPMasq     = "kp-masq"
	ruleKPInvalid  = "kp-ct-invalid"
	ruleKPFwd      = "kp-to-pods"
	ruleKPRev      = "kp-from-pods"
)

// kpMasqMark is kube-proxy's masquerade mark (KUBE-MARK-MASQ).
const kpMasqMark = 0x4000

// podNet holds the backends (both workers' pod CIDRs).
var podNet = netip.MustParsePrefix("198.19.0.0/16")

// kpFirewallChain is the chain the firewall's rule lives in (flushed to
// turn it off).
func kpFirewallChain(t *nftables.Table) *nftables.Chain {
	return &nftables.Chain{
		Name: "kp-firewall", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityRaw,
	}
}

// applyKubeProxy sets up the kubeproxy mode (the caller released the
// previous mode): routes, forwarding, the VXLAN device with vxlan, and the
// rules.
func (l *LB) applyKubeProxy(m Mode) error {
	if m.Transport == VXLAN {
		if err := l.addTunnels(false); err != nil {
			return err
		}
	}
	for i, be := range BackendIPs {
		via, dev := WorkerIPs[i], extIf
		if m.Transport == VXLAN {
			via, dev = WorkerTunIPs[i], lab.VXLANIf
		}
		if err := l.lbNode.RouteAdd(lab.Host32(be), via, dev, false); err != nil {
			return err
		}
	}
	if err := l.lbNode.WriteSysctls([2]string{"net/ipv4/ip_forward", "1"}); err != nil {
		return err
	}
	c, err := nftables.New(nftables.WithNetNSFd(l.lbNode.Fd()))
	if err != nil {
		return fmt.Errorf("nftables connection in %s: %w", l.lbNode.Name, err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: lab.NftTable})
	fw := c.AddChain(kpFirewallChain(t))
	if m.Firewall {
		c.AddRule(kpFirewallRule(t, fw))
	}
	svc := c.AddChain(&nftables.Chain{
		Name: "kp-services", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest,
	})
	for _, p := range Ports {
		svcChain := c.AddChain(&nftables.Chain{Name: fmt.Sprintf("kp-svc-%d", p), Table: t})
		n := len(BackendIPs)
		for i, be := range BackendIPs {
			sep := c.AddChain(&nftables.Chain{Name: fmt.Sprintf("kp-sep-%d-%d", p, i), Table: t})
			c.AddRule(lab.NftRule(t, sep, "kp-mark-masq", setMarkBits(kpMasqMark)...))
			c.AddRule(lab.NftRule(t, sep, ruleKPDNAT, &expr.Counter{},
				&expr.Immediate{Register: 1, Data: be.AsSlice()},
				&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(p)},
				&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true}))
			// iptables' cascade: endpoint i with probability 1/(n-i), the
			// last one unconditionally.
			var pick []expr.Any
			if i < n-1 {
				pick = []expr.Any{
					&expr.Numgen{Register: 1, Modulus: uint32(n - i), Type: unix.NFT_NG_RANDOM},
					&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
				}
			}
			c.AddRule(lab.NftRule(t, svcChain, "kp-endpoint", append(pick, &expr.Verdict{Kind: expr.VerdictGoto, Chain: sep.Name})...))
		}
		c.AddRule(lab.NftRule(t, svc, ruleKPService, append(append(lab.NftIPInPrefix(16, lab.Host32(VIP)), tcpDport(p)...),
			&expr.Verdict{Kind: expr.VerdictJump, Chain: svcChain.Name})...))
	}
	accept := nftables.ChainPolicyAccept
	fwd := c.AddChain(&nftables.Chain{
		Name: "kp-forward", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &accept,
	})
	c.AddRule(lab.NftRule(t, fwd, ruleKPInvalid, append(lab.NftCtStateIn(expr.CtStateBitINVALID), &expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop})...))
	c.AddRule(lab.NftRule(t, fwd, ruleKPFwd, append(lab.NftIPInPrefix(16, podNet), &expr.Counter{})...))
	c.AddRule(lab.NftRule(t, fwd, ruleKPRev, append(lab.NftIPInPrefix(12, podNet), &expr.Counter{})...))
	post := c.AddChain(&nftables.Chain{
		Name: "kp-postrouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource,
	})
	c.AddRule(lab.NftRule(t, post, ruleKPMasq,
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(kpMasqMark), Xor: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Counter{}, &expr.Masq{}))
	if err := c.Flush(); err != nil {
		return fmt.Errorf("install the kube-proxy rules in %s: %w", l.lbNode.Name, err)
	}
	l.kpFWBase = 0
	return nil
}

// kpFirewallRule drops service packets from outside the allowed prefix
// before conntrack sees them.
func kpFirewallRule(t *nftables.Table, ch *nftables.Chain) *nftables.Rule {
	allow := allowPrefixes[0]
	notAllowed := lab.NftIPInPrefix(12, allow)
	notAllowed[len(notAllowed)-1].(*expr.Cmp).Op = expr.CmpOpNeq
	return lab.NftRule(t, ch, ruleKPFirewall, append(append(lab.NftIPInPrefix(16, lab.Host32(VIP)), notAllowed...),
		&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop})...)
}

// setMarkBits ORs bits into the packet's mark.
func setMarkBits(bits uint32) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(^bits), Xor: binaryutil.NativeEndian.PutUint32(bits)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1},
	}
}

// tcpDport matches TCP packets to port.
func tcpDport(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
	}
}

// setKubeProxyFirewall adds or removes the firewall's rule; the drops it
// counted so far are kept in kpFWBase.
func (l *LB) setKubeProxyFirewall(on bool) error {
	cnt, err := lab.NftCounters(l.lbNode)
	if err != nil {
		return err
	}
	c, err := nftables.New(nftables.WithNetNSFd(l.lbNode.Fd()))
	if err != nil {
		return fmt.Errorf("nftables connection in %s: %w", l.lbNode.Name, err)
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: lab.NftTable}
	ch := kpFirewallChain(t)
	c.FlushChain(ch)
	if on {
		c.AddRule(kpFirewallRule(t, ch))
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("kube-proxy firewall %v in %s: %w", on, l.lbNode.Name, err)
	}
	l.kpFWBase += cnt[ruleKPFirewall]
	return nil
}

// kubeProxyCounters reads the kubeproxy mode's rule counters.
func (l *LB) kubeProxyCounters() (Counters, error) {
	cnt, err := lab.NftCounters(l.lbNode)
	if err != nil {
		return Counters{}, err
	}
	return Counters{
		Forward: cnt[ruleKPFwd], Reverse: cnt[ruleKPRev], NewFlows: cnt[ruleKPDNAT],
		KubeProxyDNAT: cnt[ruleKPDNAT], KubeProxyMasq: cnt[ruleKPMasq],
		FirewallDrops: l.kpFWBase + cnt[ruleKPFirewall],
	}, nil
}

// releaseKubeProxy removes what applyKubeProxy added but the VXLAN device
// (release deletes it): the table, the routes, forwarding. Missing pieces
// are not errors (a failed apply).
func (l *LB) releaseKubeProxy() error {
	var errs []error
	c, err := nftables.New(nftables.WithNetNSFd(l.lbNode.Fd()))
	if err != nil {
		errs = append(errs, fmt.Errorf("nftables connection in %s: %w", l.lbNode.Name, err))
	} else if _, err := c.ListTableOfFamily(lab.NftTable, nftables.TableFamilyIPv4); err == nil {
		c.DelTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: lab.NftTable})
		if err := c.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("delete table %s in %s: %w", lab.NftTable, l.lbNode.Name, err))
		}
	}
	for _, be := range BackendIPs {
		r := &netlink.Route{Dst: &net.IPNet{IP: net.IP(be.AsSlice()), Mask: net.CIDRMask(32, 32)}}
		if err := l.lbNode.Handle().RouteDel(r); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("delete route to %v in %s: %w", be, l.lbNode.Name, err))
		}
	}
	if err := l.lbNode.WriteSysctls([2]string{"net/ipv4/ip_forward", "0"}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ConntrackVIPEntries counts the LB node's conntrack entries whose
// original destination is the VIP (kubeproxy: one per connection the
// rules translated and the kernel still tracks, TIME_WAIT included; 0 in
// the BPF modes, whose LB never engages conntrack).
func (l *LB) ConntrackVIPEntries() (int, error) {
	flows, err := l.lbNode.Handle().ConntrackTableList(netlink.ConntrackTable, netlink.FAMILY_V4)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
			return 0, nil
		}
		return 0, fmt.Errorf("list conntrack in %s: %w", l.lbNode.Name, err)
	}
	vip := net.IP(VIP.AsSlice())
	n := 0
	for _, f := range flows {
		if f.Forward.DstIP.Equal(vip) {
			n++
		}
	}
	return n, nil
}
