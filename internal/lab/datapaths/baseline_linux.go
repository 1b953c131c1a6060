package datapaths

import (
	"context"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/lab"
)

func init() { lab.Register(func() lab.Datapath { return &baseline{} }) }

// baseline is node to node over the wire, no pods: seed 000's "Baseline
// (Node to Node)", the ceiling every pod datapath is compared with.
type baseline struct{}

func (*baseline) Name() string        { return "baseline" }
func (*baseline) Description() string { return "node to node over the wire, no pods (the ceiling)" }
func (*baseline) PacketPath() string {
	return "node1 socket -> node1 IP stack -> wire0 (veth) -> node2 wire0 -> node2 IP stack -> node2 socket"
}

func (*baseline) Probe() error {
	return lab.ProbeLink("veth pair", &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "probe0"}, PeerName: "probe1"})
}

func (*baseline) Setup(ctx context.Context, env *lab.Env) (*lab.Topology, error) {
	nodes, err := lab.BuildNodes(ctx, env)
	if err != nil {
		return nil, err
	}
	return &lab.Topology{
		Paths:   []lab.Endpoint{{Kind: lab.NodeToNode, Client: nodes[0], Server: nodes[1], ServerIP: lab.WireIPs[1]}},
		PodMTU:  env.WireMTU,
		PathMTU: env.WireMTU,
		Nodes:   nodes,
	}, nil
}

func (*baseline) Teardown(context.Context) error { return nil }
