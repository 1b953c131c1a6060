package window

import (
	"time"

	"github.com/cnibench/cnibench/pkg/result"
)

// tcp_rr_loaded's load (the client's loaded.go) over a window: its own
// edges, taken with the rr flows', give its throughput and TCP figures.

// LoadEdge is what the client reads of its load at one edge.
type LoadEdge struct {
	At  time.Time
	Cnt Counters
	TCP TCPEdge
}

// Load is tcp_rr_loaded's load over one measured window.
type Load struct {
	E0, E1 LoadEdge
}

// loadMetrics records the load's throughput and TCP figures.
func loadMetrics(o *Out, in Load) {
	m := o.Metrics
	sec := in.E1.At.Sub(in.E0.At).Seconds()
	if sec <= 0 {
		o.warn("the load's window has no length: its throughput not measured")
		return
	}
	tx := in.E1.Cnt.TxBytes - in.E0.Cnt.TxBytes
	m[result.LoadThroughputBitsPerSec] = float64(tx) * 8 / sec
	if tx == 0 {
		o.warn("the load's tcp_stream flows wrote nothing during a window: its latency was not measured under load")
	}
	if n := in.E1.Cnt.Errors - in.E0.Cnt.Errors; n > 0 {
		o.warn("%d of the load's tcp_stream flows failed during a window", n)
	}
	if err := firstErr(in.E0.TCP.Err, in.E1.TCP.Err); err != nil {
		o.warn("TCP_INFO could not be read on %d load socket(s): load_tcp_* figures cover the others (%v)", in.E0.TCP.Unread+in.E1.TCP.Unread, err)
	}
	f := tcpFiguresOver(in.E0.TCP, in.E1.TCP)
	if f.Flows > 0 {
		m[result.LoadTCPSRTTUsMedian] = f.SRTTMedian
	}
	if f.DeltaFlows > 0 {
		m[result.LoadTCPRetransmits] = float64(f.Retrans)
	}
}
