package encrypt

import (
	"errors"
	"fmt"

	"github.com/cnibench/cnibench/internal/capture"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
)

// BeginCell implements scenario.Checker: a capture on node 2's wire for
// the whole cell. Node 2 receives the clients' data (the server runs
// there): copying every frame into the capture's ring costs the sender
// far more (a third of a NIC-like wire's TCP throughput) than the receiver
// (about 5 %), and every point, encrypted or not, pays the same.
func (pr *prepared) BeginCell(c scenario.Cell) (func() (map[string]float64, error), error) {
	return pr.wireCapture(capture.Options{}, func(res capture.Result, _ map[string]float64) error {
		return verdict(pr.p.enc != None, c.Test, res)
	})
}

// wireCapture starts a capture on node 2's wire with o (the tunnel's
// protocol added) and returns the function that stops it: the wire
// metrics, then judge's verdict on the result (judge may add metrics).
func (pr *prepared) wireCapture(o capture.Options, judge func(capture.Result, map[string]float64) error) (func() (map[string]float64, error), error) {
	node := pr.lab.Topology.Nodes[1]
	if pr.proto != "" {
		o.EncProtos = []string{pr.proto}
	}
	cp, err := capture.Start(node.Do, lab.WireIf, [][]byte{engine.PayloadMarker}, o)
	if err != nil {
		return nil, fmt.Errorf("capture on %s of %s: %w", lab.WireIf, node.Name, err)
	}
	return func() (map[string]float64, error) {
		res, err := cp.Stop()
		if err != nil {
			return nil, err
		}
		m := map[string]float64{
			MetricWireFrames:    float64(res.Frames),
			MetricWireMarker:    float64(res.MarkerFrames),
			MetricWireEncFrames: float64(res.EncFrames()),
		}
		if cov := res.IfaceCoverage(); cov >= 0 {
			m[MetricWireCoverage] = 100 * cov
		}
		return m, judge(res, m)
	}, nil
}

// verdict is the proof of one cell. Streams carry the marker in every
// frame, so the capture's verdict applies whole: encrypted, no marker and
// the tunnel's frames seen; in clear, the marker seen. tcp_rr and tcp_crr
// send one-byte messages, too short to hold the marker: they must show
// the tunnel's frames (and no marker) when encrypted, none of them in
// clear.
func verdict(encrypted bool, test string, res capture.Result) error {
	if test == engine.TCPStream || test == engine.UDPStream {
		return res.Verdict(encrypted)
	}
	switch {
	case encrypted && res.MarkerFrames > 0:
		return fmt.Errorf("%w: %d frames carried the payload marker in clear", capture.ErrCleartext, res.MarkerFrames)
	case encrypted && res.EncFrames() == 0:
		return fmt.Errorf("%w: no frame of %v on %s among %d (%s)", capture.ErrUnproven, res.EncProtos, res.Iface, res.Frames, capture.FormatCounts(res.ByProto))
	case !encrypted && res.EncFrames() > 0 && len(res.EncProtos) > 0:
		return errors.New("no encryption configured, but tunnel frames were captured")
	}
	return nil
}
