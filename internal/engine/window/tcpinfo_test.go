package window

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/pkg/result"
)

// flowInfo is a readable flow's TCP_INFO on socket fd.
func flowInfo(fd int, rtt, rttvar, minRTT, cwnd, retrans, segs uint32, rate uint64) TCPInfo {
	return TCPInfo{FD: fd, RTTUs: rtt, RTTVarUs: rttvar, MinRTT: minRTT, SndCwnd: cwnd, TotalRetrans: retrans, SegsOut: segs, DeliveryRate: rate}
}

func TestTCPInfoMetrics(t *testing.T) {
	type want map[string]float64
	tests := []struct {
		name    string
		e0, e1  TCPEdge
		want    want
		absent  []string
		warning string
	}{{
		name: "three flows: medians, max, sums and deltas",
		e0: TCPEdge{Flows: []TCPInfo{
			flowInfo(10, 0, 0, 0, 10, 5, 1000, 0), flowInfo(11, 0, 0, 0, 10, 0, 2000, 0), flowInfo(12, 0, 0, 0, 10, 1, 0, 0)}},
		e1: TCPEdge{Flows: []TCPInfo{
			flowInfo(10, 100, 20, 30, 10, 7, 2000, 1e6),
			flowInfo(11, 300, 50, 40, 40, 0, 4000, 2e6),
			flowInfo(12, 200, 10, 25, 20, 3, 1000, 3e6)}},
		want: want{
			result.TCPSRTTUsMedian: 200, result.TCPSRTTUsMax: 300, result.TCPRTTVarUsMedian: 20,
			result.TCPMinRTTUs: 25, result.TCPSndCwndSegmentsMedian: 20,
			result.TCPDeliveryRateBitsPerSec: 6e6 * 8,
			result.TCPRetransmits:            4, // 2 + 0 + 2
			result.TCPRetransmitPct:          100 * 4.0 / 4000,
		},
	}, {
		name: "even number of flows: the median is the mean of the middle two",
		e0:   TCPEdge{Flows: []TCPInfo{flowInfo(3, 0, 0, 0, 0, 0, 0, 0), flowInfo(4, 0, 0, 0, 0, 0, 0, 0)}},
		e1:   TCPEdge{Flows: []TCPInfo{flowInfo(3, 100, 0, 0, 10, 0, 0, 0), flowInfo(4, 200, 0, 0, 30, 0, 0, 0)}},
		want: want{result.TCPSRTTUsMedian: 150, result.TCPSndCwndSegmentsMedian: 20, result.TCPRetransmits: 0},
		// No segment sent: no rate rather than a division by zero.
		absent: []string{result.TCPRetransmitPct},
	}, {
		name: "32-bit counters that wrapped still give the delta",
		e0:   TCPEdge{Flows: []TCPInfo{flowInfo(3, 0, 0, 0, 0, 1<<32-2, 1<<32-100, 0)}},
		e1:   TCPEdge{Flows: []TCPInfo{flowInfo(3, 1, 0, 0, 1, 3, 100, 0)}},
		want: want{result.TCPRetransmits: 5, result.TCPRetransmitPct: 2.5},
	}, {
		name:   "a flow on another socket at the close gives gauges, no deltas",
		e0:     TCPEdge{Flows: []TCPInfo{flowInfo(3, 0, 0, 0, 0, 0, 0, 0)}},
		e1:     TCPEdge{Flows: []TCPInfo{flowInfo(9, 50, 5, 40, 10, 100, 1000, 0)}},
		want:   want{result.TCPSRTTUsMedian: 50, result.TCPMinRTTUs: 40},
		absent: []string{result.TCPRetransmits, result.TCPRetransmitPct},
	}, {
		name: "one unreadable socket: the others are reported, with a warning",
		e0: TCPEdge{Flows: []TCPInfo{flowInfo(3, 0, 0, 0, 0, 0, 10, 0), {FD: -1}}, Unread: 1,
			Err: errors.New("getsockopt TCP_INFO: EBADF")},
		e1:      TCPEdge{Flows: []TCPInfo{flowInfo(3, 70, 0, 0, 10, 1, 20, 0), flowInfo(4, 90, 0, 0, 10, 0, 0, 0)}},
		want:    want{result.TCPSRTTUsMax: 90, result.TCPRetransmits: 1, result.TCPRetransmitPct: 10},
		warning: "could not be read on 1 client socket(s)",
	}, {
		name:    "no flow open at the close",
		e0:      TCPEdge{Flows: []TCPInfo{{FD: -1}}},
		e1:      TCPEdge{Flows: []TCPInfo{{FD: -1}}},
		absent:  []string{result.TCPSRTTUsMedian, result.TCPRetransmits},
		warning: "no client TCP flow had a socket open",
	}, {
		name:   "no TCP_INFO on this system: absent, no warning",
		e0:     TCPEdge{Flows: []TCPInfo{{FD: -1}}, Unread: 1, Err: errNoTCPInfo},
		e1:     TCPEdge{Flows: []TCPInfo{{FD: -1}}, Unread: 1, Err: errNoTCPInfo},
		absent: []string{result.TCPSRTTUsMedian, result.TCPRetransmits},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Out{Metrics: map[string]float64{}}
			tcpInfoMetrics(&o, tt.e0, tt.e1)
			checkMetrics(t, o, tt.want, tt.absent)
			if tt.warning != "" && !hasWarning(o, tt.warning) {
				t.Errorf("no warning containing %q in %q", tt.warning, o.Warnings)
			}
			if tt.warning == "" && len(o.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", o.Warnings)
			}
		})
	}
}

func checkMetrics(t *testing.T, o Out, want map[string]float64, absent []string) {
	t.Helper()
	for k, v := range want {
		got, ok := o.Metrics[k]
		if !ok {
			t.Errorf("%s missing", k)
		} else if !near(got, v) {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	for _, k := range absent {
		if v, ok := o.Metrics[k]; ok {
			t.Errorf("%s = %v, want absent", k, v)
		}
	}
}

// tcp_rr_loaded: the rr flow's latency and TCP_INFO, the load's throughput
// and TCP figures, and no CPU cost per transaction (the CPU is mostly the
// load's).
func TestLoadedWindowMetrics(t *testing.T) {
	rrTCP0 := TCPEdge{Flows: []TCPInfo{flowInfo(5, 0, 0, 0, 10, 0, 100, 0)}}
	rrTCP1 := TCPEdge{Flows: []TCPInfo{flowInfo(5, 400, 80, 20, 10, 1, 1100, 8000)}}
	load := func(tx uint64, errs uint64) *Load {
		return &Load{
			E0: LoadEdge{At: t0, TCP: TCPEdge{Flows: []TCPInfo{flowInfo(7, 0, 0, 0, 0, 2, 0, 0), flowInfo(8, 0, 0, 0, 0, 0, 0, 0)}}},
			E1: LoadEdge{At: t0.Add(10 * time.Second), Cnt: Counters{TxBytes: tx, Errors: errs},
				TCP: TCPEdge{Flows: []TCPInfo{flowInfo(7, 900, 0, 0, 0, 5, 0, 0), flowInfo(8, 1100, 0, 0, 0, 1, 0, 0)}}},
		}
	}
	tests := []struct {
		name    string
		load    *Load
		want    map[string]float64
		absent  []string
		warning string
	}{{
		name: "loaded",
		load: load(10e9/8, 0),
		want: map[string]float64{
			result.LoadThroughputBitsPerSec: 1e9, result.LoadTCPSRTTUsMedian: 1000, result.LoadTCPRetransmits: 4,
			result.LatencyUsP50: 300, result.TransPerSec: 100, result.TCPSRTTUsMedian: 400, result.TCPMinRTTUs: 20,
			result.TCPRetransmits: 1, result.TCPRetransmitPct: 0.1, result.HostCPUPct: 100,
		},
		absent: []string{result.CPUUsPerTrans, result.CPUPctPer100Gbit, result.ThroughputBitsPerSec},
	}, {
		name:    "a load that moved nothing is reported, with a warning",
		load:    load(0, 2),
		want:    map[string]float64{result.LoadThroughputBitsPerSec: 0},
		warning: "wrote nothing",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e0, e1 := edges(1000)
			e1.Cnt.Trans = 1000
			e0.TCP, e1.TCP = rrTCP0, rrTCP1
			o := Metrics(In{Test: engine.TCPRRLoaded, E0: e0, E1: e1, Load: tt.load, BootID: "h",
				Srv: engine.SrvStats{WallMicros: 10e6, BootID: "h"}, Lat: Percentiles{Count: 1000, P50: 300, P99: 900}})
			checkMetrics(t, o, tt.want, tt.absent)
			if tt.warning != "" && !hasWarning(o, tt.warning) {
				t.Errorf("no warning containing %q in %q", tt.warning, o.Warnings)
			}
		})
	}
}

// errNoTCPInfo is what reading TCP_INFO fails with where it does not
// exist (the client's tcpinfo_other.go).
var errNoTCPInfo = fmt.Errorf("TCP_INFO needs Linux: %w", engine.ErrNotSupported)
