package datapaths

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/lab"
)

func init() {
	lab.Register(func() lab.Datapath { return NewRouted(RoutedConfig{}) })
	lab.Register(func() lab.Datapath { return NewRouted(RoutedConfig{NoTrack: true}) })
}

// RoutedConfig configures a Calico-style L3 datapath. Datapaths built on it
// (ebpf-host-routing) set the name, description and hooks.
type RoutedConfig struct {
	// Name defaults to "veth-routing", or "veth-routing-notrack" with NoTrack.
	Name        string
	Description string
	PacketPath  string
	// NoTrack adds raw-priority NOTRACK rules for pod-to-pod traffic.
	NoTrack bool
	// Probe, if set, is checked after the routed datapath's own probe.
	Probe func() error
	// NodeReady, if set, runs for each node once its pods, routes and nft
	// rules are in place.
	NodeReady func(ctx context.Context, env *lab.Env, node RoutedNode) error
	// Teardown, if set, releases what NodeReady acquired.
	Teardown func(ctx context.Context) error
	// Claims, if set, replaces the routed datapath's path claims
	// (conntrack engaged unless NoTrack).
	Claims *lab.PathClaims
}

// RoutedNode describes a node of a routed datapath to a NodeReady hook.
type RoutedNode struct {
	Index int // 0 = node1, 1 = node2
	NS    *lab.NS
	// WireIndex is the ifindex of the node's uplink (WireIf).
	WireIndex int
	// PodIndexes are the ifindexes of the node-side pod veths.
	PodIndexes []int
}

// Routed is the veth-routing family of datapaths.
type Routed struct{ cfg RoutedConfig }

// NewRouted returns a routed datapath.
func NewRouted(cfg RoutedConfig) *Routed {
	if cfg.Name == "" {
		cfg.Name = "veth-routing"
		cfg.Description = "Calico-style L3: /32 pods, proxy ARP, routed by the node's IP stack, nftables conntrack engaged"
		cfg.PacketPath = "client pod eth0 -> veth -> node1 IP stack (nft forward, conntrack) -> wire0 -> " +
			"node2 IP stack (nft forward, conntrack) -> veth -> server pod eth0"
		if cfg.NoTrack {
			cfg.Name = "veth-routing-notrack"
			cfg.Description = "veth-routing with pod-to-pod traffic marked NOTRACK in the raw hook (conntrack bypassed)"
			cfg.PacketPath = "client pod eth0 -> veth -> node1 IP stack (nft raw notrack, forward) -> wire0 -> " +
				"node2 IP stack (nft raw notrack, forward) -> veth -> server pod eth0"
		}
	}
	return &Routed{cfg: cfg}
}

func (r *Routed) Name() string        { return r.cfg.Name }
func (r *Routed) Description() string { return r.cfg.Description }
func (r *Routed) PacketPath() string  { return r.cfg.PacketPath }

// Claims states what the datapath's pod traffic crosses.
func (r *Routed) Claims() lab.PathClaims {
	if r.cfg.Claims != nil {
		return *r.cfg.Claims
	}
	return lab.PathClaims{Conntrack: !r.cfg.NoTrack, NftForward: true}
}

func (r *Routed) Probe() error {
	if err := lab.ProbeLink("veth pair", &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "probe0"}, PeerName: "probe1"}); err != nil {
		return err
	}
	if err := probeConntrack(); err != nil {
		return err
	}
	if r.cfg.Probe != nil {
		return r.cfg.Probe()
	}
	return nil
}

func (r *Routed) Setup(ctx context.Context, env *lab.Env) (*lab.Topology, error) {
	nodes, err := lab.BuildNodes(ctx, env)
	if err != nil {
		return nil, err
	}
	podNS := map[string]*lab.NS{}
	podIdx := [2][]int{}
	all := append(lab.StandardPods(), env.ExtraPods...)
	var built []lab.Pod
	for _, p := range all {
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
		host, err := lab.AddVethToPod(node, ns, p.HostIf(), env.WireMTU)
		if err != nil {
			return nil, err
		}
		podIdx[p.Node] = append(podIdx[p.Node], host.Attrs().Index)
		// Pod: /32 address, default route via the fake gateway.
		if err := ns.AddrAdd(lab.PodIf, lab.Host32(p.IP)); err != nil {
			return nil, err
		}
		if err := ns.RouteAdd(lab.Host32(lab.CalicoGateway), netip.Addr{}, lab.PodIf, false); err != nil {
			return nil, err
		}
		if err := ns.RouteAdd(netip.MustParsePrefix("0.0.0.0/0"), lab.CalicoGateway, lab.PodIf, false); err != nil {
			return nil, err
		}
		// Node: proxy ARP answers for the gateway, /32 route to the pod.
		if err := node.WriteSysctls(
			[2]string{"net/ipv4/conf/" + p.HostIf() + "/proxy_arp", "1"},
			[2]string{"net/ipv4/neigh/" + p.HostIf() + "/proxy_delay", "0"},
		); err != nil {
			return nil, err
		}
		if err := node.LinkUp(p.HostIf()); err != nil {
			return nil, err
		}
		if err := node.RouteAdd(lab.Host32(p.IP), netip.Addr{}, p.HostIf(), false); err != nil {
			return nil, err
		}
		built = append(built, lab.Pod{Role: p.Role, Node: p.Node, NS: ns, IP: p.IP, HostDev: p.HostIf()})
	}
	for i, node := range nodes {
		// Proxy ARP only answers if the node routes the gateway elsewhere
		// than the asking interface (lab-facts pitfall).
		if err := node.RouteAdd(lab.Host32(lab.CalicoGateway), netip.Addr{}, "lo", false); err != nil {
			return nil, err
		}
		other := 1 - i
		if err := node.RouteAdd(lab.PodCIDRs[other], lab.WireIPs[other], lab.WireIf, false); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := installConntrackRules(node, conntrackRules{notrack: r.cfg.NoTrack}); err != nil {
			return nil, err
		}
	}
	if r.cfg.NodeReady != nil {
		for i, node := range nodes {
			wire, err := node.Handle().LinkByName(lab.WireIf)
			if err != nil {
				return nil, fmt.Errorf("find %s in %s: %w", lab.WireIf, node.Name, err)
			}
			rn := RoutedNode{Index: i, NS: node, WireIndex: wire.Attrs().Index, PodIndexes: podIdx[i]}
			if err := r.cfg.NodeReady(ctx, env, rn); err != nil {
				return nil, err
			}
		}
	}
	paths := lab.PodEndpoints(podNS)
	for i := range paths {
		// Where the client pod's egress enters its node: what an egress
		// filter hooks (AddServerAddress needs them too).
		for _, p := range lab.StandardPods() {
			if podNS[p.Role] == paths[i].Client {
				paths[i].ClientNode = nodes[p.Node]
				paths[i].ClientNodeDev = p.HostIf()
			}
		}
	}
	return &lab.Topology{
		Paths:   paths,
		PodMTU:  env.WireMTU,
		PathMTU: env.WireMTU,
		Nodes:   nodes,
		Pods:    built,
	}, nil
}

func (r *Routed) Teardown(ctx context.Context) error {
	if r.cfg.Teardown != nil {
		return r.cfg.Teardown(ctx)
	}
	return nil
}
