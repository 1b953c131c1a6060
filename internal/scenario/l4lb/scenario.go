// Package l4lb is the north-south load-balancer scenario (issue 11, seed
// 003): external clients reach a service VIP through a BPF load-balancer
// node in front of two workers, in every combination of LB mode (snat:
// replies return through the LB; dsr: the backend answers the client
// directly), LB-to-worker transport (direct, vxlan) and host firewall
// (off; on: only the benchmark client's prefix is allowed, a second
// client is refused). It runs on its own topology, the hidden lab
// datapath "l4lb" (its sub-package lbnet, internal/bpf/nslb).
//
// Every cell proves its mode while it runs: the LB translated the
// client's packets, in dsr it translated no reply (the workers did) and in
// snat it translated the replies; a refused client connects to the VIP
// during every cell (the same load with the firewall off and on) and with
// the firewall on none of its attempts connects. Per-node CPU is
// attributed by BPF accounting of receive processing per network
// namespace (internal/bpf/nscpu) plus the CPU time of the processes in
// each node's pods.
package l4lb

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/l4lb/lbnet"
)

// ScenarioName is the scenario's name (--scenario, the scenario label).
const ScenarioName = "l4lb"

// Labels of the scenario's results (besides scenario.LabelScenario).
const (
	LabelLBMode    = "lb_mode"   // snat or dsr
	LabelTransport = "transport" // direct or vxlan
	LabelFirewall  = "firewall"  // off or on
	LabelIPFamily  = "ip_family" // ipv4 (ipv6 is recorded skipped)
	LabelLBCPU     = "lb_cpu"    // shared or split (the LB's receive processing on a CPU of its own)
	LabelSYNFlood  = "syn_flood" // the refused client's SYN flood, asked SYN/s (0: none)
)

// Values of --lb-cpu (LabelLBCPU).
const (
	// CPUShared: no receive steering; every process and softirq where
	// the scheduler (or --pin) puts it.
	CPUShared = "shared"
	// CPUSplit: the LB node's receive processing on one CPU, every other
	// member's (and, with --pin same, the client and the backends) on
	// another: the LB can be the bottleneck.
	CPUSplit = "split"
)

// MaxSYNFlood bounds --syn-flood (SYN/s): one goroutine's raw socket on
// this class of machine sends a few hundred thousand a second at most.
const MaxSYNFlood = 2_000_000

// PathNorthSouth is the path label of every cell: the external client to
// the VIP.
const PathNorthSouth = "north-south"

// Cells: seed 003's `hey -c 1000 -disable-keepalive` (http, 1000 clients,
// a new connection per request), a stream through the LB (tcp_stream, as
// its iperf3 run) and the latency of one connection (tcp_rr).
const (
	HTTPClients = 1000
	HTTPPort    = 8080
	RRPort      = 12871
)

// Options configure the scenario.
type Options struct {
	// Modes are mode labels (lbnet.Mode.String(), e.g. dsr-vxlan-fw);
	// empty: every IPv4 mode, and the IPv6 point (skipped here).
	Modes []string
	// CPUs are the receive-processing placements (CPUShared, CPUSplit),
	// each run with every mode; empty: shared only.
	CPUs []string
	// SYNFlood > 0 adds, for every firewall-on mode, a point where the
	// refused client floods the VIP with SYNs at this rate (SYN/s) during
	// every cell.
	SYNFlood int
}

// pointSpec is one point: a mode, a CPU placement and a flood rate.
type pointSpec struct {
	mode  lbnet.Mode
	split bool
	flood int
}

// Scenario is the l4lb scenario (scenario.Scenario).
type Scenario struct {
	o     Options
	modes []lbnet.Mode
	cpus  []string
	state
}

// New validates o. Errors name the flag.
func New(o Options) (*Scenario, error) {
	s := &Scenario{o: o, cpus: []string{CPUShared}}
	if o.SYNFlood < 0 || o.SYNFlood > MaxSYNFlood {
		return nil, fmt.Errorf("--syn-flood %d: want 0 (off) to %d SYN/s", o.SYNFlood, MaxSYNFlood)
	}
	if len(o.CPUs) > 0 {
		s.cpus = nil
		for _, c := range o.CPUs {
			if c != CPUShared && c != CPUSplit {
				return nil, fmt.Errorf("--lb-cpu %q: want %s or %s (e.g. --lb-cpu shared,split)", c, CPUShared, CPUSplit)
			}
			if slices.Contains(s.cpus, c) {
				return nil, fmt.Errorf("--lb-cpu %q: listed twice", c)
			}
			s.cpus = append(s.cpus, c)
		}
	}
	if len(o.Modes) == 0 {
		s.modes = append(lbnet.Modes(), lbnet.Mode{LB: lbnet.DSR, Transport: lbnet.Direct, IPv6: true})
		return s, nil
	}
	for _, name := range o.Modes {
		m, err := lbnet.ParseMode(name)
		if err != nil {
			return nil, fmt.Errorf("--lb-modes %q: %v (e.g. snat-direct, dsr-vxlan-fw, kubeproxy-vxlan)", name, err)
		}
		if slices.Contains(s.modes, m) {
			return nil, fmt.Errorf("--lb-modes %q: listed twice", name)
		}
		s.modes = append(s.modes, m)
	}
	return s, nil
}

// Name implements scenario.Scenario.
func (s *Scenario) Name() string { return ScenarioName }

// Datapath implements scenario.OwnDatapath.
func (s *Scenario) Datapath() string { return lbnet.DatapathName }

// PointLabels are the labels of mode m's point with the CPUs shared and
// no flood.
func PointLabels(m lbnet.Mode) map[string]string { return pointSpec{mode: m}.labels() }

func (ps pointSpec) labels() map[string]string {
	m := ps.mode
	fw, fam, cpu := "off", "ipv4", CPUShared
	if m.Firewall {
		fw = "on"
	}
	if m.IPv6 {
		fam = "ipv6"
	}
	if ps.split {
		cpu = CPUSplit
	}
	return map[string]string{scenario.LabelScenario: ScenarioName, LabelLBMode: m.LB, LabelTransport: m.Transport,
		LabelFirewall: fw, LabelIPFamily: fam, LabelLBCPU: cpu, LabelSYNFlood: strconv.Itoa(ps.flood)}
}

// specs are the points: per CPU placement, every mode, each firewall-on
// mode followed by its flooded twin (with SYNFlood). The IPv6 point is
// listed once (skipped anyway).
func (s *Scenario) specs() []pointSpec {
	var out []pointSpec
	for i, cpu := range s.cpus {
		for _, m := range s.modes {
			if m.IPv6 && i > 0 {
				continue
			}
			out = append(out, pointSpec{mode: m, split: cpu == CPUSplit})
			if s.o.SYNFlood > 0 && m.Firewall && !m.IPv6 {
				out = append(out, pointSpec{mode: m, split: cpu == CPUSplit, flood: s.o.SYNFlood})
			}
		}
	}
	return out
}

// Points implements scenario.Scenario; a mode the lab cannot build (IPv6)
// is skipped with its reason.
func (s *Scenario) Points() []scenario.Point {
	var out []scenario.Point
	for _, ps := range s.specs() {
		out = append(out, scenario.Point{Labels: ps.labels(), Skip: ps.mode.Validate()})
	}
	return out
}

// specOf reads a point back from its labels.
func specOf(p scenario.Point) pointSpec {
	l := p.Labels
	flood, _ := strconv.Atoi(l[LabelSYNFlood]) // written by labels: always a number
	return pointSpec{
		mode:  lbnet.Mode{LB: l[LabelLBMode], Transport: l[LabelTransport], Firewall: l[LabelFirewall] == "on", IPv6: l[LabelIPFamily] == "ipv6"},
		split: l[LabelLBCPU] == CPUSplit, flood: flood,
	}
}

// Cells implements scenario.Celler.
func (s *Scenario) Cells(scenario.Point) []scenario.Cell {
	return []scenario.Cell{
		{Test: engine.HTTP, Flows: HTTPClients, Path: PathNorthSouth},
		{Test: engine.TCPStream, Flows: 1, Path: PathNorthSouth},
		{Test: engine.TCPRR, Flows: 1, Path: PathNorthSouth},
	}
}

// targetArgs are the client's arguments of a cell: the VIP's HTTP port,
// or its service-mode port.
func targetArgs(c scenario.Cell, vip netip.Addr) ([]string, error) {
	switch c.Test {
	case engine.HTTP:
		return []string{"--url", fmt.Sprintf("http://%s/", netip.AddrPortFrom(vip, HTTPPort))}, nil
	case engine.TCPStream, engine.TCPRR, engine.TCPCRR:
		return []string{"--service", netip.AddrPortFrom(vip, RRPort).String()}, nil
	}
	return nil, fmt.Errorf("l4lb: no target for test %s", c.Test)
}

// Config describes the scenario for the runs' config.
func (s *Scenario) Config() map[string]string {
	var ms []string
	for _, m := range s.modes {
		ms = append(ms, m.String())
	}
	return map[string]string{
		"lb_modes":          strings.Join(ms, ","),
		"lb_vip":            lbnet.VIP.String(),
		"scenario_cells":    fmt.Sprintf("per mode: http ×%d clients keep-alive off (VIP:%d), tcp_stream ×1 and tcp_rr ×1 (service mode, VIP:%d), from the external client", HTTPClients, HTTPPort, RRPort),
		"lb_refused_client": lbnet.ClientFWIP.String() + " connects to the VIP during every cell (16 attempts/s, 250 ms each), firewall off or on",
		"lb_cpu":            strings.Join(s.cpus, ","),
		"lb_syn_flood":      fmt.Sprintf("%d SYN/s from %s to VIP:%d during every cell of each firewall-on mode's flooded point (raw socket, random source ports; 0: none)", s.o.SYNFlood, lbnet.ClientFWIP, lbnet.Port),
		"node_cpu_method":   "BPF accounting of receive processing per network namespace (internal/bpf/nscpu: a node's own namespace plus its pods'), plus the CPU time of the processes in its pods; over the client's whole run (warm-up included)",
	}
}
