package scenario

import "github.com/cnibench/cnibench/pkg/result"

// FixedRate is the offered load of the default cells' fixed-rate
// udp_stream cell (the seed's 1 Gbit/s, for CPU at a fixed load).
const FixedRate = "1G"

// LabelRate marks a fixed-rate cell (absent on the others).
const LabelRate = "rate"

// DefaultCells are the cells of every point of a scenario that does not
// choose its own (Celler; egress-filter's, issue 10): udp_stream at the
// maximum rate (goodput, packet rate), udp_stream at FixedRate (CPU at a
// fixed load), tcp_stream, tcp_rr and icmp_echo (latency), at one flow on
// the cross-node path.
func DefaultCells() []Cell {
	return []Cell{
		{Test: result.TestUDPStream, Flows: 1}, {Test: result.TestUDPStream, Flows: 1, Rate: FixedRate, Labels: map[string]string{LabelRate: FixedRate}},
		{Test: result.TestTCPStream, Flows: 1}, {Test: result.TestTCPRR, Flows: 1}, {Test: result.TestICMPEcho, Flows: 1},
	}
}

// CellsOf are the cells of a point: the scenario's own (Celler), or
// DefaultCells.
func CellsOf(sc Scenario, p Point) []Cell {
	if c, ok := sc.(Celler); ok {
		return c.Cells(p)
	}
	return DefaultCells()
}
