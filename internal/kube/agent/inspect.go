package agent

import (
	"net/netip"
	"strings"
)

// Inspect describes the network namespace the agent runs in
// (`agent inspect`).
type Inspect struct {
	Schema string `json:"schema"`
	// Links are every link of the namespace, by index.
	Links []Link `json:"links"`
	// DefaultRoute and DefaultRoute6 are the main table's IPv4 and IPv6
	// default routes (absent when there is none).
	DefaultRoute  *Route `json:"default_route,omitempty"`
	DefaultRoute6 *Route `json:"default_route6,omitempty"`
	// Addr is the address asked about (--addr); AddrLinkName names the
	// link that holds it, or AddrError says that none does.
	Addr         string `json:"addr,omitempty"`
	AddrLinkName string `json:"addr_link,omitempty"`
	AddrError    string `json:"addr_error,omitempty"`
	// Tunnels are the tunnel links (EncapOverhead's types), up or down.
	Tunnels []Encap `json:"encapsulation"`
	// Error says why the namespace could not be read.
	Error string `json:"error,omitempty"`
}

// Link is one network interface.
type Link struct {
	Name  string `json:"name"`
	Index int    `json:"index"`
	// Type is netlink's kind: "device" (a physical NIC or loopback),
	// "veth", "bridge", "vxlan", "geneve", "wireguard", "ipip", "dummy",
	// "tuntap", ...
	Type string `json:"type"`
	MTU  int    `json:"mtu"`
	// State is "up" when the link is administratively up (IFF_UP), else
	// "down"; OperState is the kernel's operational state ("up",
	// "down", "lower-layer-down", "unknown" for lo and tunnels, ...).
	State     string `json:"state"`
	OperState string `json:"oper_state"`
	MAC       string `json:"mac,omitempty"`
	// Master is the bridge or bond the link is enslaved to.
	Master string `json:"master,omitempty"`
	// Addrs are the link's addresses as CIDR strings, e.g. "10.0.0.1/24".
	Addrs []string `json:"addrs"`
	// VNI and Port are a vxlan's or geneve's network identifier and UDP
	// destination port; External marks a flow-based ("external",
	// collect-metadata) device whose VNI is set per packet.
	VNI      uint32 `json:"vni,omitempty"`
	Port     uint16 `json:"port,omitempty"`
	External bool   `json:"external,omitempty"`
}

// Route is a default route.
type Route struct {
	Dev     string `json:"dev"`
	Gateway string `json:"gateway,omitempty"`
	// MTU is the route's own MTU (0: none set, its link's applies).
	// Cilium leaves a pod's interface at the node's MTU and lowers the
	// routes' MTU by the tunnel's overhead.
	MTU int `json:"mtu,omitempty"`
}

// Encap is a tunnel link and the bytes its encapsulation adds to a packet.
type Encap struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	MTU      int    `json:"mtu"`
	Overhead int    `json:"overhead"`
	VNI      uint32 `json:"vni,omitempty"`
	Port     uint16 `json:"port,omitempty"`
	External bool   `json:"external,omitempty"`
}

// EncapOverhead is the number of bytes each tunnel type adds around an
// inner packet sent over an IPv4 underlay: what a tunnel link's MTU must
// leave below the underlay's MTU (over IPv6, add 20). Keyed by the netlink
// link kind (Link.Type). The figures are the headers' sizes:
//
//   - vxlan 50: outer IPv4 20 + UDP 8 + VXLAN 8 + the inner Ethernet
//     header 14, which the inner MTU does not count (RFC 7348; why
//     Flannel and Calico give VXLAN pods MTU 1450 on a 1500 network).
//   - geneve 50: as VXLAN, Geneve's base header is 8 bytes (RFC 8926);
//     options add to it (Cilium's DSR option 8 more), not counted here.
//   - wireguard 60: outer IPv4 20 + UDP 8 + WireGuard's data header 16 +
//     Poly1305 tag 16 (the WireGuard paper; its 1420 default MTU is
//     1500 - 80 for an IPv6 underlay).
//   - ipip 20 and sit 20: one outer IPv4 header (RFC 2003, RFC 4213).
//   - gre 24: outer IPv4 20 + the base GRE header 4 (RFC 2784, no key or
//     sequence number); gretap 38 adds the inner Ethernet header 14.
//   - ip6tnl 40, ip6gre 44, ip6gretap 58: the same over an outer IPv6
//     header of 40 (these are IPv6 tunnels whatever the underlay).
//
// IPsec (vti, xfrm) is left out: its overhead depends on the cipher and
// padding (see ESPOverhead). TunnelOverheads has the IPv6 figures, and
// CNIOverhead what each CNI reserves.
var EncapOverhead = map[string]int{
	"vxlan":     50,
	"geneve":    50,
	"wireguard": 60,
	"ipip":      20,
	"sit":       20,
	"gre":       24,
	"gretap":    38,
	"ip6tnl":    40,
	"ip6gre":    44,
	"ip6gretap": 58,
}

// Tunnels returns the links whose type is a tunnel of EncapOverhead, in
// the order given.
func Tunnels(links []Link) []Encap {
	out := []Encap{}
	for _, l := range links {
		if o, ok := EncapOverhead[l.Type]; ok {
			out = append(out, Encap{Name: l.Name, Type: l.Type, MTU: l.MTU, Overhead: o,
				VNI: l.VNI, Port: l.Port, External: l.External})
		}
	}
	return out
}

// LinkWithAddr returns the name of the first link that holds ip (an
// IPv4-mapped IPv6 address matches its IPv4 form), or "".
func LinkWithAddr(links []Link, ip netip.Addr) string {
	ip = ip.Unmap()
	for _, l := range links {
		for _, a := range l.Addrs {
			s, _, _ := strings.Cut(a, "/")
			if x, err := netip.ParseAddr(s); err == nil && x.Unmap() == ip {
				return l.Name
			}
		}
	}
	return ""
}

// setAddr fills Addr, AddrLinkName and AddrError for ip (when valid).
func (in *Inspect) setAddr(ip netip.Addr) {
	if !ip.IsValid() {
		return
	}
	in.Addr = ip.String()
	if in.AddrLinkName = LinkWithAddr(in.Links, ip); in.AddrLinkName == "" {
		in.AddrError = "no link in this network namespace has " + in.Addr
	}
}

// Link returns the link named name.
func (in *Inspect) Link(name string) (Link, bool) {
	for _, l := range in.Links {
		if l.Name == name {
			return l, true
		}
	}
	return Link{}, false
}

// AddrLink is the name of the link that holds Addr ("" when none does or
// none was asked about).
func (in *Inspect) AddrLink() string { return in.AddrLinkName }

// AddrMTU is the MTU of the link that holds Addr (0 when none does): on a
// node, with Addr its InternalIP, the MTU of the node's network.
func (in *Inspect) AddrMTU() int {
	l, _ := in.Link(in.AddrLinkName)
	return l.MTU
}

// DefaultRouteMTU is the MTU packets on the IPv4 default route get (else
// the IPv6 one's; 0 when there is none): the route's own MTU where it sets
// one, else its link's. In a pod, the pod network's MTU.
func (in *Inspect) DefaultRouteMTU() int {
	mtu, _ := in.defaultRouteMTU()
	return mtu
}

// DefaultRouteMTUFrom says where DefaultRouteMTU comes from: "route" (the
// route's own MTU) or "interface".
func (in *Inspect) DefaultRouteMTUFrom() string {
	_, from := in.defaultRouteMTU()
	return from
}

func (in *Inspect) defaultRouteMTU() (int, string) {
	for _, r := range []*Route{in.DefaultRoute, in.DefaultRoute6} {
		if r == nil {
			continue
		}
		if l, ok := in.Link(r.Dev); ok {
			if r.MTU > 0 && (l.MTU == 0 || r.MTU < l.MTU) {
				return r.MTU, "route"
			}
			return l.MTU, "interface"
		}
		if r.MTU > 0 {
			return r.MTU, "route"
		}
	}
	return 0, ""
}

// Encapsulation describes the tunnels that are up, e.g. "vxlan flannel.1",
// and the overhead that applies: the largest of theirs (none and 0 when
// no tunnel is up; a tunnel that is down, such as the tunl0 that loading
// the ipip module creates, carries nothing).
func (in *Inspect) Encapsulation() (tunnels []string, overhead int) {
	for _, e := range in.Tunnels {
		if l, ok := in.Link(e.Name); ok && l.State != "up" {
			continue
		}
		tunnels = append(tunnels, e.Type+" "+e.Name)
		overhead = max(overhead, e.Overhead)
	}
	return tunnels, overhead
}
