package datapaths

import (
	"context"
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/lab"
)

func init() {
	lab.RegisterOptIn(func() lab.Datapath { return &baselineCT{} })
	lab.RegisterOptIn(func() lab.Datapath { return &baselineCT{notrack: true} })
}

// Names of the baseline's conntrack variants (opt-in: --datapaths names them).
const (
	// BaselineConntrack is the baseline with a host firewall in both nodes
	// whose ct state rules engage kernel connection tracking for the
	// node-to-node traffic, as a node's iptables does (seed 000's baseline).
	BaselineConntrack = "baseline-conntrack"
	// BaselineConntrackNotrack is BaselineConntrack plus raw-priority
	// notrack rules for the node-to-node traffic: seed 000's NOTRACK fix.
	BaselineConntrackNotrack = "baseline-conntrack-notrack"
)

// Comments of the host-firewall rules of the baseline's conntrack variants.
// The chains' "ct state new" counters carry RuleCtNew, so the path proof
// (conntrack_new_packets) counts them as it counts the forward chain's.
const (
	RuleHostEstablished = "host-ct-established" // input, output: ct state established,related accept
	RuleHostInvalid     = "host-ct-invalid"     // input, output: ct state invalid drop
	RuleHostLoopback    = "host-loopback"       // input: iifname lo accept
	RuleHostICMP        = "host-icmp"           // input: icmp accept (path-MTU errors, pings)
	RuleHostTestPorts   = "host-test-ports"     // input, output: tcp/udp between the nodes, ports >= 1024, accept
	RuleNotrackNode     = "notrack-node"        // prerouting at raw priority: node-to-node traffic notrack
	RuleNotrackNodeOut  = "notrack-node-out"    // output at raw priority: node-to-node traffic notrack
)

// testPortMin is the lowest destination port the host firewall accepts
// from the other node: `cnibench serve` listens on ServePort (12870) and
// its data listeners on ephemeral ports.
const testPortMin = 1024

// baselineCT is the baseline datapath plus a host firewall in each node.
type baselineCT struct {
	baseline
	notrack bool
}

func (b *baselineCT) Name() string {
	if b.notrack {
		return BaselineConntrackNotrack
	}
	return BaselineConntrack
}

func (b *baselineCT) Description() string {
	if b.notrack {
		return "baseline-conntrack with node-to-node traffic marked NOTRACK in the raw hook (conntrack bypassed; seed 000's fix)"
	}
	return "node to node, no pods, with a host firewall (nft input/output, ct state rules): kernel conntrack engaged, as a node's iptables"
}

func (b *baselineCT) PacketPath() string {
	if b.notrack {
		return "node1 socket -> node1 IP stack (nft raw notrack, output) -> wire0 (veth) -> node2 wire0 -> " +
			"node2 IP stack (nft raw notrack, input) -> node2 socket"
	}
	return "node1 socket -> node1 IP stack (nft output, conntrack) -> wire0 (veth) -> node2 wire0 -> " +
		"node2 IP stack (conntrack, nft input) -> node2 socket"
}

// Claims states the conntrack state of the node-to-node traffic. The
// ct state new counters live in the input and output chains of the lab's
// nft table, which the evidence reads as it reads the forward chain's.
func (b *baselineCT) Claims() lab.PathClaims {
	return lab.PathClaims{Conntrack: !b.notrack, NftForward: true}
}

func (b *baselineCT) Probe() error {
	if err := b.baseline.Probe(); err != nil {
		return err
	}
	return probeConntrack()
}

func (b *baselineCT) Setup(ctx context.Context, env *lab.Env) (*lab.Topology, error) {
	topo, err := b.baseline.Setup(ctx, env)
	if err != nil {
		return nil, err
	}
	for _, node := range topo.Nodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := installHostFirewall(node, b.notrack); err != nil {
			return nil, err
		}
	}
	return topo, nil
}

// installHostFirewall installs, in ns, a host firewall in the style of a
// node's iptables: an input chain (policy drop) and an output chain
// (policy accept), each counting ct state new, accepting established and
// related, dropping invalid and accepting TCP and UDP between the nodes'
// wire addresses to ports >= testPortMin; input also accepts loopback and
// ICMP. The ct state matches engage connection tracking in ns. With
// notrack, raw-priority prerouting and output chains mark every packet
// between the wire addresses NOTRACK, so the port rules accept them
// untracked.
func installHostFirewall(ns *lab.NS, notrack bool) error {
	c, err := nftables.New(nftables.WithNetNSFd(ns.Fd()))
	if err != nil {
		return fmt.Errorf("nftables connection in %s: %w", ns.Name, err)
	}
	t := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: lab.NftTable})
	drop, accept := nftables.ChainPolicyDrop, nftables.ChainPolicyAccept
	for _, h := range []struct {
		name   string
		hook   *nftables.ChainHook
		policy *nftables.ChainPolicy
		peer   uint32 // network-header offset of the other node's address: 12 saddr, 16 daddr
	}{
		{"input", nftables.ChainHookInput, &drop, 12},
		{"output", nftables.ChainHookOutput, &accept, 16},
	} {
		ch := c.AddChain(&nftables.Chain{
			Name: h.name, Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: h.hook, Priority: nftables.ChainPriorityFilter, Policy: h.policy,
		})
		c.AddRule(lab.NftRule(t, ch, lab.RuleCtNew, append(lab.NftCtStateIn(expr.CtStateBitNEW), &expr.Counter{})...))
		c.AddRule(lab.NftRule(t, ch, RuleHostEstablished, append(lab.NftCtStateIn(expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED),
			&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept})...))
		c.AddRule(lab.NftRule(t, ch, RuleHostInvalid, append(lab.NftCtStateIn(expr.CtStateBitINVALID),
			&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop})...))
		if h.hook == nftables.ChainHookInput {
			c.AddRule(lab.NftRule(t, ch, RuleHostLoopback,
				&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname("lo")},
				&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept}))
			c.AddRule(lab.NftRule(t, ch, RuleHostICMP, append(l4proto(unix.IPPROTO_ICMP),
				&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept})...))
		}
		for _, proto := range []byte{unix.IPPROTO_TCP, unix.IPPROTO_UDP} {
			c.AddRule(lab.NftRule(t, ch, RuleHostTestPorts, append(testPorts(h.peer, proto),
				&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept})...))
		}
	}
	if notrack {
		for _, h := range []struct {
			name, comment string
			hook          *nftables.ChainHook
		}{
			{"raw-prerouting", RuleNotrackNode, nftables.ChainHookPrerouting},
			{"raw-output", RuleNotrackNodeOut, nftables.ChainHookOutput},
		} {
			ch := c.AddChain(&nftables.Chain{
				Name: h.name, Table: t, Type: nftables.ChainTypeFilter,
				Hooknum: h.hook, Priority: nftables.ChainPriorityRaw,
			})
			c.AddRule(lab.NftRule(t, ch, h.comment, append(nodeToNode(), &expr.Counter{}, &expr.Notrack{})...))
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("install the host firewall in %s: %w", ns.Name, err)
	}
	return nil
}

// nodeToNode matches IPv4 packets from and to the wire subnet.
func nodeToNode() []expr.Any {
	return append(lab.NftIPInPrefix(12, lab.WirePrefix), lab.NftIPInPrefix(16, lab.WirePrefix)...)
}

// testPorts matches proto packets whose other-node address (at peer: 12
// saddr, 16 daddr) is in the wire subnet, to a port >= testPortMin.
func testPorts(peer uint32, proto byte) []expr.Any {
	return append(append(lab.NftIPInPrefix(peer, lab.WirePrefix), l4proto(proto)...),
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpGte, Register: 1, Data: binaryutil.BigEndian.PutUint16(testPortMin)},
	)
}

// l4proto matches packets of a layer-4 protocol.
func l4proto(proto byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
	}
}

// ifname is an interface name as nftables compares it (IFNAMSIZ bytes,
// zero-padded).
func ifname(n string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, n)
	return b
}
