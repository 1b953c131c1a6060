package agent

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/cnibench/cnibench/internal/ipsec"
)

// TunnelOverheads are the bytes each encapsulation adds around an inner
// packet, over an IPv4 and over an IPv6 underlay ([0] and [1]): what a
// tunnel's MTU must leave below the underlay's. Keyed by the netlink link
// kind (Link.Type). The IPv6 figure is the IPv4 one with an outer IPv6
// header (40 bytes) instead of an IPv4 one (20); see EncapOverhead for
// the headers of each. Geneve's options are not counted (Cilium reserves
// 50 for its tunnels, Geneve's included: cilium/cilium pkg/mtu/mtu.go,
// TunnelOverhead). WireGuard's 60/80 are its headers (outer IP, UDP 8,
// data header 16, Poly1305 tag 16); CNIs reserve more: see CNIOverhead.
// IPv6-in-IPv6 tunnels (ip6tnl, ip6gre, ip6gretap) carry an outer IPv6
// header whatever the family.
var TunnelOverheads = map[string][2]int{
	"vxlan":     {50, 70},
	"geneve":    {50, 70},
	"wireguard": {60, 80},
	"ipip":      {20, 40},
	"sit":       {20, 40},
	"gre":       {24, 44},
	"gretap":    {38, 58},
	"ip6tnl":    {40, 40},
	"ip6gre":    {44, 44},
	"ip6gretap": {58, 58},
}

// cniWireGuardReserve is what CNIs that run WireGuard reserve for it
// whatever the underlay's family: the IPv6 figure, 80.
//
//   - Cilium: WireguardOverhead = 80 ("Outer IPv4 or IPv6 header: 40B"),
//     cilium/cilium pkg/mtu/mtu.go; its route MTU is the device's less 80,
//     less TunnelOverhead (50) more when it also tunnels (getRouteMTU).
//   - flannel's wireguard backend: overhead = 80 ("20-byte IPv4 header or
//     40 byte IPv6 header"), flannel-io/flannel
//     pkg/backend/wireguard/wireguard_network.go, MTU() = mtu - overhead.
var cniWireGuardReserve = map[string]int{"cilium": 80, "flannel": 80}

// ciliumIPsecOverhead is Cilium's reservation for IPsec
// (EncryptionIPsecOverhead, cilium/cilium pkg/mtu/mtu.go: outer IP 20, SPI
// 4, sequence 4, next header 1, ICV 16, padding 16, 128-bit auth 16), for
// its default 16-byte authentication key.
const ciliumIPsecOverhead = 77

// ESPOverhead is roughly what ESP in tunnel mode adds for a cipher of
// internal/ipsec (ipsec.AESGCM128, ipsec.AESCBCHMACSHA256) on a 1500-byte
// wire, over IPv4 or IPv6: the outer header, ESP's header, IV, padding
// (at most a block) and ICV. false for an unknown cipher.
func ESPOverhead(alg ipsec.Algorithm, ipv6 bool) (int, bool) {
	mtu := ipsec.PodMTU(1500, alg)
	if mtu == 0 {
		return 0, false
	}
	o := 1500 - mtu
	if ipv6 {
		o += 20
	}
	return o, true
}

// TunnelOverhead is what encapsulation typ (a Link.Type) adds over an IPv6
// underlay if ipv6, else IPv4; false for a type that is not a tunnel.
func TunnelOverhead(typ string, ipv6 bool) (int, bool) {
	o, ok := TunnelOverheads[typ]
	if !ok {
		return 0, false
	}
	if ipv6 {
		return o[1], true
	}
	return o[0], true
}

// CNIOverhead is what cni (cni.Info.Name) leaves below the node's MTU for
// the tunnels that are up (tunnel types, e.g. "vxlan", "wireguard") and,
// for cilium, IPsec (ipsecOn): the headers' sizes of TunnelOverheads,
// except where the CNI's own code reserves otherwise (WireGuard: 80
// whatever the family for cilium and flannel; cilium's IPsec 77 and its
// WireGuard on top of its tunnel). With several tunnels, the largest,
// unless the CNI stacks them (cilium). how says which figures were used.
func CNIOverhead(cni string, tunnels []string, ipv6, ipsecOn bool) (overhead int, how string) {
	var parts []string
	stack := cni == "cilium"
	for _, typ := range tunnels {
		o, ok := TunnelOverhead(typ, ipv6)
		if !ok {
			continue
		}
		src := typ + " " + fmt.Sprint(o)
		if r, ok := cniWireGuardReserve[cni]; ok && typ == "wireguard" {
			o, src = r, fmt.Sprintf("wireguard %d (%s reserves %d whatever the family)", r, cni, r)
		}
		parts = append(parts, src)
		if stack {
			overhead += o
		} else {
			overhead = max(overhead, o)
		}
	}
	if ipsecOn && cni == "cilium" {
		overhead += ciliumIPsecOverhead
		parts = append(parts, fmt.Sprintf("ipsec %d (cilium's reservation)", ciliumIPsecOverhead))
	}
	fam := "IPv4"
	if ipv6 {
		fam = "IPv6"
	}
	if len(parts) == 0 {
		return 0, "no encapsulation"
	}
	join := " or "
	if stack {
		join = " + "
	}
	return overhead, strings.Join(parts, join) + " over " + fam
}

// UnderlayIPv6 tells whether the node's address (Addr, its InternalIP) is
// IPv6: the tunnels' outer headers are then IPv6.
func (in *Inspect) UnderlayIPv6() bool {
	a, err := netip.ParseAddr(in.Addr)
	return err == nil && a.Is6() && !a.Is4In6()
}

// EncapsulationFor is Encapsulation with the overhead that cni reserves
// (CNIOverhead) over the node's address family: the tunnels that are up
// ("vxlan flannel.1"), the overhead, and how it was reckoned.
func (in *Inspect) EncapsulationFor(cni string, ipsecOn bool) (tunnels []string, overhead int, how string) {
	var types []string
	for _, e := range in.Tunnels {
		if l, ok := in.Link(e.Name); ok && l.State != "up" {
			continue
		}
		tunnels = append(tunnels, e.Type+" "+e.Name)
		types = append(types, e.Type)
	}
	overhead, how = CNIOverhead(cni, types, in.UnderlayIPv6(), ipsecOn)
	return tunnels, overhead, how
}
