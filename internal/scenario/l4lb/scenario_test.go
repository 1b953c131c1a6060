package l4lb

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/bpf/nscpu"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
)

func TestPoints(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	pts := s.Points()
	if len(pts) != 9 {
		t.Fatalf("%d points, want 8 modes and IPv6", len(pts))
	}
	skipped := 0
	for _, p := range pts {
		if modeOf(p).String() == "" || PointLabels(modeOf(p))[LabelLBMode] != p.Labels[LabelLBMode] {
			t.Errorf("labels %v do not round-trip", p.Labels)
		}
		if p.Skip != nil {
			skipped++
			if p.Labels[LabelIPFamily] != "ipv6" || !errors.Is(p.Skip, lab.ErrNotSupported) {
				t.Errorf("skipped %v: %v", p.Labels, p.Skip)
			}
		}
	}
	if skipped != 1 {
		t.Errorf("%d skipped points, want 1", skipped)
	}
	if _, err := New(Options{Modes: []string{"dsr-direct", "dsr-direct"}}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate mode: %v", err)
	}
	if _, err := New(Options{Modes: []string{"maglev"}}); err == nil || !strings.Contains(err.Error(), "--lb-modes") {
		t.Errorf("bad mode: %v", err)
	}
	for _, c := range s.Cells(pts[0]) {
		args, err := targetArgs(c, lab.L4LBVIP)
		if err != nil || !strings.Contains(strings.Join(args, " "), lab.L4LBVIP.String()) {
			t.Errorf("%+v: %v %v", c, args, err)
		}
	}
	if _, err := targetArgs(scenario.Cell{Test: engine.UDPStream}, lab.L4LBVIP); err == nil {
		t.Error("udp_stream got a target")
	}
}

func TestCheckCell(t *testing.T) {
	snat, dsrFW := lab.L4LBMode{LB: lab.L4LBSNAT, Transport: lab.L4LBDirect}, lab.L4LBMode{LB: lab.L4LBDSR, Transport: lab.L4LBVXLAN, Firewall: true}
	m := func(kv ...float64) map[string]float64 {
		keys := []string{MetricLBForward, MetricLBReverse, MetricWorkerRevNAT, MetricRefusedTried, MetricRefusedOK, MetricRefusedReset, MetricFirewallDrops}
		out := map[string]float64{}
		for i, v := range kv {
			out[keys[i]] = v
		}
		return out
	}
	tests := []struct {
		name string
		mode lab.L4LBMode
		m    map[string]float64
		want string
	}{
		{"snat ok", snat, m(100, 90, 0, 4, 0, 4, 0), ""},
		{"snat no reply through the LB", snat, m(100, 0, 0, 4, 0, 4, 0), "no reply"},
		{"nothing translated", snat, m(0, 90, 0, 4, 0, 4, 0), "no packet"},
		{"firewall off but drops", snat, m(100, 90, 0, 4, 0, 4, 2), "2 packets dropped"},
		{"firewall off, refused client unanswered", snat, m(100, 90, 0, 4, 0, 0, 0), "got no answer"},
		{"dsr fw ok", dsrFW, m(100, 0, 90, 4, 0, 0, 5), ""},
		{"dsr replies through the LB", dsrFW, m(100, 3, 90, 4, 0, 0, 5), "3 replies went back through the LB"},
		{"dsr workers idle", dsrFW, m(100, 0, 0, 4, 0, 0, 5), "the workers translated no reply"},
		{"firewall let it in", dsrFW, m(100, 0, 90, 4, 1, 0, 5), "got 1 answers"},
		{"firewall counted nothing", dsrFW, m(100, 0, 90, 4, 0, 0, 0), "no drop counted"},
	}
	for _, tt := range tests {
		err := checkCell(tt.mode, tt.m)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestCellMetricsCPU: a node's CPU is its namespaces' receive time plus
// (workers) its backend's process time, over the wall time.
func TestCellMetricsCPU(t *testing.T) {
	t0 := time.Unix(100, 0)
	before := snapshot{at: t0, cpu: map[uint64]nscpu.Usage{1: {SoftirqNs: 0}}, procs: []time.Duration{0, 0}}
	after := snapshot{at: t0.Add(time.Second),
		cpu:   map[uint64]nscpu.Usage{1: {SoftirqNs: 200e6}, 2: {SoftirqNs: 100e6}, 3: {SoftirqNs: 50e6}, 4: {SoftirqNs: 10e6}},
		procs: []time.Duration{300 * time.Millisecond, 0}}
	got := cellMetrics(before, after, lab.RefusalResult{Attempts: 3}, []uint64{1}, [2][]uint64{{2, 3}, {4}})
	want := map[string]float64{MetricLBCPU: 20, MetricWorker1CPU: 45, MetricWorker2CPU: 1, MetricWorkersCPU: 46, MetricRefusedTried: 3}
	for k, v := range want {
		if d := got[k] - v; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	// Without the accountant: no CPU metric, the counters still there.
	got = cellMetrics(snapshot{at: t0}, snapshot{at: t0.Add(time.Second)}, lab.RefusalResult{}, nil, [2][]uint64{})
	if _, ok := got[MetricLBCPU]; ok {
		t.Error("CPU reported without accounting")
	}
}
