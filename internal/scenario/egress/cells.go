package egress

import (
	"fmt"
	"slices"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// LabelUDPHandshake marks the lab's extra udp_stream cell whose flows
// start with iperf3's handshake (one datagram each way, `cnibench run
// --udp-handshake`): conntrack on the node then holds the flow established,
// so a new-connection traversal lets the rest of it past the deny set,
// while the one-way udp_stream's every datagram stays new and traverses it.
const LabelUDPHandshake = "udp_handshake"

// UDPHandshakeCell is that cell.
var UDPHandshakeCell = scenario.Cell{Test: result.TestUDPStream, Flows: 1, Labels: map[string]string{LabelUDPHandshake: "reply"}}

// Cells are every point's cells (scenario.Celler): the default cells and,
// on the lab, UDPHandshakeCell.
func (s *Scenario) Cells(scenario.Point) []scenario.Cell {
	cells := scenario.DefaultCells()
	if s.backend == backendKubernetes {
		return cells
	}
	return append(cells, UDPHandshakeCell)
}

// cellTarget is a lab cell's client and target: the cross-node path's, with
// --udp-handshake for UDPHandshakeCell.
func cellTarget(p backend.Path, c scenario.Cell) (scenario.Target, error) {
	if p.Client == nil {
		return scenario.Target{}, fmt.Errorf("egress-filter: no cross-node path to run %s on", c.Test)
	}
	args, why := p.TargetArgs(c.Test)
	if why != "" {
		return scenario.Target{}, fmt.Errorf("egress-filter: %s", why)
	}
	if c.Labels[LabelUDPHandshake] != "" {
		args = append(slices.Clone(args), "--udp-handshake")
	}
	return scenario.Target{Client: p.Client, Args: args}, nil
}
