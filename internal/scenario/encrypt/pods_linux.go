package encrypt

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/cnibench/cnibench/internal/capture"
	"github.com/cnibench/cnibench/internal/scenario"
)

// MetricWirePodClear counts the frames of a pod-pair cell's capture whose
// outermost IP header went between the two pods: their packets in clear.
const MetricWirePodClear = "wire_pod_clear_frames"

// BeginPodCell is BeginCell for traffic between the pods a and b that
// does not carry the engine's payload marker (real applications' files,
// scp's own encryption): a capture on node 2's wire for the whole cell
// whose proof is what can be seen of any traffic. With encryption: no
// frame whose outermost IP header goes between a and b (the pods' packets
// never crossed in clear), no payload marker, at least the capture's
// minimum of the tunnel's frames, and a capture that kept up with the
// interface. Without (none, the negative control): the pods' packets seen
// in clear and no tunnel frame. p must be a point this package prepared.
func BeginPodCell(p scenario.Prepared, a, b netip.Addr) (func() (map[string]float64, error), error) {
	pr, ok := p.(*prepared)
	if !ok {
		return nil, fmt.Errorf("encryption: %T is not an encryption point", p)
	}
	if !a.IsValid() || !b.IsValid() || a == b {
		return nil, fmt.Errorf("encryption: pod addresses %v and %v: want two different addresses", a, b)
	}
	o := capture.Options{Filter: capture.Filter{Pairs: []capture.AddrPair{{a.Unmap(), b.Unmap()}}}}
	return pr.wireCapture(o, func(res capture.Result, m map[string]float64) error {
		m[MetricWirePodClear] = float64(res.Matched)
		return podVerdict(pr.p.enc != None, res)
	})
}

// podVerdict is the proof of one pod-pair cell (BeginPodCell).
func podVerdict(encrypted bool, res capture.Result) error {
	if !encrypted {
		switch {
		case res.Matched == 0:
			return fmt.Errorf("%w: negative control: no packet between the pods (%s) in clear among the %d frames on %s (%s)",
				capture.ErrUnproven, res.Filter, res.Frames, res.Iface, capture.FormatCounts(res.ByProto))
		case res.EncFrames() > 0 && len(res.EncProtos) > 0:
			return errors.New("no encryption configured, but tunnel frames were captured")
		}
		return nil
	}
	switch {
	case res.Matched > 0:
		return fmt.Errorf("%w: %d of %d frames on %s went between the pods (%s) in clear (%s)",
			capture.ErrCleartext, res.Matched, res.Frames, res.Iface, res.Filter, capture.FormatCounts(res.MatchedByProto))
	case res.MarkerFrames > 0:
		return fmt.Errorf("%w: %d frames carried the payload marker in clear", capture.ErrCleartext, res.MarkerFrames)
	case res.EncFrames() < res.MinEncFrames:
		return fmt.Errorf("%w: %d frames of %v on %s (need %d) among %d (%s)",
			capture.ErrUnproven, res.EncFrames(), res.EncProtos, res.Iface, res.MinEncFrames, res.Frames, capture.FormatCounts(res.ByProto))
	}
	if err := res.Check(); err != nil {
		return fmt.Errorf("%w: %w", capture.ErrUnproven, err)
	}
	return nil
}
