package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/nsrun"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Interface names inside the lab's namespaces (IFNAMSIZ: at most 15 bytes).
const (
	WireIf   = "wire0"  // node uplink: one end of the node1<->node2 veth
	PodIf    = "eth0"   // a pod's interface
	BridgeIf = "cnb0"   // per-node bridge (bridge, vxlan)
	VXLANIf  = "vxlan0" // per-node VXLAN device
)

// Addressing (198.18.0.0/15 is reserved for benchmarking, RFC 2544). Every
// datapath has its own namespaces, so they all reuse the same plan.
var (
	WireIPs     = [2]netip.Addr{netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")}
	WirePrefix  = netip.MustParsePrefix("198.18.0.0/24")
	OverlayIPs  = [2]netip.Addr{netip.MustParseAddr("198.18.1.1"), netip.MustParseAddr("198.18.1.2")}
	OverlayNet  = netip.MustParsePrefix("198.18.1.0/24")
	PodCIDRs    = [2]netip.Prefix{netip.MustParsePrefix("198.19.1.0/24"), netip.MustParsePrefix("198.19.2.0/24")}
	PodSupernet = netip.MustParsePrefix("198.19.0.0/16")
	// CalicoGateway is the fake next hop of L3 (veth-routing) pods, answered
	// by proxy ARP on the node's side of the pod veth.
	CalicoGateway = netip.MustParseAddr("169.254.1.1")
)

// VXLANOverhead is the IPv4 VXLAN encapsulation overhead: outer IPv4 (20) +
// UDP (8) + VXLAN (8) + inner Ethernet (14).
const VXLANOverhead = 50

// pods of every pod datapath: a client on each node and the server on node2.
var pods = []PodSpec{
	{Role: RoleClient1, Node: 0, IP: netip.MustParseAddr("198.19.1.10")},
	{Role: RoleClient2, Node: 1, IP: netip.MustParseAddr("198.19.2.10")},
	{Role: RoleServer, Node: 1, IP: netip.MustParseAddr("198.19.2.20")},
}

// StandardPods are the pods every pod datapath builds (a client on each
// node, the server on node2), in that order; a copy.
func StandardPods() []PodSpec { return slices.Clone(pods) }

// validatePods checks extra pods against the standard ones.
func validatePods(specs []PodSpec) error {
	seen := map[string]bool{}
	ips := map[netip.Addr]bool{}
	for _, p := range pods {
		seen[p.Role], ips[p.IP] = true, true
	}
	for _, p := range specs {
		if len(p.Role) == 0 || len(p.Role) > 8 || strings.Trim(p.Role, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			return fmt.Errorf("extra pod %q: role must be 1 to 8 lower-case letters or digits", p.Role)
		}
		if p.Node != 0 && p.Node != 1 {
			return fmt.Errorf("extra pod %s: node %d, want 0 or 1", p.Role, p.Node)
		}
		if !PodCIDRs[p.Node].Contains(p.IP) || p.IP == GatewayIP(p.Node) || p.IP == PodCIDRs[p.Node].Addr() {
			return fmt.Errorf("extra pod %s: address %v is not a pod address of node %d (%v)", p.Role, p.IP, p.Node+1, PodCIDRs[p.Node])
		}
		if seen[p.Role] || ips[p.IP] {
			return fmt.Errorf("extra pod %s (%v): role or address already in use", p.Role, p.IP)
		}
		seen[p.Role], ips[p.IP] = true, true
	}
	return nil
}

// GatewayIP is the bridge address of a node's pod subnet (the pods'
// default gateway in the bridged datapaths).
func GatewayIP(node int) netip.Addr { return PodCIDRs[node].Addr().Next() }

// PodEndpoints returns the cross-node and same-node paths of the standard
// pods (StandardPods), given their namespaces by role.
func PodEndpoints(podNS map[string]*NS) []Endpoint {
	server := pods[2]
	return []Endpoint{
		{Kind: CrossNode, Client: podNS[RoleClient1], Server: podNS[RoleServer], ServerIP: server.IP},
		{Kind: SameNode, Client: podNS[RoleClient2], Server: podNS[RoleServer], ServerIP: server.IP},
	}
}

// NewNS creates a namespace for role of env's datapath and tracks it so the
// lab deletes it on Down or on a failed Up. It sets lo up and disables IPv6
// so that no router solicitation or DAD packet crosses a measured path.
func (e *Env) NewNS(ctx context.Context, role string) (*NS, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name := NSName(e.RunID, e.Datapath, role)
	ns, err := createNS(name)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.namespaces = append(e.namespaces, ns)
	e.mu.Unlock()
	e.Logger.Debug("created netns", "name", name)
	if err := ns.WriteSysctls(
		[2]string{"net/ipv6/conf/all/disable_ipv6", "1"},
		[2]string{"net/ipv6/conf/default/disable_ipv6", "1"},
	); err != nil {
		return nil, err
	}
	return ns, nil
}

// NodeSysctls are set in every node namespace (write them with
// WriteSysctls before creating devices): forwarding, and fast reuse of
// TIME_WAIT ports (node1 is the baseline's client). Copy before appending.
var NodeSysctls = [][2]string{
	{"net/ipv4/ip_forward", "1"},
	{"net/ipv4/tcp_tw_reuse", "1"},
}

// ClientSysctls are set in every namespace a benchmark client runs in:
// tcp_crr opens tens of thousands of connections per second; icmp_echo
// sends from an ICMP datagram socket, which the kernel grants only to
// groups in ping_group_range (root's included). Copy before appending.
var ClientSysctls = [][2]string{
	{"net/ipv4/tcp_tw_reuse", "1"},
	{"net/ipv4/ping_group_range", "0 2147483647"},
}

// BuildNodes creates node1 and node2 joined by the wire, with addresses
// WireIPs, forwarding on, wire MTU env.WireMTU and wire mode env.Wire: the
// ground every datapath but a scenario's own builds on.
func BuildNodes(ctx context.Context, env *Env) ([2]*NS, error) {
	var nodes [2]*NS
	for i, role := range []string{RoleNode1, RoleNode2} {
		ns, err := env.NewNS(ctx, role)
		if err != nil {
			return nodes, err
		}
		if err := ns.WriteSysctls(NodeSysctls...); err != nil {
			return nodes, err
		}
		nodes[i] = ns
	}
	if err := ctx.Err(); err != nil {
		return nodes, err
	}
	wire := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: WireIf, MTU: env.WireMTU},
		PeerName:      WireIf,
		PeerMTU:       uint32(env.WireMTU),
		PeerNamespace: netlink.NsFd(nodes[1].Fd()),
	}
	if err := nodes[0].handle.LinkAdd(wire); err != nil {
		return nodes, fmt.Errorf("create wire veth %s in %s (peer in %s): %w", WireIf, nodes[0].Name, nodes[1].Name, err)
	}
	for i, n := range nodes {
		if err := n.AddrAdd(WireIf, netip.PrefixFrom(WireIPs[i], WirePrefix.Bits())); err != nil {
			return nodes, err
		}
		if err := n.LinkUp(WireIf); err != nil {
			return nodes, err
		}
	}
	if err := configureWire(nodes, env.Wire); err != nil {
		return nodes, err
	}
	return nodes, nil
}

// AddVethToPod connects a pod namespace to its node: a veth pair with
// hostName in node and PodIf in podNS, both with the given MTU. It sets the
// pod's end up and returns the node's end, still down, for the caller to
// address and set up.
func AddVethToPod(node, podNS *NS, hostName string, mtu int) (netlink.Link, error) {
	v := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: hostName, MTU: mtu},
		PeerName:      PodIf,
		PeerMTU:       uint32(mtu),
		PeerNamespace: netlink.NsFd(podNS.Fd()),
	}
	if err := node.handle.LinkAdd(v); err != nil {
		return nil, fmt.Errorf("create veth %s in %s (peer %s in %s): %w", hostName, node.Name, PodIf, podNS.Name, err)
	}
	if err := podNS.LinkUp(PodIf); err != nil {
		return nil, err
	}
	l, err := node.handle.LinkByName(hostName)
	if err != nil {
		return nil, fmt.Errorf("find %s in %s: %w", hostName, node.Name, err)
	}
	return l, nil
}

// LinkUp sets the device name of ns up.
func (ns *NS) LinkUp(name string) error {
	l, err := ns.handle.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find %s in %s: %w", name, ns.Name, err)
	}
	if err := ns.handle.LinkSetUp(l); err != nil {
		return fmt.Errorf("set %s up in %s: %w", name, ns.Name, err)
	}
	return nil
}

// AddrAdd adds address p (the address and its prefix length) to the
// device ifName of ns.
func (ns *NS) AddrAdd(ifName string, p netip.Prefix) error {
	l, err := ns.handle.LinkByName(ifName)
	if err != nil {
		return fmt.Errorf("find %s in %s: %w", ifName, ns.Name, err)
	}
	a := &netlink.Addr{IPNet: ipNet(p)}
	if err := ns.handle.AddrAdd(l, a); err != nil {
		return fmt.Errorf("add address %s to %s in %s: %w", p, ifName, ns.Name, err)
	}
	return nil
}

// RouteAdd adds a route in ns to dst via gw (invalid gw: directly
// connected, link scope) on device ifName; onlink sets the onlink flag
// (a gateway outside every prefix of the device).
func (ns *NS) RouteAdd(dst netip.Prefix, gw netip.Addr, ifName string, onlink bool) error {
	l, err := ns.handle.LinkByName(ifName)
	if err != nil {
		return fmt.Errorf("find %s in %s: %w", ifName, ns.Name, err)
	}
	r := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: ipNet(dst)}
	if gw.IsValid() {
		r.Gw = net.IP(gw.AsSlice())
	} else {
		r.Scope = netlink.SCOPE_LINK
	}
	if onlink {
		r.Flags = int(netlink.FLAG_ONLINK)
	}
	if err := ns.handle.RouteAdd(r); err != nil {
		via := ""
		if gw.IsValid() {
			via = " via " + gw.String()
		}
		return fmt.Errorf("add route %s%s dev %s in %s: %w", dst, via, ifName, ns.Name, err)
	}
	return nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// Host32 is the host prefix of a (/32 for IPv4).
func Host32(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

// inScratchNS runs f on a locked thread moved into a new, anonymous network
// namespace, with a netlink handle there. The thread is never unlocked, so
// the runtime terminates it afterwards and the namespace disappears with it:
// nothing is left behind whatever f did.
func inScratchNS(f func(h *netlink.Handle) error) error {
	return nsrun.Scratch(func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return fmt.Errorf("netlink handle in scratch netns: %w", err)
		}
		defer h.Close()
		return f(h)
	})
}

// ProbeLink checks, in a scratch namespace, that the kernel can create a
// link of l's type (for a datapath's Probe): an *UnsupportedError naming
// feature when it cannot.
func ProbeLink(feature string, l netlink.Link) error {
	return inScratchNS(func(h *netlink.Handle) error {
		if err := h.LinkAdd(l); err != nil {
			if errors.Is(err, unix.EPERM) {
				return fmt.Errorf("create %s link: %w (needs CAP_NET_ADMIN)", l.Type(), err)
			}
			return &UnsupportedError{Feature: feature, Reason: fmt.Sprintf("create %s link: %v", l.Type(), err)}
		}
		return nil
	})
}
