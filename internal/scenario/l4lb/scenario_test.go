package l4lb

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/bpf/nscpu"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/l4lb/lbnet"
)

func TestPoints(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	pts := s.Points()
	if len(pts) != 13 {
		t.Fatalf("%d points, want 12 modes and IPv6", len(pts))
	}
	skipped := 0
	for _, p := range pts {
		if ps := specOf(p); ps.mode.String() == "" || !maps.Equal(ps.labels(), p.Labels) || p.Labels[LabelLBCPU] != CPUShared || p.Labels[LabelSYNFlood] != "0" {
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
		args, err := targetArgs(c, lbnet.VIP)
		if err != nil || !strings.Contains(strings.Join(args, " "), lbnet.VIP.String()) {
			t.Errorf("%+v: %v %v", c, args, err)
		}
	}
	if _, err := targetArgs(scenario.Cell{Test: engine.UDPStream}, lbnet.VIP); err == nil {
		t.Error("udp_stream got a target")
	}
}

// TestPointsCPUFlood: --lb-cpu repeats every mode per placement (IPv6
// once); --syn-flood adds a flooded twin after each firewall-on mode;
// labels read back to the same point; bad values name their flag.
func TestPointsCPUFlood(t *testing.T) {
	s, err := New(Options{Modes: []string{"snat-direct", "kubeproxy-vxlan-fw", "dsr-direct-ipv6"}, CPUs: []string{CPUShared, CPUSplit}, SYNFlood: 50000})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range s.Points() {
		ps := specOf(p)
		if !maps.Equal(ps.labels(), p.Labels) {
			t.Errorf("labels %v do not round-trip: %+v", p.Labels, ps)
		}
		got = append(got, ps.mode.String()+"/"+p.Labels[LabelLBCPU]+"/"+p.Labels[LabelSYNFlood])
	}
	want := []string{"snat-direct/shared/0", "kubeproxy-vxlan-fw/shared/0", "kubeproxy-vxlan-fw/shared/50000", "dsr-direct-ipv6/shared/0",
		"snat-direct/split/0", "kubeproxy-vxlan-fw/split/0", "kubeproxy-vxlan-fw/split/50000"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("points\n got %v\nwant %v", got, want)
	}
	for _, tt := range []struct {
		o    Options
		want string
	}{
		{Options{CPUs: []string{"both"}}, "--lb-cpu \"both\""},
		{Options{CPUs: []string{CPUSplit, CPUSplit}}, "twice"},
		{Options{SYNFlood: -1}, "--syn-flood -1"},
		{Options{SYNFlood: MaxSYNFlood + 1}, "--syn-flood"},
	} {
		if _, err := New(tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want %q", tt.o, err, tt.want)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"0", []int{0}, false}, {"0-1\n", []int{0, 1}, false}, {"0,2-3", []int{0, 2, 3}, false},
		{"", nil, true}, {"a", nil, true}, {"3-1", nil, true}, {"-1", nil, true}, {"0-", nil, true},
	} {
		got, err := parseCPUList(tt.in)
		if (err != nil) != tt.err || !slices.Equal(got, tt.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
	if c, err := cpusAllowed("Name:\tcnibench\nCpus_allowed:\t1\nCpus_allowed_list:\t0\n"); err != nil || !slices.Equal(c, []int{0}) {
		t.Errorf("cpusAllowed: %v, %v", c, err)
	}
	if _, err := cpusAllowed("Name: x\n"); err == nil {
		t.Error("status without Cpus_allowed_list accepted")
	}
}

func TestCheckCell(t *testing.T) {
	snat, dsrFW := lbnet.Mode{LB: lbnet.SNAT, Transport: lbnet.Direct}, lbnet.Mode{LB: lbnet.DSR, Transport: lbnet.VXLAN, Firewall: true}
	m := func(kv ...float64) map[string]float64 {
		keys := []string{MetricLBForward, MetricLBReverse, MetricWorkerRevNAT, MetricRefusedTried, MetricRefusedOK, MetricRefusedReset, MetricFirewallDrops}
		out := map[string]float64{}
		for i, v := range kv {
			out[keys[i]] = v
		}
		return out
	}
	kp := lbnet.Mode{LB: lbnet.KubeProxy, Transport: lbnet.VXLAN}
	with := func(base map[string]float64, kv ...any) map[string]float64 {
		for i := 0; i+1 < len(kv); i += 2 {
			base[kv[i].(string)] = float64(kv[i+1].(int))
		}
		return base
	}
	tests := []struct {
		name string
		mode lbnet.Mode
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
		{"kubeproxy ok", kp, with(m(100, 90, 0, 4, 0, 4, 0), MetricKPDNAT, 30, MetricCTVIPEntries, 30), ""},
		{"kubeproxy no DNAT", kp, with(m(100, 90, 0, 4, 0, 4, 0), MetricKPDNAT, 0, MetricCTVIPEntries, 30), "0 connections DNATed"},
		{"kubeproxy no conntrack", kp, with(m(100, 90, 0, 4, 0, 4, 0), MetricKPDNAT, 30), "0 conntrack entries"},
		{"kubeproxy no reply", kp, with(m(100, 0, 0, 4, 0, 4, 0), MetricKPDNAT, 30, MetricCTVIPEntries, 30), "forwarded no reply"},
		{"flood sent nothing", dsrFW, with(m(100, 0, 90, 4, 0, 0, 5), MetricFloodAsked, 1000, MetricFloodSent, 0), "nothing sent"},
		{"flood ok", dsrFW, with(m(100, 0, 90, 4, 0, 0, 5), MetricFloodAsked, 1000, MetricFloodSent, 900), ""},
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
	got := cellMetrics(before, after, lbnet.RefusalResult{Attempts: 3}, []uint64{1}, [2][]uint64{{2, 3}, {4}})
	want := map[string]float64{MetricLBCPU: 20, MetricWorker1CPU: 45, MetricWorker2CPU: 1, MetricWorkersCPU: 46, MetricRefusedTried: 3}
	for k, v := range want {
		if d := got[k] - v; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	// Without the accountant: no CPU metric, the counters still there.
	got = cellMetrics(snapshot{at: t0}, snapshot{at: t0.Add(time.Second)}, lbnet.RefusalResult{}, nil, [2][]uint64{})
	if _, ok := got[MetricLBCPU]; ok {
		t.Error("CPU reported without accounting")
	}
}
