package window

import (
	"errors"
	"slices"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/pkg/result"
)

// TCPInfo is what one flow's TCP_INFO said at one edge of the window.
type TCPInfo struct {
	// FD is the socket it was read from, -1 when the flow had none (not
	// connected, or failed): a flow whose socket differs between the edges
	// gives no deltas.
	FD                      int
	RTTUs, RTTVarUs, MinRTT uint32 // µs
	SndCwnd                 uint32 // segments
	TotalRetrans, SegsOut   uint32 // cumulative over the socket's life
	DeliveryRate            uint64 // bytes/s
}

// tcpEdge is TCP_INFO of every flow of a workload at one edge.
type TCPEdge struct {
	Flows []TCPInfo // by flow index
	// Unread counts sockets whose TCP_INFO could not be read (their FD is
	// -1 in Flows); Err is the first reason.
	Unread int
	Err    error
}

// tcpFigures are the TCP_INFO figures of one workload's window.
type tcpFigures struct {
	// Gauges at the window's close, over the flows readable then.
	Flows                             int
	SRTTMedian, SRTTMax, RTTVarMedian float64 // µs
	MinRTT                            float64 // µs
	CwndMedian                        float64 // segments
	DeliveryBits                      float64 // bit/s, summed
	// Deltas over the flows readable at both edges on the same socket.
	DeltaFlows       int
	Retrans, SegsOut uint64
}

// tcpFiguresOver computes the figures from the two edges.
func tcpFiguresOver(e0, e1 TCPEdge) tcpFigures {
	var f tcpFigures
	var srtt, rttvar, cwnd []float64
	for i, x := range e1.Flows {
		if x.FD < 0 {
			continue
		}
		srtt = append(srtt, float64(x.RTTUs))
		rttvar = append(rttvar, float64(x.RTTVarUs))
		cwnd = append(cwnd, float64(x.SndCwnd))
		f.DeliveryBits += float64(x.DeliveryRate) * 8
		if f.Flows == 0 || float64(x.MinRTT) < f.MinRTT {
			f.MinRTT = float64(x.MinRTT)
		}
		f.Flows++
		if i < len(e0.Flows) && e0.Flows[i].FD == x.FD {
			// The kernel's counters are 32-bit: unsigned arithmetic
			// survives one wrap.
			f.Retrans += uint64(x.TotalRetrans - e0.Flows[i].TotalRetrans)
			f.SegsOut += uint64(x.SegsOut - e0.Flows[i].SegsOut)
			f.DeltaFlows++
		}
	}
	if f.Flows > 0 {
		f.SRTTMedian, f.SRTTMax = median(srtt), slices.Max(srtt)
		f.RTTVarMedian, f.CwndMedian = median(rttvar), median(cwnd)
	}
	return f
}

// median of xs (not empty); sorts xs.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// tcpInfoMetrics records the client flows' TCP_INFO figures; what could
// not be read is left out with a warning (on a system without TCP_INFO,
// silently: the metrics are simply absent).
func tcpInfoMetrics(o *Out, e0, e1 TCPEdge) {
	if err := firstErr(e0.Err, e1.Err); err != nil && !errors.Is(err, engine.ErrNotSupported) {
		o.warn("TCP_INFO could not be read on %d client socket(s): tcp_* figures cover the other flows (%v)", e0.Unread+e1.Unread, err)
	}
	f := tcpFiguresOver(e0, e1)
	m := o.Metrics
	if f.Flows > 0 {
		m[result.TCPSRTTUsMedian] = f.SRTTMedian
		m[result.TCPSRTTUsMax] = f.SRTTMax
		m[result.TCPRTTVarUsMedian] = f.RTTVarMedian
		m[result.TCPMinRTTUs] = f.MinRTT
		m[result.TCPSndCwndSegmentsMedian] = f.CwndMedian
		m[result.TCPDeliveryRateBitsPerSec] = f.DeliveryBits
	}
	if f.DeltaFlows > 0 {
		m[result.TCPRetransmits] = float64(f.Retrans)
		if f.SegsOut > 0 {
			m[result.TCPRetransmitPct] = 100 * float64(f.Retrans) / float64(f.SegsOut)
		}
	}
	if f.Flows == 0 && len(e1.Flows) > 0 && e1.Err == nil {
		o.warn("no client TCP flow had a socket open at the window's close: TCP_INFO figures not measured")
	}
}
