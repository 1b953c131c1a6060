package lab

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
)

func init() {
	Register(func() Datapath { return NewRouted(RoutedConfig{}) })
	Register(func() Datapath { return NewRouted(RoutedConfig{NoTrack: true}) })
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
	NodeReady func(ctx context.Context, env *Env, node RoutedNode) error
	// Teardown, if set, releases what NodeReady acquired.
	Teardown func(ctx context.Context) error
	// Claims, if set, replaces the routed datapath's path claims
	// (conntrack engaged unless NoTrack).
	Claims *PathClaims
}

// RoutedNode describes a node of a routed datapath to a NodeReady hook.
type RoutedNode struct {
	Index int // 0 = node1, 1 = node2
	NS    *NS
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
func (r *Routed) Claims() PathClaims {
	if r.cfg.Claims != nil {
		return *r.cfg.Claims
	}
	return PathClaims{Conntrack: !r.cfg.NoTrack, NftForward: true}
}

func (r *Routed) Probe() error {
	if err := ProbeLink("veth pair", &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "probe0"}, PeerName: "probe1"}); err != nil {
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

func (r *Routed) Setup(ctx context.Context, env *Env) (*Topology, error) {
	nodes, err := buildNodes(ctx, env)
	if err != nil {
		return nil, err
	}
	podNS := map[string]*NS{}
	podIdx := [2][]int{}
	all := slices.Clone(pods)
	for _, x := range env.ExtraPods {
		all = append(all, pod{role: x.Role, node: x.Node, ip: x.IP})
	}
	var built []Pod
	for _, p := range all {
		node := nodes[p.node]
		ns, err := env.NewNS(ctx, p.role)
		if err != nil {
			return nil, err
		}
		podNS[p.role] = ns
		if p.role != RoleServer {
			if err := ns.WriteSysctls(ClientSysctls...); err != nil {
				return nil, err
			}
		}
		host, err := AddVethToPod(node, ns, p.hostIf(), env.WireMTU)
		if err != nil {
			return nil, err
		}
		podIdx[p.node] = append(podIdx[p.node], host.Attrs().Index)
		// Pod: /32 address, default route via the fake gateway.
		if err := ns.AddrAdd(PodIf, host32(p.ip)); err != nil {
			return nil, err
		}
		if err := ns.RouteAdd(host32(CalicoGateway), netip.Addr{}, PodIf, false); err != nil {
			return nil, err
		}
		if err := ns.RouteAdd(netip.MustParsePrefix("0.0.0.0/0"), CalicoGateway, PodIf, false); err != nil {
			return nil, err
		}
		// Node: proxy ARP answers for the gateway, /32 route to the pod.
		if err := node.WriteSysctls(
			[2]string{"net/ipv4/conf/" + p.hostIf() + "/proxy_arp", "1"},
			[2]string{"net/ipv4/neigh/" + p.hostIf() + "/proxy_delay", "0"},
		); err != nil {
			return nil, err
		}
		if err := node.LinkUp(p.hostIf()); err != nil {
			return nil, err
		}
		if err := node.RouteAdd(host32(p.ip), netip.Addr{}, p.hostIf(), false); err != nil {
			return nil, err
		}
		built = append(built, Pod{Role: p.role, Node: p.node, NS: ns, IP: p.ip, HostDev: p.hostIf()})
	}
	for i, node := range nodes {
		// Proxy ARP only answers if the node routes the gateway elsewhere
		// than the asking interface (lab-facts pitfall).
		if err := node.RouteAdd(host32(CalicoGateway), netip.Addr{}, "lo", false); err != nil {
			return nil, err
		}
		other := 1 - i
		if err := node.RouteAdd(PodCIDRs[other], WireIPs[other], WireIf, false); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := installConntrackRules(node, nftRules{notrack: r.cfg.NoTrack}); err != nil {
			return nil, err
		}
	}
	if r.cfg.NodeReady != nil {
		for i, node := range nodes {
			wire, err := node.handle.LinkByName(WireIf)
			if err != nil {
				return nil, fmt.Errorf("find %s in %s: %w", WireIf, node.Name, err)
			}
			rn := RoutedNode{Index: i, NS: node, WireIndex: wire.Attrs().Index, PodIndexes: podIdx[i]}
			if err := r.cfg.NodeReady(ctx, env, rn); err != nil {
				return nil, err
			}
		}
	}
	paths := podEndpoints(podNS)
	for i := range paths {
		// Where the client pod's egress enters its node: what an egress
		// filter hooks (AddServerAddress needs them too).
		for _, p := range pods {
			if podNS[p.role] == paths[i].Client {
				paths[i].ClientNode = nodes[p.node]
				paths[i].ClientNodeDev = p.hostIf()
			}
		}
	}
	return &Topology{
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
