package window

import (
	"testing"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/hoststat"
	"github.com/cnibench/cnibench/pkg/result"
)

func TestICMPWindowMetrics(t *testing.T) {
	tests := []struct {
		name            string
		c0, c1          Counters
		lat             Percentiles
		want            map[string]float64
		absent          []string
		mismatchWarning bool
	}{
		{
			name: "clean window",
			c0:   Counters{Trans: 100, Sent: 100},
			c1:   Counters{Trans: 100100, Sent: 100101, TxBytes: 56 * 100001},
			lat:  Percentiles{Count: 100000, Mean: 6.5, P50: 6, P90: 7, P99: 9, P999: 40, Max: 500},
			want: map[string]float64{result.TransPerSec: 10000, result.EchoRequestsSent: 100001, result.EchoRequestsLost: 0,
				result.EchoRepliesLate: 0, result.EchoRepliesMismatched: 0, result.Errors: 0,
				result.LatencyUsP50: 6, result.LatencyUsP99: 9, result.LatencyUsMean: 6.5},
		},
		{
			name: "losses, late and mismatched replies, send errors",
			c0:   Counters{Trans: 10, Sent: 12, Lost: 1, Late: 1, Mismatched: 0, Errors: 2},
			c1:   Counters{Trans: 1010, Sent: 1020, Lost: 6, Late: 4, Mismatched: 3, Errors: 9},
			lat:  Percentiles{Count: 1000, P50: 50},
			want: map[string]float64{result.TransPerSec: 100, result.EchoRequestsSent: 1008, result.EchoRequestsLost: 5,
				result.EchoRepliesLate: 3, result.EchoRepliesMismatched: 3, result.Errors: 7, result.LatencyUsP50: 50},
			mismatchWarning: true,
		},
		{
			name:   "no reply at all: no latency figures",
			c0:     Counters{Sent: 0},
			c1:     Counters{Sent: 1000, Lost: 998},
			want:   map[string]float64{result.TransPerSec: 0, result.EchoRequestsSent: 1000, result.EchoRequestsLost: 998},
			absent: []string{result.LatencyUsP50, result.LatencyUsMean, result.CPUUsPerTrans},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e0, e1 := edges(1000)
			e0.Cnt, e1.Cnt = tt.c0, tt.c1
			in := In{Test: engine.ICMPEcho, E0: e0, E1: e1, Lat: tt.lat, BootID: "b",
				Srv: engine.SrvStats{WallMicros: 10e6, BootID: "b", IPFrag: &hoststat.IPFrag{}}}
			o := Metrics(in)
			for k, v := range tt.want {
				got, ok := o.Metrics[k]
				if !ok || !near(got, v) {
					t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
				}
			}
			for _, k := range tt.absent {
				if v, ok := o.Metrics[k]; ok {
					t.Errorf("%s = %v, want absent", k, v)
				}
			}
			if _, ok := o.Metrics[result.ThroughputBitsPerSec]; ok {
				t.Error("icmp_echo reports no throughput")
			}
			if got := hasWarning(o, "echo_replies_mismatched"); got != tt.mismatchWarning {
				t.Errorf("mismatch warning %v, want %v: %q", got, tt.mismatchWarning, o.Warnings)
			}
		})
	}
}
