package datapaths

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/lab"
)

func init() {
	lab.Register(func() lab.Datapath { return &bridged{} })
	lab.Register(func() lab.Datapath { return &bridged{notrack: true} })
	lab.Register(func() lab.Datapath { return &bridged{overlay: true} })
	lab.Register(func() lab.Datapath { return &bridged{overlay: true, notrack: true} })
}

// bridged is the flannel family: pods on a Linux bridge per node with a /24
// pod subnet per node. Without overlay (flannel host-gw, "bridge") the nodes
// route each other's pod subnet via the wire; with overlay (flannel vxlan,
// "vxlan") they route it through a VXLAN device over the wire and the pod
// MTU is lowered by the encapsulation overhead.
//
// As Kubernetes requires, the nodes run with br_netfilter
// (bridge-nf-call-iptables=1), so bridged pod traffic crosses the IPv4
// netfilter hooks too, and carry the same kube-proxy-style nft forward
// chain as veth-routing: conntrack is engaged for every pod connection,
// same-node ones included. The notrack variants mark pod-to-pod traffic
// (and, with the overlay, the VXLAN UDP packets between the nodes) NOTRACK.
type bridged struct{ overlay, notrack bool }

func (b *bridged) Name() string {
	n := "bridge"
	if b.overlay {
		n = "vxlan"
	}
	if b.notrack {
		n += "-notrack"
	}
	return n
}

func (b *bridged) Description() string {
	d := "flannel host-gw style: pods on a Linux bridge, pod subnets routed between nodes via the wire"
	if b.overlay {
		d = "flannel vxlan style: pods on a bridge, node-to-node pod traffic encapsulated in VXLAN over the wire"
	}
	if b.notrack {
		if b.overlay {
			return d + "; br_netfilter and nft forward chain, pod traffic and the VXLAN UDP packets marked NOTRACK (conntrack bypassed)"
		}
		return d + "; br_netfilter and nft forward chain, pod traffic marked NOTRACK (conntrack bypassed)"
	}
	return d + "; br_netfilter, kube-proxy-style nft forward chain, conntrack engaged"
}

// Claims: conntrack engaged unless notrack, VXLAN with the overlay.
func (b *bridged) Claims() lab.PathClaims {
	return lab.PathClaims{Conntrack: !b.notrack, NftForward: true, VXLAN: b.overlay}
}

func (b *bridged) PacketPath() string {
	nf := "nft forward, conntrack"
	if b.notrack {
		nf = "nft raw notrack, forward"
	}
	if b.overlay {
		return "client pod eth0 -> veth -> node1 cnb0 bridge -> node1 IP stack (" + nf + ") -> vxlan0 (encap, UDP 4789) -> wire0 -> " +
			"node2 wire0 -> UDP -> vxlan0 (decap) -> node2 IP stack (" + nf + ") -> cnb0 bridge -> veth -> server pod eth0 " +
			"(same node: client pod -> veth -> cnb0 bridge (br_netfilter: " + nf + ") -> veth -> server pod, no routing)"
	}
	return "client pod eth0 -> veth -> node1 cnb0 bridge -> node1 IP stack (" + nf + ") -> wire0 -> node2 IP stack (" + nf + ") -> " +
		"cnb0 bridge -> veth -> server pod eth0 (same node: client pod -> veth -> cnb0 bridge (br_netfilter: " + nf + ") -> veth -> server pod, no routing)"
}

func (b *bridged) Probe() error {
	if err := lab.ProbeLink("Linux bridge", &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "probe0"}}); err != nil {
		return err
	}
	if err := probeConntrack(); err != nil {
		return err
	}
	if err := probeBrNetfilter(); err != nil {
		return err
	}
	if b.overlay {
		return lab.ProbeLink("VXLAN device", &netlink.Vxlan{
			LinkAttrs: netlink.LinkAttrs{Name: "probe1"},
			VxlanId:   42, Port: 4789, Group: net.IP(lab.WireIPs[1].AsSlice()),
		})
	}
	return nil
}

// podMTU is the MTU of the pods and bridges: the wire MTU, minus the VXLAN
// overhead with the overlay.
func (b *bridged) podMTU(wire int) int {
	if b.overlay {
		return wire - lab.VXLANOverhead
	}
	return wire
}

func (b *bridged) Setup(ctx context.Context, env *lab.Env) (*lab.Topology, error) {
	mtu := b.podMTU(env.WireMTU)
	if mtu < 576 {
		return nil, fmt.Errorf("%s: wire MTU %d leaves pod MTU %d, below 576", b.Name(), env.WireMTU, mtu)
	}
	nodes, err := lab.BuildNodes(ctx, env)
	if err != nil {
		return nil, err
	}
	for i, node := range nodes {
		if err := node.WriteSysctls(brNetfilterSysctls...); err != nil {
			return nil, err
		}
		if err := installConntrackRules(node, conntrackRules{notrack: b.notrack, notrackVXLAN: b.notrack && b.overlay}); err != nil {
			return nil, err
		}
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: lab.BridgeIf, MTU: mtu}}
		if err := node.Handle().LinkAdd(br); err != nil {
			return nil, fmt.Errorf("create bridge %s in %s: %w", lab.BridgeIf, node.Name, err)
		}
		if err := node.AddrAdd(lab.BridgeIf, netip.PrefixFrom(lab.GatewayIP(i), lab.PodCIDRs[i].Bits())); err != nil {
			return nil, err
		}
		if err := node.LinkUp(lab.BridgeIf); err != nil {
			return nil, err
		}
	}
	podNS := map[string]*lab.NS{}
	for _, p := range lab.StandardPods() {
		node := nodes[p.Node]
		ns, err := env.NewNS(ctx, p.Role)
		if err != nil {
			return nil, err
		}
		podNS[p.Role] = ns
		if p.Role != lab.RoleServer {
			if err := ns.WriteSysctls(lab.ClientSysctls...); err != nil {
				return nil, err
			}
		}
		host, err := lab.AddVethToPod(node, ns, p.HostIf(), mtu)
		if err != nil {
			return nil, err
		}
		br, err := node.Handle().LinkByName(lab.BridgeIf)
		if err != nil {
			return nil, fmt.Errorf("find %s in %s: %w", lab.BridgeIf, node.Name, err)
		}
		if err := node.Handle().LinkSetMaster(host, br); err != nil {
			return nil, fmt.Errorf("attach %s to bridge %s in %s: %w", p.HostIf(), lab.BridgeIf, node.Name, err)
		}
		if err := node.LinkUp(p.HostIf()); err != nil {
			return nil, err
		}
		if err := ns.AddrAdd(lab.PodIf, netip.PrefixFrom(p.IP, lab.PodCIDRs[p.Node].Bits())); err != nil {
			return nil, err
		}
		if err := ns.RouteAdd(netip.MustParsePrefix("0.0.0.0/0"), lab.GatewayIP(p.Node), lab.PodIf, false); err != nil {
			return nil, err
		}
	}
	for i, node := range nodes {
		other := 1 - i
		if !b.overlay {
			if err := node.RouteAdd(lab.PodCIDRs[other], lab.WireIPs[other], lab.WireIf, false); err != nil {
				return nil, err
			}
			continue
		}
		wire, err := node.Handle().LinkByName(lab.WireIf)
		if err != nil {
			return nil, fmt.Errorf("find %s in %s: %w", lab.WireIf, node.Name, err)
		}
		vx := &netlink.Vxlan{
			LinkAttrs:    netlink.LinkAttrs{Name: lab.VXLANIf, MTU: mtu},
			VxlanId:      42,
			VtepDevIndex: wire.Attrs().Index,
			SrcAddr:      net.IP(lab.WireIPs[i].AsSlice()),
			Group:        net.IP(lab.WireIPs[other].AsSlice()), // unicast: the remote VTEP
			Port:         lab.VXLANPort,
			Learning:     true,
		}
		if err := node.Handle().LinkAdd(vx); err != nil {
			return nil, fmt.Errorf("create vxlan %s in %s: %w", lab.VXLANIf, node.Name, err)
		}
		if err := node.AddrAdd(lab.VXLANIf, netip.PrefixFrom(lab.OverlayIPs[i], lab.OverlayNet.Bits())); err != nil {
			return nil, err
		}
		if err := node.LinkUp(lab.VXLANIf); err != nil {
			return nil, err
		}
		if err := node.RouteAdd(lab.PodCIDRs[other], lab.OverlayIPs[other], lab.VXLANIf, false); err != nil {
			return nil, err
		}
	}
	return &lab.Topology{Paths: lab.PodEndpoints(podNS), PodMTU: mtu, PathMTU: mtu, Nodes: nodes}, nil
}

func (*bridged) Teardown(context.Context) error { return nil }
