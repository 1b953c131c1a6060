package server

import (
	"context"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/client"
	"github.com/cnibench/cnibench/pkg/result"
)

// tcp_rr_loaded over loopback: the rr flow's latency percentiles under
// the load, the load's throughput, both sessions ended on the server.
// Whether the loaded median exceeds an unloaded one is logged, not
// asserted: on a shared 2-core machine the unloaded run competes with
// whatever else runs, and loopback has no queue for the load to fill
// (its cost there is CPU contention, not bufferbloat).
func TestTCPRRLoadedOverLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping network integration test")
	}
	srv, addr := startServer(t)
	cfg := quick(addr, engine.TCPRRLoaded, 1)
	cfg.LoadFlows = 2
	res, err := (&client.Client{}).Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	checkResult(t, res, engine.TCPRRLoaded)
	if res.Config["load_flows"] != "2" || res.Config["test"] != engine.TCPRRLoaded {
		t.Errorf("config %v", res.Config)
	}
	for _, w := range res.Warnings {
		t.Logf("warning: %s", w)
	}
	if s := res.Summary[result.LoadTCPSRTTUsMedian]; s.N != 2 || s.Median <= 0 {
		t.Errorf("load srtt %+v", s)
	}
	// Both sessions end with the run.
	deadline := time.Now().Add(5 * time.Second)
	for srv.sessions.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := srv.sessions.Load(); n != 0 {
		t.Errorf("%d session(s) still open after the run", n)
	}

	unloaded, err := (&client.Client{}).Run(context.Background(), quick(addr, engine.TCPRR, 1))
	if err != nil {
		t.Fatalf("unloaded run: %v", err)
	}
	t.Logf("tcp_rr p50 %.1f µs unloaded, %.1f µs under %.2f Gbit/s of load; srtt %.0f µs unloaded, %.0f µs loaded",
		unloaded.Summary[result.LatencyUsP50].Median, res.Summary[result.LatencyUsP50].Median,
		res.Summary[result.LoadThroughputBitsPerSec].Median/1e9,
		unloaded.Summary[result.TCPSRTTUsMedian].Median, res.Summary[result.TCPSRTTUsMedian].Median)
}
